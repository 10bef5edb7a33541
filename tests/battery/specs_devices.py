"""The battery's specs for ``attnlib.devices``."""

from __future__ import annotations

import importlib

from .core import Spec

MODULE = "devices"


def specs():
    D = importlib.import_module("attnlib.devices")
    return {
        "devices.device_or_cpu": Spec(
            D.device_or_cpu,
            lambda: dict(device="cpu"),
            {"device": "choice"},
            optional=("device",),
        ),
    }
