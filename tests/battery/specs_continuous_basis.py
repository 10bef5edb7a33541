"""The battery's specs for ``attnlib.continuous.basis``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    Spec,
    _rand,
    _randn,
    _rbf1,
)

MODULE = "continuous.basis"


def specs():
    B = importlib.import_module("attnlib.continuous.basis")

    return {
        "continuous.basis.GaussianRBF": Spec(
            lambda mu, sigma2, t: B.GaussianRBF(mu, sigma2)(t),
            lambda: dict(mu=torch.linspace(0, 1, 5), sigma2=0.05, t=_rand(7)),
            {"mu": "array", "sigma2": "positive", "t": "array"},
            allow={"t": ("scalar",)},
            extra=[
                (
                    "mu 3 columns",
                    lambda a: a | dict(mu=torch.ones(4, 3)),
                    INVALID,
                    "mu",
                ),
                (
                    "sigma2 wrong length",
                    lambda a: a | dict(sigma2=torch.ones(3)),
                    INVALID,
                    "sigma2",
                ),
            ],
        ),
        "continuous.basis.GaussianRBF.linspace": Spec(
            lambda n, sigma, low: B.GaussianRBF.linspace(n, (sigma, 0.5), low, 1.0)(
                _rand(7)
            ),
            lambda: dict(n=6, sigma=0.1, low=0.0),
            {"n": "int", "sigma": "positive", "low": "real"},
            allow={"low": ("1e30",)},
            extra=[
                ("low above high", lambda a: a | dict(low=2.0), INVALID, "low"),
            ],
        ),
        "continuous.basis.GaussianRBF.grid": Spec(
            lambda n_side, sigma2, low: B.GaussianRBF.grid(n_side, sigma2, low, 1.0)(
                _rand(7, 2)
            ),
            lambda: dict(n_side=3, sigma2=0.01, low=0.0),
            {"n_side": "int", "sigma2": "positive", "low": "real"},
            allow={"low": ("1e30",)},
        ),
        "continuous.basis.ridge_value_coefficients": Spec(
            B.ridge_value_coefficients,
            lambda: dict(
                H=_randn(2, 8, 3),
                positions=torch.linspace(0, 1, 8),
                basis=_rbf1(),
                lam=1e-3,
            ),
            {"H": "array", "positions": "array", "basis": "basis", "lam": "positive"},
            group=("H", "positions"),
        ),
    }
