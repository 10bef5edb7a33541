"""The battery's specs for ``attnlib.mux.experiments.scores``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    Spec,
    _model_task_cases,
)

MODULE = "mux.experiments.scores"


def _finite(accuracy):
    # NaN marks a distance at which no (sequence, position) pair lies (documented).
    return lambda model, task: (lambda a: a[~np.isnan(a)])(accuracy(model, task))


def specs():
    S = importlib.import_module("attnlib.mux.experiments.scores")
    R = importlib.import_module("attnlib.mux.experiments.routing")
    M = importlib.import_module("attnlib.mux")

    routing = lambda: dict(  # noqa: E731
        model=M.ConvRouter(4, 3, kernel_size=3),
        task=M.routing_task(4, length=6, n_values=3),
    )
    pointer = lambda: dict(  # noqa: E731
        model=M.AttentionRouter(2 * 5 + 3, 3, 4),
        task=R.pointer_task(3, length=5, n_values=3),
    )
    return {
        "mux.experiments.scores.routing_loss": Spec(
            S.routing_loss, routing, {}, extra=_model_task_cases()
        ),
        "mux.experiments.scores.accuracy_by_distance": Spec(
            _finite(S.accuracy_by_distance), routing, {}, extra=_model_task_cases()
        ),
        "mux.experiments.scores.pointer_loss": Spec(
            S.pointer_loss, pointer, {}, extra=_model_task_cases()
        ),
        "mux.experiments.scores.accuracy_by_offset": Spec(
            _finite(S.accuracy_by_offset), pointer, {}, extra=_model_task_cases()
        ),
    }
