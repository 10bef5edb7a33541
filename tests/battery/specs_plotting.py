"""The battery's specs for ``attnlib.plotting``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    VALID,
    Spec,
    _probs,
    _rand,
)

MODULE = "plotting"


def specs():
    P = importlib.import_module("attnlib.plotting")

    return {
        "plotting.use_book_style": Spec(P.use_book_style, dict, {}),
        "plotting.attention_heatmap": Spec(
            lambda weights, title: P.attention_heatmap(weights, title=title) and None,
            lambda: dict(weights=_probs(), title="w"),
            {"weights": "array"},
        ),
        "plotting.image_grid": Spec(
            lambda images, ncols, size: (
                P.image_grid(images, ncols=ncols, size=size) and None
            ),
            lambda: dict(
                images=[_rand(4, 5), _rand(4, 5, seed=1)], ncols=None, size=2.0
            ),
            {"ncols": "int", "size": "positive"},
            optional=("ncols",),
            extra=[
                ("no images", lambda a: a | dict(images=[]), INVALID, "images"),
                (
                    "a 1-D image",
                    lambda a: a | dict(images=[np.ones(4)]),
                    INVALID,
                    "images",
                ),
                (
                    "titles too few",
                    lambda a: dict(images=a["images"], ncols=None, size=2.0),
                    VALID,
                    "titles",
                ),
            ],
        ),
    }
