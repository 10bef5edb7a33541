"""The battery's specs for ``attnlib.mux.experiments.routing``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
)

MODULE = "mux.experiments.routing"


def specs():
    R = importlib.import_module("attnlib.mux.experiments.routing")
    return {
        "mux.experiments.routing.pointer_task": Spec(
            R.pointer_task,
            lambda: dict(n=3, length=5, n_values=3, n_labels=None, seed=0),
            {
                "n": "int",
                "length": "int",
                "n_values": "int",
                "n_labels": "int",
                "seed": "int0",
            },
            optional=("n_labels",),
            extra=[
                (
                    "n_labels < length",
                    lambda a: a | dict(n_labels=3),
                    INVALID,
                    "n_labels",
                )
            ],
        ),
        "mux.experiments.routing.layers_to_see_everything": Spec(
            R.layers_to_see_everything,
            lambda: dict(length=10, kernel_size=3),
            {"length": "int", "kernel_size": "int"},
            extra=[
                (
                    "even kernel",
                    lambda a: a | dict(kernel_size=4),
                    INVALID,
                    "kernel_size",
                )
            ],
        ),
        "mux.experiments.routing.dirichlet_laplacian": Spec(
            R.dirichlet_laplacian, lambda: dict(n=5), {"n": "int"}
        ),
        "mux.experiments.routing.green_function": Spec(
            R.green_function, lambda: dict(n=5), {"n": "int"}
        ),
        "mux.experiments.routing.best_convolution": Spec(
            R.best_convolution,
            lambda: dict(target=R.green_function(6), width=3),
            {"target": "array", "width": "int"},
            extra=[("even width", lambda a: a | dict(width=2), INVALID, "width")],
        ),
        "mux.experiments.routing.fit_linear_stack": Spec(
            lambda target, depth, kernel_size, max_iter: R.fit_linear_stack(
                target, depth, kernel_size, seeds=(0,), max_iter=max_iter
            ),
            lambda: dict(
                target=R.green_function(6), depth=2, kernel_size=3, max_iter=5
            ),
            {
                "target": "array",
                "depth": "int",
                "kernel_size": "int",
                "max_iter": "int",
            },
        ),
    }
