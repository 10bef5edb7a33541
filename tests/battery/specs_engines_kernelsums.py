"""The battery's specs for ``attnlib.engines.kernelsums``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
    _randn,
)

MODULE = "engines.kernelsums"


def specs():
    Ks = importlib.import_module("attnlib.engines.kernelsums")

    return {
        "engines.kernelsums.nadaraya_watson_sums": Spec(
            Ks.nadaraya_watson_sums,
            lambda: dict(
                x_query=_randn(4, 2).double().numpy(),
                x_train=_randn(6, 2, seed=1).double().numpy(),
                y_train=_randn(6, 1, seed=2).double().numpy(),
                bandwidth=1.0,
                threads=1,
            ),
            {
                "x_query": "array",
                "x_train": "array",
                "y_train": "array",
                "bandwidth": "positive",
                "threads": "int",
            },
            group=("x_query", "x_train", "y_train"),
        ),
    }
