"""The battery's specs for ``attnlib.lle.experiments``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    Spec,
    _randn,
)

MODULE = "lle.experiments"


def specs():
    Mf = importlib.import_module("attnlib.lle.experiments")

    return {
        # Chapter 04's data and experiment helpers, at their smallest sizes: the
        # scalar arguments are attacked (data arrays only as the baseline call).
        "lle.experiments.swiss_roll_sheets": Spec(
            Mf.swiss_roll_sheets,
            lambda: dict(n=20, random_state=0),
            {"n": "int", "random_state": "int0"},
        ),
        "lle.experiments.convex_weights": Spec(
            Mf.convex_weights,
            lambda: dict(
                queries=_randn(4, 3).double().numpy(),
                keys=_randn(8, 3, seed=1).double().numpy(),
                neighbors=np.tile(np.arange(4), (4, 1)),
            ),
            {},
            extra=[
                (
                    "neighbors of another length",
                    lambda a: a | dict(neighbors=np.tile(np.arange(4), (3, 1))),
                    INVALID,
                    "neighbors",
                )
            ],
        ),
        "lle.experiments.fill_in_blanks": Spec(
            Mf.fill_in_blanks,
            lambda: dict(seed=0, sheet="roll", n=60, n_held=10, n_neighbors=5),
            {
                "seed": "int0",
                "sheet": "choice",
                "n": "int",
                "n_held": "int",
                "n_neighbors": "int",
            },
        ),
        "lle.experiments.crossing_planes": Spec(
            Mf.crossing_planes,
            lambda: dict(seed=0, n_per_plane=10, n_neighbors=4, alpha=1e-2),
            {
                "seed": "int0",
                "n_per_plane": "int",
                "n_neighbors": "int",
                "alpha": "positive",
            },
        ),
        "lle.experiments.manifold_sample": Spec(
            Mf.manifold_sample,
            lambda: dict(name="S-curve", seed=0, n=30),
            {"name": "choice", "seed": "int0", "n": "int"},
        ),
        "lle.experiments.trust_scores": Spec(
            Mf.trust_scores,
            lambda: dict(data=Mf.manifold_sample("S-curve", 0, 60)[0], n_neighbors=6),
            {"n_neighbors": "int"},
        ),
        "lle.experiments.knn_softmax_weights": Spec(
            Mf.knn_softmax_weights,
            lambda: dict(X=_randn(12, 3).double().numpy(), n_neighbors=4),
            {"X": "array", "n_neighbors": "int"},
        ),
        "lle.experiments.closed_groups": Spec(
            Mf.closed_groups,
            lambda: dict(mask=np.kron(np.eye(2), np.ones((3, 3))) > 0),
            {},
            extra=[
                (
                    "not square",
                    lambda a: a | dict(mask=np.ones((2, 3))),
                    INVALID,
                    "mask",
                ),
                ("None", lambda a: a | dict(mask=None), INVALID, "mask"),
                ("a string", lambda a: a | dict(mask="ab"), INVALID, "mask"),
            ],
        ),
    }
