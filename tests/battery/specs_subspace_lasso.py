"""The battery's specs for ``attnlib.subspace.lasso``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
    _randn,
    _subspace_data,
)

MODULE = "subspace.lasso"


def specs():
    La = importlib.import_module("attnlib.subspace.lasso")

    return {
        "subspace.lasso.soft_threshold": Spec(
            La.soft_threshold,
            lambda: dict(x=_randn(3, 4), threshold=0.5),
            {"x": "array", "threshold": "nonneg"},
            allow={"x": ("scalar",)},
        ),
        "subspace.lasso.ssc_rows": Spec(
            lambda X, lam, solver, max_iter, tol: La.ssc_rows(
                X, lam, solver, max_iter=max_iter, tol=tol
            ),
            lambda: dict(
                X=_subspace_data()[0],
                lam=0.05,
                solver="fista",
                max_iter=100,
                tol=1e-6,
            ),
            {
                "X": "array",
                "lam": "positive",
                "solver": "choice",
                "max_iter": "int",
                "tol": "positive",
            },
        ),
        "subspace.lasso.lasso_codes": Spec(
            La.lasso_codes,
            lambda: dict(
                Y=_randn(3, 4).double().numpy(),
                K=_randn(5, 4, seed=1).double().numpy(),
                lam=0.1,
                max_steps=50,
            ),
            {"Y": "array", "K": "array", "lam": "positive", "max_steps": "int"},
            group=("Y", "K"),
        ),
        "subspace.lasso.lam_column": Spec(
            La.lam_column,
            lambda: dict(lam=0.1, n=4),
            {"lam": "positive"},
            extra=[
                ("wrong length", lambda a: a | dict(lam=[0.1, 0.2]), INVALID, "lam"),
                (
                    "a zero",
                    lambda a: a | dict(lam=[0.1, 0.0, 0.1, 0.1]),
                    INVALID,
                    "lam",
                ),
            ],
        ),
    }
