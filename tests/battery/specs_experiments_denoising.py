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
        # One step per model, one small CNN: the arguments meet check_int and
        # check_positive before anything trains.
        "experiments.denoising.baseline_run": Spec(
            Dn.baseline_run,
            lambda: dict(
                seed=0,
                n_steps=1,
                cnn_steps=1,
                widths=(2,),
                heads=(1,),
                lr=0.005,
                noise=0.1,
            ),
            {
                "seed": "int0",
                "n_steps": "int",
                "cnn_steps": "int",
                "lr": "positive",
                "noise": "positive",
            },
            optional=("cnn_steps",),
            # noise 1e-30: the noisy crop equals the clean one, so exact NLM's PSNR is
            # +inf, the correct answer.
            overflow={"noise": ("1e-30",)},
        ),
        # No argument: the baseline call checks that the five images load, grey.
        "experiments.denoising.training_images": Spec(
            Dn.training_images, lambda: {}, {}
        ),
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
