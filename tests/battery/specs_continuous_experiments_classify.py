"""The battery's specs for ``attnlib.continuous.experiments.classify``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    Spec,
    _randn,
)

MODULE = "continuous.experiments.classify"


class _Logits(torch.nn.Module):
    """A linear classifier returning its logits first, as the chapters' models do."""

    def __init__(self, n_in, n_classes):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_classes)

    def forward(self, x):
        return (self.linear(x),)


def specs():
    Cl = importlib.import_module("attnlib.continuous.experiments.classify")

    data = lambda: dict(  # noqa: E731
        model=_Logits(3, 2),
        inputs=_randn(6, 3),
        labels=torch.tensor([0, 1, 0, 1, 1, 0]),
    )
    labels = [
        (
            "labels float",
            lambda a: a | dict(labels=a["labels"].float()),
            INVALID,
            "labels",
        ),
        (
            "labels too few",
            lambda a: a | dict(labels=a["labels"][:-1]),
            INVALID,
            "labels",
        ),
        (
            "labels out of range",
            lambda a: a | dict(labels=a["labels"] * 5),
            INVALID,
            "labels",
        ),
        ("model a string", lambda a: a | dict(model="abc"), INVALID, "model"),
    ]
    return {
        "continuous.experiments.classify.accuracy": Spec(
            lambda model, inputs, labels, batch: Cl.accuracy(
                model, inputs, labels, batch
            ),
            lambda: data() | dict(batch=4),
            {"inputs": "array", "batch": "int"},
            group=("inputs", "labels"),
            extra=labels,
        ),
        "continuous.experiments.classify.fit_classifier": Spec(
            lambda model, inputs, labels, n_steps, batch, lr: Cl.fit_classifier(
                model,
                inputs,
                labels,
                n_steps=n_steps,
                batch=batch,
                lr=lr,
                progress=False,
            ),
            lambda: data() | dict(n_steps=2, batch=4, lr=0.01),
            {"inputs": "array", "n_steps": "int", "batch": "int", "lr": "positive"},
            group=("inputs", "labels"),
            extra=labels,
        ),
    }
