"""The battery's specs for ``attnlib.continuous.experiments.digits``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
)

MODULE = "continuous.experiments.digits"


def specs():
    Dg = importlib.import_module("attnlib.continuous.experiments.digits")

    return {
        "continuous.experiments.digits.cluttered_digits": Spec(
            Dg.cluttered_digits,
            lambda: dict(n=2, size=16, n_clutter=2, noise=0.1, seed=0),
            {
                "n": "int",
                "size": "int",
                "n_clutter": "int0",
                "noise": "nonneg",
                "seed": "int0",
            },
        ),
        "continuous.experiments.digits.DigitClassifier": Spec(
            lambda kind, alpha, n_side, channels, images: Dg.DigitClassifier(
                kind, alpha=alpha, n_side=n_side, channels=channels
            )(images),
            lambda: dict(
                kind="continuous",
                alpha=1,
                n_side=3,
                channels=4,
                images=Dg.cluttered_digits(2, 16).images,
            ),
            {
                "kind": "choice",
                "alpha": "alpha12",
                "n_side": "int",
                "channels": "int",
                "images": "array",
            },
        ),
    }
