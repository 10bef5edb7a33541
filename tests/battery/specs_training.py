"""The battery's specs for ``attnlib.training``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    Spec,
    _randn,
)

MODULE = "training"


def _tiny_training(n_steps, lr, clip_grad_norm, weight_decay, seed=None):
    T = importlib.import_module("attnlib.training")

    model = torch.nn.Linear(2, 1)
    X, y = _randn(16, 2), _randn(16, 1, seed=1)
    return T.train(
        model,
        lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
        [(X, y)],
        n_steps=n_steps,
        lr=lr,
        clip_grad_norm=clip_grad_norm,
        weight_decay=weight_decay,
        seed=seed,
        progress=False,
    )


def specs():
    T = importlib.import_module("attnlib.training")

    return {
        "training.train": Spec(
            _tiny_training,
            lambda: dict(
                n_steps=3, lr=0.01, clip_grad_norm=1.0, weight_decay=0.0, seed=0
            ),
            {
                "seed": "seed",
                "n_steps": "int",
                "lr": "positive",
                "clip_grad_norm": "positive",
                "weight_decay": "nonneg",
            },
            optional=("clip_grad_norm", "seed"),
        ),
        "training.to_device": Spec(
            T.to_device,
            lambda: dict(batch=(_randn(2), {"a": _randn(3)}), device="cpu"),
            {"device": "choice"},
            optional=("device",),
        ),
    }
