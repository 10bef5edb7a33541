"""The battery's specs for ``attnlib.utils``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    ARRAY,
    INVALID,
    Spec,
    _randn,
)

MODULE = "utils"


def specs():
    U = importlib.import_module("attnlib.utils")

    value = lambda kind, v: Spec(  # noqa: E731
        getattr(U, kind),
        lambda: dict(value=v, name="value"),
        {"value": {"check_int": "int"}.get(kind, "positive")},
    )
    return {
        "utils.set_seed": Spec(U.set_seed, lambda: dict(seed=0), {"seed": "int0"}),
        "utils.seeds": Spec(U.seeds, lambda: dict(base=5), {"base": "int"}),
        "utils.seed_offset": Spec(U.seed_offset, lambda: dict(), {}),
        "utils.get_device": Spec(
            U.get_device,
            lambda: dict(prefer="cpu"),
            {"prefer": "choice"},
            optional=("prefer",),
        ),
        "utils.device_or_cpu": Spec(
            U.device_or_cpu,
            lambda: dict(device="cpu"),
            {"device": "choice"},
            optional=("device",),
        ),
        "utils.as_tensor": Spec(
            U.as_tensor, lambda: dict(x=_randn(3, 2), name="x"), {"x": "array"}
        ),
        "utils.as_float_array": Spec(
            U.as_float_array,
            lambda: dict(X=_randn(3, 2).numpy(), name="X"),
            {"X": "array"},
        ),
        "utils.check_positive": value("check_positive", 1.0),
        "utils.check_in_range": Spec(
            U.check_in_range,
            lambda: dict(value=0.5, name="value", low=0.0, high=1.0),
            {"value": "real"},
        ),
        "utils.check_int": value("check_int", 3),
        # Its argument is the library's own 0-dim bool (already checked), not user data.
        "utils.check_on_device": Spec(
            U.check_on_device,
            lambda: dict(bad=torch.tensor(False), message="x is bad"),
            {},
        ),
        "utils.check_real": Spec(
            U.check_real, lambda: dict(value=-0.5, name="value"), {"value": "real"}
        ),
        "utils.check_numeric": Spec(
            U.check_numeric,
            lambda: dict(x=_randn(3), name="x"),
            {"x": "array"},
            # check_numeric refuses booleans, strings and complex values only: the
            # rest passes through to the checks that come after it.
            allow={
                "x": tuple(
                    label
                    for label, *_ in ARRAY
                    if label not in ("bool", "numeric strings", "complex")
                )
            },
        ),
        "utils.check_type": Spec(
            importlib.import_module("attnlib.utils.validation").check_type,
            lambda: dict(value=3, name="value", kind=int, what="an int"),
            {},
            extra=[("a string", lambda a: a | dict(value="3"), INVALID, "value")],
        ),
    }
