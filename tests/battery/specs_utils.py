"""The battery's specs for ``attnlib.utils``."""

from __future__ import annotations

import importlib
import os

import torch

from .core import (
    ARRAY,
    INVALID,
    VALID,
    Spec,
    _randn,
)

MODULE = "utils"


def _with_offset(fn):
    """``fn`` called with ``ATTNLIB_SEED_OFFSET`` set to the case's value, then the
    variable as it was."""

    def call(ATTNLIB_SEED_OFFSET, **kwargs):  # noqa: N803 - the variable's name
        before = os.environ.get("ATTNLIB_SEED_OFFSET")
        os.environ["ATTNLIB_SEED_OFFSET"] = ATTNLIB_SEED_OFFSET
        try:
            return fn(**kwargs)
        finally:
            if before is None:
                del os.environ["ATTNLIB_SEED_OFFSET"]
            else:
                os.environ["ATTNLIB_SEED_OFFSET"] = before

    return call


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
        # the offset's input is the environment variable: each value set, then unset
        "utils.seed_offset": Spec(
            _with_offset(U.seed_offset),
            lambda: dict(ATTNLIB_SEED_OFFSET="7"),
            {},
            extra=[
                (
                    f"offset {raw!r}",
                    lambda a, raw=raw: a | dict(ATTNLIB_SEED_OFFSET=raw),
                    expectation,
                    "ATTNLIB_SEED_OFFSET",
                )  # fmt: skip
                for raw, expectation in [
                    ("", VALID),
                    (" 12 ", VALID),
                    ("1000000", VALID),
                    ("1.5", INVALID),
                    ("abc", INVALID),
                    ("-1", INVALID),
                    ("1000001", INVALID),
                    ("1e3", INVALID),
                    ("True", INVALID),
                ]  # fmt: skip
            ],
        ),
        "utils.seeds with an offset": Spec(
            _with_offset(U.seeds),
            lambda: dict(ATTNLIB_SEED_OFFSET="1000000", base=5),
            {"base": "int"},
            extra=[
                (
                    "offset 'x'",
                    lambda a: a | dict(ATTNLIB_SEED_OFFSET="x"),
                    INVALID,
                    "ATTNLIB_SEED_OFFSET",
                )
            ],
        ),
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
