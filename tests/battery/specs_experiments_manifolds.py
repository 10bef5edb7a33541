"""The battery's specs for ``attnlib.experiments.manifolds``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    Spec,
    _randn,
)

MODULE = "experiments.manifolds"


def specs():
    Mf = importlib.import_module("attnlib.experiments.manifolds")

    return {
        "experiments.manifolds.knn_softmax_weights": Spec(
            Mf.knn_softmax_weights,
            lambda: dict(X=_randn(12, 3).double().numpy(), n_neighbors=4),
            {"X": "array", "n_neighbors": "int"},
        ),
        "experiments.manifolds.closed_groups": Spec(
            Mf.closed_groups,
            lambda: dict(mask=np.kron(np.eye(2), np.ones((3, 3))) > 0),
            {},
            extra=[
                (
                    "not square",
                    lambda a: a | dict(mask=np.ones((2, 3))),
                    INVALID,
                    "mask",
                ),
                ("None", lambda a: a | dict(mask=None), INVALID, "mask"),
                ("a string", lambda a: a | dict(mask="ab"), INVALID, "mask"),
            ],
        ),
    }
