"""The battery's specs for ``attnlib.lle``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
    _randn,
)

MODULE = "lle"


def specs():
    L = importlib.import_module("attnlib.lle")

    X = lambda: _randn(30, 3).double().numpy()  # noqa: E731
    W = lambda: L.lle_weights(X(), 5, dense=True).weights  # noqa: E731
    return {
        "lle.barycenter_weights": Spec(
            L.barycenter_weights,
            lambda: dict(
                queries=_randn(5, 3), neighbors=_randn(5, 4, 3, seed=1), reg=1e-3
            ),
            {"queries": "array", "neighbors": "array", "reg": "nonneg"},
            group=("queries", "neighbors"),
            extra=[
                (
                    "neighbours of other rows",
                    lambda a: a | dict(neighbors=a["neighbors"][:-1]),
                    INVALID,
                    "neighbors",
                )
            ],
        ),
        "lle.lle_weights": Spec(
            L.lle_weights,
            lambda: dict(
                X=X(),
                n_neighbors=5,
                reg=1e-3,
                keys=_randn(12, 3, seed=7).double().numpy(),
            ),
            {"X": "array", "n_neighbors": "int", "reg": "nonneg", "keys": "array"},
            optional=("keys",),
        ),
        "lle.lle_attention": Spec(
            L.lle_attention,
            lambda: dict(X=X(), n_neighbors=5, reg=1e-3),
            {"X": "array", "n_neighbors": "int", "reg": "nonneg"},
        ),
        "lle.lle_embedding": Spec(
            L.lle_embedding,
            lambda: dict(
                W=W(), n_components=2, eigen_solver="dense", tol=1e-6, max_iter=None
            ),
            {
                "W": "array",
                "n_components": "int",
                "eigen_solver": "choice",
                "tol": "nonneg",
                "max_iter": "int",
            },
            optional=("max_iter",),
            extra=[
                (
                    "rows summing to two",
                    lambda a: a | dict(W=2 * a["W"]),
                    INVALID,
                    "W",
                )
            ],
        ),
        "lle.LocallyLinearEmbedding": Spec(
            lambda X, X_new, n_neighbors, n_components, reg: (
                L.LocallyLinearEmbedding(n_neighbors, n_components, reg=reg)
                .fit(X)
                .transform(X_new)
            ),
            lambda: dict(
                X=X(),
                X_new=_randn(4, 3, seed=5).double().numpy(),
                n_neighbors=5,
                n_components=2,
                reg=1e-3,
            ),
            {
                "X": "array",
                "X_new": "array",
                "n_neighbors": "int",
                "n_components": "int",
                "reg": "nonneg",
            },
            sklearn=True,
        ),
    }
