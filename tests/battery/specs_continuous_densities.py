"""The battery's specs for ``attnlib.continuous.densities``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    Spec,
    _rand,
    _spd,
)

MODULE = "continuous.densities"


def specs():
    C = importlib.import_module("attnlib.continuous.densities")

    t = lambda: torch.linspace(-1, 1, 7)  # noqa: E731
    pdf = lambda scale: {"t": "array", "mu": "real", scale: "positive"}  # noqa: E731
    point = {"t": ("scalar",)}  # a density at one point is a density
    return {
        "continuous.densities.gaussian_pdf": Spec(
            C.gaussian_pdf,
            lambda: dict(t=t(), mu=0.2, sigma2=0.3),
            pdf("sigma2"),
            allow=point,
        ),
        "continuous.densities.truncated_parabola_pdf": Spec(
            C.truncated_parabola_pdf,
            lambda: dict(t=t(), mu=0.2, sigma2=0.3),
            pdf("sigma2"),
            allow=point,
        ),
        "continuous.densities.triangular_pdf": Spec(
            C.triangular_pdf,
            lambda: dict(t=t(), mu=0.2, b=0.3),
            pdf("b"),
            allow=point,
        ),
        "continuous.densities.location_scale_pdf": Spec(
            C.location_scale_pdf,
            lambda: dict(t=t(), mu=0.2, sigma=0.5, g=lambda u: u**3 / 6, dg=None),
            {"t": "array", "mu": "real", "sigma": "positive", "g": "callable"},
            optional=("dg",),
            allow=point,
            extra=[
                ("dg a number", lambda a: a | dict(dg=3.0), INVALID, "dg"),
                ("g concave", lambda a: a | dict(g=lambda u: -u * u), INVALID, "g"),
            ],
        ),
        "continuous.densities.truncated_paraboloid_pdf": Spec(
            C.truncated_paraboloid_pdf,
            lambda: dict(t=_rand(5, 2), mu=_rand(2, seed=1), Sigma=_spd(1)[0]),
            {"t": "array", "mu": "array", "Sigma": "array"},
            group=("t", "mu", "Sigma"),
            extra=[
                (
                    "Sigma not PD",
                    lambda a: a | dict(Sigma=-a["Sigma"]),
                    INVALID,
                    "Sigma",
                ),
                ("mu 3-D", lambda a: a | dict(mu=torch.zeros(3)), INVALID, "mu"),
            ],
        ),
        "continuous.densities.truncated_paraboloid_lambda": Spec(
            C.truncated_paraboloid_lambda,
            lambda: dict(Sigma=_spd()),
            {"Sigma": "array"},
            extra=[
                (
                    "Sigma not square",
                    lambda a: a | dict(Sigma=torch.ones(3, 2, 3)),
                    INVALID,
                    "Sigma",
                )
            ],
        ),
        "continuous.densities.truncated_parabola_radius": Spec(
            C.truncated_parabola_radius,
            lambda: dict(sigma2=_rand(4) + 0.1),
            {"sigma2": "array"},
            allow={"sigma2": ("scalar",)},
            extra=[
                ("negative", lambda a: a | dict(sigma2=-a["sigma2"]), INVALID, "sigma2")
            ],
        ),
        "continuous.densities.support_ellipse": Spec(
            C.support_ellipse,
            lambda: dict(mu=_rand(2).numpy(), Sigma=_spd(1)[0].numpy(), scale=None),
            {"mu": "array", "Sigma": "array", "scale": "positive"},
            optional=("scale",),
            group=("mu", "Sigma"),
        ),
    }
