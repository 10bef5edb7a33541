"""The battery's specs for ``attnlib.kernel_regression``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    VALID,
    Spec,
    _rand,
    _randn,
)

MODULE = "kernel_regression"


def _nw_data():
    return dict(
        x_query=_randn(6, 2),
        x_train=_randn(8, 2, seed=1),
        y_train=_randn(8, seed=2),
        bandwidth=1.0,
        kernel="gaussian",
    )


def specs():
    K = importlib.import_module("attnlib.kernel_regression")

    nw_kinds = {
        "x_query": "array",
        "x_train": "array",
        "y_train": "array",
        "bandwidth": "positive",
        "kernel": "choice",
    }
    rows = [
        (
            "y rows differ",
            lambda a: a | dict(y_train=a["y_train"][:-1]),
            INVALID,
            "y_train",
        )
    ]
    nw_group = ("x_query", "x_train", "y_train")
    loo = lambda: {k: v for k, v in _nw_data().items() if k != "x_query"}  # noqa: E731
    est = lambda: dict(
        X=_randn(20, 2).numpy(),
        y=_randn(20, seed=2).numpy(),
        X_new=_randn(5, 2, seed=3).numpy(),
    )  # noqa: E731
    est_kinds = {"X": "array", "y": "array", "X_new": "array"}
    return {
        "kernel_regression.nadaraya_watson": Spec(
            K.nadaraya_watson, _nw_data, nw_kinds, extra=rows, group=nw_group
        ),
        "kernel_regression.loo_predictions": Spec(
            K.loo_predictions,
            loo,
            {k: v for k, v in nw_kinds.items() if k != "x_query"},
            extra=rows,
            group=nw_group,
        ),
        "kernel_regression.NadarayaWatson": Spec(
            lambda X, y, X_new, bandwidth, kernel, sample_weight: (
                K.NadarayaWatson(kernel, bandwidth)
                .fit(X, y, sample_weight=sample_weight)
                .predict(X_new)
            ),
            lambda: (
                est()
                | dict(
                    bandwidth=0.5,
                    kernel="gaussian",
                    sample_weight=(_rand(20) + 0.5).numpy(),
                )
            ),
            est_kinds
            | {"bandwidth": "positive", "kernel": "choice", "sample_weight": "array"},
            optional=("sample_weight",),
            # weights are scale-free (a weighted average): any positive scale is valid
            # (a scalar weight is scikit-learn's convention: every point alike)
            allow={"sample_weight": ("empty", "scalar")},
            extra=[
                (
                    "y rows differ",
                    lambda a: a | dict(y=a["y"][:-1]),
                    INVALID,
                    "samples",
                ),
                (
                    "sample_weight rows differ",
                    lambda a: a | dict(sample_weight=a["sample_weight"][:-1]),
                    INVALID,
                    "sample_weight",
                ),
                (
                    "sample_weight negative",
                    lambda a: a | dict(sample_weight=-a["sample_weight"]),
                    INVALID,
                    "sample_weight",
                ),
                (
                    "sample_weight all zero",
                    lambda a: a | dict(sample_weight=0 * a["sample_weight"]),
                    INVALID,
                    "sample_weight",
                ),
                *[
                    (
                        f"X float32 x{scale:g}",
                        lambda a, scale=scale: (
                            a
                            | dict(
                                X=(a["X"] * scale).astype("float32"),
                                X_new=(a["X_new"] * scale).astype("float32"),
                            )
                        ),
                        VALID,
                        "X",
                    )
                    for scale in (1e-30, 1e30)
                ],
                *[
                    (
                        f"sample_weight float32 equal {w:g}",
                        lambda a, w=w: (
                            a
                            | dict(
                                X=a["X"].astype("float32"),
                                X_new=a["X_new"].astype("float32"),
                                sample_weight=np.full(20, w, dtype="float32"),
                            )
                        ),
                        VALID,
                        "sample_weight",
                    )
                    for w in (1e-44, 3e38)
                ],
            ],
            sklearn=True,
        ),
        "kernel_regression.MetricNadarayaWatson": Spec(
            lambda X, y, X_new, n_steps, lr, batch_size, n_components: (
                K.MetricNadarayaWatson(
                    n_components, n_steps=n_steps, lr=lr, batch_size=batch_size
                )
                .fit(X, y)
                .predict(X_new)
            ),
            lambda: (
                est() | dict(n_steps=2, lr=0.02, batch_size=None, n_components=None)
            ),
            est_kinds
            | {
                "n_steps": "int",
                "lr": "positive",
                "batch_size": "int",
                "n_components": "int",
            },
            optional=("batch_size", "n_components"),
            sklearn=True,
        ),
    }
