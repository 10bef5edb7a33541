"""The battery's specs for ``attnlib.engines.fastexp``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
    _rand,
)

MODULE = "engines.fastexp"


def specs():
    Fe = importlib.import_module("attnlib.engines.fastexp")

    return {
        "engines.fastexp.exp_nonpositive": Spec(
            Fe.exp_nonpositive,
            lambda: dict(x=-_rand(8).double().numpy() * 5),
            {"x": "array"},
        ),
    }
