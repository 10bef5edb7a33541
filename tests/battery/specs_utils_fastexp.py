"""The battery's specs for ``attnlib.utils.fastexp``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
    _rand,
)

MODULE = "utils.fastexp"


def specs():
    Fe = importlib.import_module("attnlib.utils.fastexp")

    return {
        "utils.fastexp.exp_nonpositive": Spec(
            Fe.exp_nonpositive,
            lambda: dict(x=-_rand(8).double().numpy() * 5),
            {"x": "array"},
        ),
    }
