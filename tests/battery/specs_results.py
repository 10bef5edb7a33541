"""The battery's specs for ``attnlib.results``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
)

MODULE = "results"


def specs():
    Rs = importlib.import_module("attnlib.results")

    return {
        "results.load": Spec(Rs.load, lambda: dict(name="denoise"), {"name": "choice"}),
        "results.names": Spec(Rs.names, dict, {}),
    }
