"""The battery's specs for ``attnlib.subspace.ksubspaces``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
    _subspace_data,
)

MODULE = "subspace.ksubspaces"


def specs():
    K = importlib.import_module("attnlib.subspace.ksubspaces")

    return {
        "subspace.ksubspaces.k_subspaces": Spec(
            lambda X, labels, dim, max_iter: K.k_subspaces(
                X, labels, dim=dim, max_iter=max_iter
            ),
            lambda: dict(
                X=_subspace_data()[0], labels=_subspace_data()[1], dim=2, max_iter=5
            ),
            {"X": "array", "labels": "labels", "dim": "int", "max_iter": "int0"},
            optional=("dim",),
            group=("X", "labels"),
        ),
        "subspace.ksubspaces.subspace_dimension": Spec(
            K.subspace_dimension,
            lambda: dict(X=_subspace_data()[0], energy=0.95),
            {"X": "array", "energy": "positive"},
            allow={"energy": ("1e30",)},
        ),
    }
