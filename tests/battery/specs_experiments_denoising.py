"""The battery's specs for ``attnlib.experiments.denoising``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    Spec,
    _rand,
)

MODULE = "experiments.denoising"


def specs():
    Dn = importlib.import_module("attnlib.experiments.denoising")

    return {
        "experiments.denoising.SmallCNNDenoiser": Spec(
            lambda width, kernel_size, image: Dn.SmallCNNDenoiser(width, kernel_size)(
                image
            ),
            lambda: dict(width=3, kernel_size=3, image=_rand(6, 7)),
            {"width": "int", "kernel_size": "int", "image": "array"},
        ),
        "experiments.denoising.cnn_matching": Spec(
            Dn.cnn_matching,
            lambda: dict(n_params=200, kernel_size=3),
            {"n_params": "int", "kernel_size": "int"},
        ),
        "experiments.denoising.count_parameters": Spec(
            Dn.count_parameters,
            lambda: dict(model=torch.nn.Linear(2, 3)),
            {},
            extra=[
                ("model a string", lambda a: a | dict(model="ab"), INVALID, "model")
            ],
        ),
    }
