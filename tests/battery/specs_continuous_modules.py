"""The battery's specs for ``attnlib.continuous.modules``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    VALID,
    Spec,
    _randn,
    _rbf1,
    _rbf2,
)

MODULE = "continuous.modules"


def specs():
    M = importlib.import_module("attnlib.continuous.modules")

    def one(basis, in_features, alpha, lam, min_var, H, weights):
        model = M.ContinuousAttention1D(
            basis, in_features, alpha=alpha, lam=lam, min_var=min_var
        )
        return model(H, weights)

    def two(basis, in_features, alpha, lam, min_var, n_angles, H, weights):
        model = M.ContinuousAttention2D(
            basis,
            in_features,
            alpha=alpha,
            lam=lam,
            min_var=min_var,
            n_angles=n_angles,
        )
        return model(H, weights)

    kinds = {
        "basis": "basis",
        "in_features": "int",
        "alpha": "alpha12",
        "lam": "positive",
        "min_var": "positive",
        "H": "array",
    }
    combined = (
        lambda a: (
            a
            | dict(  # noqa: E731
                in_features=None,
                weights=torch.softmax(_randn(*a["H"].shape[:-1]), -1).flatten(1),
            )
        )
    )
    return {
        "continuous.modules.ContinuousAttention1D": Spec(
            one,
            lambda: dict(
                basis=_rbf1(),
                in_features=3,
                alpha=1,
                lam=1e-3,
                min_var=1e-4,
                H=_randn(2, 8, 3),
                weights=None,
            ),
            kinds,
            optional=("in_features",),
            group=("H", "weights", "in_features"),
            extra=[
                ("combined", combined, VALID, "weights"),
                (
                    "weights and in_features",
                    lambda a: combined(a) | dict(in_features=3),
                    INVALID,
                    "weights",
                ),
                (
                    "weights summing to two",
                    lambda a: combined(a) | dict(weights=2 * combined(a)["weights"]),
                    INVALID,
                    "weights",
                ),
                (
                    "negative weights",
                    lambda a: (
                        combined(a)
                        | dict(
                            weights=combined(a)["weights"]
                            * torch.tensor([-1.0, 1.0])[:, None]
                        )
                    ),
                    INVALID,
                    "weights",
                ),
            ],
        ),
        "continuous.modules.ContinuousAttention2D.grid_positions": Spec(
            M.ContinuousAttention2D.grid_positions,
            lambda: dict(height=3, width=4),
            {"height": "int", "width": "int"},
        ),
        "continuous.modules.ContinuousAttention2D": Spec(
            two,
            lambda: dict(
                basis=_rbf2(),
                in_features=3,
                alpha=2,
                lam=1e-3,
                min_var=1e-4,
                n_angles=16,
                H=_randn(2, 3, 4, 3),
                weights=None,
            ),
            kinds | {"n_angles": "int"},
            optional=("in_features",),
            group=("H", "weights", "in_features"),
            extra=[("combined", combined, VALID, "weights")],
        ),
    }
