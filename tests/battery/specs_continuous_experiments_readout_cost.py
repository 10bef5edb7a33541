"""The battery's specs for ``attnlib.continuous.experiments.readout_cost``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
)

MODULE = "continuous.experiments.readout_cost"


def specs():
    Rc = importlib.import_module("attnlib.continuous.experiments.readout_cost")

    return {
        "continuous.experiments.readout_cost.cpu_ms": Spec(
            Rc.cpu_ms,
            lambda: dict(fn=lambda: None, repeats=2),
            {"fn": "callable", "repeats": "int"},
        ),
    }
