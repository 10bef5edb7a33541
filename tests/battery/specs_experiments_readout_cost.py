"""The battery's specs for ``attnlib.experiments.readout_cost``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
)

MODULE = "experiments.readout_cost"


def specs():
    Rc = importlib.import_module("attnlib.experiments.readout_cost")

    return {
        "experiments.readout_cost.cpu_ms": Spec(
            Rc.cpu_ms,
            lambda: dict(fn=lambda: None, repeats=2),
            {"fn": "callable", "repeats": "int"},
        ),
    }
