"""The battery's specs for ``attnlib.data``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
)

MODULE = "data"


def specs():
    Dt = importlib.import_module("attnlib.data")

    return {
        "data.shuffled_translation": Spec(
            Dt.shuffled_translation,
            lambda: dict(n_pairs=3, length=4, vocab_size=10, dim=5, noise=0.1, seed=0),
            {
                "n_pairs": "int",
                "length": "int",
                "vocab_size": "int",
                "dim": "int",
                "noise": "nonneg",
                "seed": "int0",
            },
            extra=[
                (
                    "vocab smaller than length",
                    lambda a: a | dict(vocab_size=3),
                    INVALID,
                    "vocab_size",
                )
            ],
        ),
        "data.captioned_images": Spec(
            Dt.captioned_images,
            lambda: dict(n=2, n_objects=2, size=32, feature_dim=6, noise=0.3, seed=0),
            {
                "n": "int",
                "n_objects": "int",
                "size": "int",
                "feature_dim": "int",
                "noise": "nonneg",
                "seed": "int0",
            },
            extra=[
                (
                    "too many objects",
                    lambda a: a | dict(n_objects=9),
                    INVALID,
                    "n_objects",
                ),
                ("image too small", lambda a: a | dict(size=4), INVALID, "size"),
            ],
        ),
        "data.union_of_subspaces": Spec(
            Dt.union_of_subspaces,
            lambda: dict(
                n_subspaces=2, dim=2, ambient_dim=4, n_per_subspace=5, noise=0.0, seed=0
            ),
            {
                "n_subspaces": "int",
                "dim": "int",
                "ambient_dim": "int",
                "n_per_subspace": "int",
                "noise": "nonneg",
                "seed": "int0",
            },
            extra=[
                ("dim above ambient_dim", lambda a: a | dict(dim=5), INVALID, "dim")
            ],
        ),
    }
