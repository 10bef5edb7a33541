"""The battery's specs for ``attnlib.plotting``."""

from __future__ import annotations

import importlib

import matplotlib.pyplot as plt
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
            optional=("ncols", "size"),
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
        "plotting.heatmap_grid": Spec(
            lambda matrices, ncols, width: (
                P.heatmap_grid(matrices, ncols=ncols, width=width) and None
            ),
            lambda: dict(matrices=[_probs(), _probs()], ncols=None, width=4.0),
            {"ncols": "int", "width": "positive"},
            optional=("ncols",),
            extra=[
                ("no matrices", lambda a: a | dict(matrices=[]), INVALID, "matrices"),
            ],
        ),
        "plotting.frame_slider": Spec(
            lambda draw, values, label, dpi: (
                P.frame_slider(draw, values, label=label, dpi=dpi) and None
            ),
            lambda: dict(
                draw=lambda v: plt.figure(figsize=(1, 1)),
                values=[1, 2],
                label="T",
                dpi=20,
            ),
            {"draw": "callable", "dpi": "int"},
            extra=[
                ("one value", lambda a: a | dict(values=[1]), INVALID, "values"),
                ("empty label", lambda a: a | dict(label=" "), INVALID, "label"),
            ],
        ),
        # The drawn diagrams take no argument; Diagram is their Figure class.
        **{
            f"plotting.{name}": Spec(_drawn(getattr(P, name)), dict, {})
            for name in ["Diagram", *DIAGRAMS]
        },
        "plotting.smallest_text_px": Spec(
            lambda fig, column_px: P.smallest_text_px(fig, column_px) and None,
            lambda: dict(fig=P.qkv_lookup(), column_px=390.0),
            {"column_px": "positive"},
            extra=[("not a figure", lambda a: a | dict(fig="fig"), INVALID, "fig")],
        ),
        "plotting.block_shares": Spec(
            lambda C, groups: P.block_shares(C, groups),
            lambda: dict(C=_rand(4, 4), groups=np.array([0, 0, 1, 1])),
            {"C": "array", "groups": "array"},
            group=("C", "groups"),
            extra=[
                (
                    "unsorted",
                    lambda a: a | dict(groups=np.array([1, 0, 0, 1])),
                    INVALID,
                    "groups",
                ),
            ],
        ),
        "plotting.coefficient_maps": Spec(
            lambda maps, groups, floor: (
                P.coefficient_maps(maps, groups, floor=floor) and plt.close("all")
            ),
            lambda: dict(maps=[_rand(4, 4)], groups=np.array([0, 0, 1, 1]), floor=1e-3),
            {"floor": "positive"},
            extra=[("no maps", lambda a: a | dict(maps=[]), INVALID, "maps")],
        ),
        "plotting.table": Spec(
            lambda df, precision: P.table(df, precision=precision) and None,
            lambda: dict(df=_frame(), precision=3),
            {"precision": "int0"},
            extra=[("a list", lambda a: a | dict(df=[[1.0]]), INVALID, "df")],
        ),
    }


#: The diagrams of attnlib.plotting.diagrams, one per chapter.
DIAGRAMS = ["qkv_lookup", "kernel_bump", "patches_as_tokens", "neighbourhood_mask"]
DIAGRAMS += ["block_diagonal", "rotation_equivariance", "simplex_projection"]
DIAGRAMS += ["density_over_time", "multiplexer_switch"]


def _drawn(make):
    """A call of ``make()`` that returns nothing (the battery judges outputs)."""
    return lambda: make() and None


def _frame():
    import pandas as pd

    return pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
