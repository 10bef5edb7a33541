"""The battery's specs for ``attnlib.subspace.experiments``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    Spec,
    _randn,
)

MODULE = "subspace.experiments"


def specs():
    Se = importlib.import_module("attnlib.subspace.experiments")

    X = lambda: _randn(10, 4).double().numpy()  # noqa: E731
    qkv = lambda: dict(  # noqa: E731
        queries=_randn(2, 3, 4),
        keys=_randn(2, 5, 4, seed=1),
        values=_randn(2, 5, 4, seed=2),
    )
    fit = dict(n_steps="int", lr="positive", lam="positive", seed="int0")
    return {
        "subspace.experiments.motion": Spec(
            Se.motion,
            lambda: dict(n_bodies=2, n_points=5, frames=3, seed=0),
            {"n_bodies": "int", "n_points": "int", "frames": "int", "seed": "int0"},
        ),
        "subspace.experiments.faces": Spec(
            Se.faces,
            lambda: dict(n_faces=2, n_images=5, pixels=12, seed=0),
            {"n_faces": "int", "n_images": "int", "pixels": "int", "seed": "int0"},
        ),
        "subspace.experiments.sparse_combination_batch": Spec(
            Se.sparse_combination_batch,
            lambda: dict(step=0, size=2, n_keys=5, n_queries=3, dim=4),
            {
                "step": "int0",
                "size": "int",
                "n_keys": "int",
                "n_queries": "int",
                "dim": "int",
            },
            allow={"step": ("-1",)},  # negative steps seed held-out batches
        ),
        "subspace.experiments.combination_report": Spec(
            Se.combination_report,
            lambda: (
                lambda t: dict(
                    output=t[3] + 0.1, weights=t[4].float() * 0.5, test=t, n_params=10
                )
            )(Se.sparse_combination_batch(-1, size=2, n_keys=5, n_queries=3, dim=4)),
            {"output": "array", "weights": "array", "n_params": "int0"},
            # integer weights round 0.5 to 0: with no weight, the share on the right
            # keys is the documented NaN
            overflow={"weights": ("integer",)},
            extra=[
                (
                    "test a tuple of 2",
                    lambda a: a | dict(test=a["test"][:2]),
                    INVALID,
                    "test",
                ),
                ("test None", lambda a: a | dict(test=None), INVALID, "test"),
            ],
        ),
        "subspace.experiments.AttentionStack": Spec(
            lambda kind, dim, n_layers, queries, keys, values: Se.AttentionStack(
                kind, dim, n_layers
            )(queries, keys, values),
            lambda: dict(kind="sparsemax", dim=4, n_layers=2) | qkv(),
            {
                "kind": "choice",
                "dim": "int",
                "n_layers": "int",
                "queries": "array",
                "keys": "array",
                "values": "array",
            },
            group=("queries", "keys", "values", "dim"),
        ),
        "subspace.experiments.SelfExpressiveNet": Spec(
            lambda dim, hidden, scale, queries, keys: Se.SelfExpressiveNet(
                dim, hidden, scale
            )(queries, keys),
            lambda: dict(
                dim=4,
                hidden=6,
                scale=1.0,
                queries=_randn(3, 4),
                keys=_randn(5, 4, seed=1),
            ),
            {
                "dim": "int",
                "hidden": "int",
                "scale": "positive",
                "queries": "array",
                "keys": "array",
            },
            group=("queries", "keys", "dim"),
        ),
        "subspace.experiments.LearnedISTACodes": Spec(
            lambda n_iter, lam, queries, keys: Se.LearnedISTACodes(n_iter, lam)(
                queries, keys
            ),
            lambda: dict(
                n_iter=3, lam=0.01, queries=_randn(3, 4), keys=_randn(5, 4, seed=1)
            ),
            {"n_iter": "int", "lam": "positive", "queries": "array", "keys": "array"},
            group=("queries", "keys"),
        ),
        "subspace.experiments.fit_self_expressive_net": Spec(
            Se.fit_self_expressive_net,
            lambda: dict(X=X(), lam=0.01, hidden=6, n_steps=2, lr=0.003, seed=0),
            {"X": "array", "hidden": "int"} | fit,
        ),
        "subspace.experiments.fit_learned_ista": Spec(
            Se.fit_learned_ista,
            lambda: dict(X=X(), n_iter=2, lam=0.002, n_steps=2, lr=0.05, seed=0),
            {"X": "array", "n_iter": "int"} | fit,
        ),
        "subspace.experiments.normalized_self_expression": Spec(
            Se.normalized_self_expression,
            lambda: dict(X=X(), normalizer="sparsemax", n_steps=2, lr=0.1, seed=0),
            {
                "X": "array",
                "normalizer": "choice",
                "n_steps": "int",
                "lr": "positive",
                "seed": "int0",
            },
        ),
        "subspace.experiments.assign_by_coefficients": Spec(
            Se.assign_by_coefficients,
            lambda: dict(
                C=_randn(4, 6).double().numpy(),
                train_labels=np.array([0, 0, 1, 1, 2, 2]),
                n_clusters=3,
            ),
            {"C": "array", "train_labels": "labels", "n_clusters": "int"},
            group=("C", "train_labels"),
        ),
    }
