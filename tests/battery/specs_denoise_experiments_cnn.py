"""The battery's specs for ``attnlib.denoise.experiments.cnn``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    Spec,
    _rand,
)

MODULE = "denoise.experiments.cnn"


def specs():
    Dn = importlib.import_module("attnlib.denoise.experiments.cnn")

    return {
        # One step per model, one small CNN: the arguments meet check_int and
        # check_positive before anything trains.
        "denoise.experiments.cnn.baseline_run": Spec(
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
        "denoise.experiments.cnn.training_images": Spec(
            Dn.training_images, lambda: {}, {}
        ),
        "denoise.experiments.cnn.SmallCNNDenoiser": Spec(
            lambda width, kernel_size, image: Dn.SmallCNNDenoiser(width, kernel_size)(
                image
            ),
            lambda: dict(width=3, kernel_size=3, image=_rand(6, 7)),
            {"width": "int", "kernel_size": "int", "image": "array"},
        ),
        "denoise.experiments.cnn.cnn_matching": Spec(
            Dn.cnn_matching,
            lambda: dict(n_params=200, kernel_size=3),
            {"n_params": "int", "kernel_size": "int"},
        ),
        "denoise.experiments.cnn.count_parameters": Spec(
            Dn.count_parameters,
            lambda: dict(model=torch.nn.Linear(2, 3)),
            {},
            extra=[
                ("model a string", lambda a: a | dict(model="ab"), INVALID, "model")
            ],
        ),
    }
