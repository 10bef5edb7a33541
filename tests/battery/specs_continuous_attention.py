"""The battery's specs for ``attnlib.continuous.attention``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
    _rand,
    _rbf1,
    _rbf2,
    _spd,
)

MODULE = "continuous.attention"


def specs():
    A = importlib.import_module("attnlib.continuous.attention")

    one = lambda: dict(  # noqa: E731
        mu=_rand(4), sigma2=_rand(4, seed=1) * 0.1 + 0.01, basis=_rbf1(), alpha=2
    )
    two = lambda: dict(  # noqa: E731
        mu=_rand(3, 2), Sigma=_spd(), basis=_rbf2(), alpha=2, n_angles=16
    )
    k1 = {"mu": "array", "sigma2": "array", "basis": "basis", "alpha": "alpha12"}
    k2 = {
        "mu": "array",
        "Sigma": "array",
        "basis": "basis",
        "alpha": "alpha12",
        "n_angles": "int",
    }
    wrong_dim = [("basis 2-D", lambda a: a | dict(basis=_rbf2()), INVALID, "basis")]
    wrong_dim2 = [("basis 1-D", lambda a: a | dict(basis=_rbf1()), INVALID, "basis")]
    return {
        "continuous.attention.continuous_attention_1d": Spec(
            A.continuous_attention_1d,
            one,
            k1,
            group=("mu", "sigma2"),
            extra=wrong_dim,
        ),
        "continuous.attention.generalized_covariance_1d": Spec(
            A.generalized_covariance_1d,
            one,
            k1,
            group=("mu", "sigma2"),
            extra=wrong_dim,
        ),
        "continuous.attention.continuous_attention_2d": Spec(
            A.continuous_attention_2d,
            two,
            k2,
            group=("mu", "Sigma"),
            extra=wrong_dim2,
        ),
        "continuous.attention.generalized_covariance_2d": Spec(
            A.generalized_covariance_2d,
            two,
            k2,
            group=("mu", "Sigma"),
            extra=wrong_dim2,
        ),
    }
