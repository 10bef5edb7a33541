"""The battery's specs for ``attnlib.symmetry.experiments``."""

from __future__ import annotations

import importlib
import math

import torch

from .core import (
    INVALID,
    VALID,
    Spec,
    _randn,
)

MODULE = "symmetry.experiments"


def specs():
    Sy = importlib.import_module("attnlib.symmetry.experiments")

    teacher = lambda: Sy.make_teacher(3, 2)  # noqa: E731
    xy = lambda: Sy.knowledge_task(teacher(), 6, 4)  # noqa: E731
    return {
        "symmetry.experiments.SequenceMLP": Spec(
            lambda length, embed_dim, hidden, x: Sy.SequenceMLP(
                length, embed_dim, hidden
            )(x),
            lambda: dict(length=4, embed_dim=3, hidden=5, x=_randn(2, 4, 3)),
            {"length": "int", "embed_dim": "int", "hidden": "int", "x": "array"},
            group=("x", "length", "embed_dim"),
        ),
        "symmetry.experiments.MeanBaseline": Spec(
            lambda embed_dim, x, y: Sy.MeanBaseline(embed_dim).fit(x, y)(x),
            lambda: dict(embed_dim=3) | dict(zip("xy", xy())),
            {"embed_dim": "int", "x": "array", "y": "array"},
            group=("x", "y", "embed_dim"),
        ),
        "symmetry.experiments.RidgeBaseline": Spec(
            lambda length, embed_dim, ridge, x, y: Sy.RidgeBaseline(
                length, embed_dim, ridge
            ).fit(x, y)(x),
            lambda: dict(length=4, embed_dim=3, ridge=1.0) | dict(zip("xy", xy())),
            {
                "length": "int",
                "embed_dim": "int",
                "ridge": "positive",
                "x": "array",
                "y": "array",
            },
            group=("x", "y", "length", "embed_dim"),
        ),
        "symmetry.experiments.ScaledInput": Spec(
            lambda x, y: Sy.ScaledInput().fit(x, y)(x),
            lambda: dict(zip("xy", xy())),
            {"x": "array", "y": "array"},
            group=("x", "y"),
        ),
        "symmetry.experiments.RidgeCVBaseline": Spec(
            lambda length, embed_dim, x, y: Sy.RidgeCVBaseline(length, embed_dim).fit(
                x, y
            )(x),
            lambda: dict(length=4, embed_dim=3) | dict(zip("xy", xy())),
            {"length": "int", "embed_dim": "int", "x": "array", "y": "array"},
            group=("x", "y", "length", "embed_dim"),
        ),
        "symmetry.experiments.WithSkip": Spec(
            lambda x: Sy.WithSkip(
                importlib.import_module("attnlib.symmetry").KnowledgeAttention(3, 2)
            )(x),
            lambda: dict(x=_randn(2, 4, 3)),
            {"x": "array"},
        ),
        "symmetry.experiments.identity_value_start": Spec(
            lambda head: Sy.identity_value_start(head).in_proj_weight,
            lambda: dict(
                head=importlib.import_module("attnlib").MultiHeadAttention(3, 1)
            ),
            {"head": "callable"},
        ),
        "symmetry.experiments.make_teacher": Spec(
            lambda embed_dim, n_knowledge, kernel, sharpness, seed: Sy.make_teacher(
                embed_dim, n_knowledge, kernel=kernel, sharpness=sharpness, seed=seed
            )(_randn(2, 4, 3)),
            lambda: dict(
                embed_dim=3, n_knowledge=2, kernel="quadratic", sharpness=2.0, seed=0
            ),
            {
                "n_knowledge": "int",
                "kernel": "choice",
                "sharpness": "positive",
                "seed": "int0",
            },
        ),
        "symmetry.experiments.knowledge_task": Spec(
            lambda teacher, n_sequences, length, noise, seed: Sy.knowledge_task(
                teacher, n_sequences, length, noise=noise, seed=seed
            ),
            lambda: dict(teacher=teacher(), n_sequences=4, length=3, noise=0.1, seed=0),
            {
                "teacher": "callable",
                "n_sequences": "int",
                "length": "int",
                "noise": "nonneg",
                "seed": "int0",
            },
        ),
        "symmetry.experiments.relative_error": Spec(
            lambda model, x, y: Sy.relative_error(model, x, y),
            lambda: dict(model=teacher()) | dict(zip("xy", xy())),
            {"model": "callable", "x": "array", "y": "array"},
            group=("x", "y"),
            extra=[
                ("y zero", lambda a: a | dict(y=torch.zeros_like(a["y"])), INVALID, "y")
            ],
        ),
        "symmetry.experiments.fit_and_score": Spec(
            lambda n_steps, lr, weight_decay, seed: Sy.fit_and_score(
                Sy.MeanBaseline(3) if False else Sy.SequenceMLP(4, 3, 5),
                xy(),
                {4: xy()},
                n_steps=n_steps,
                lr=lr,
                weight_decay=weight_decay,
                seed=seed,
            ),
            lambda: dict(n_steps=2, lr=0.01, weight_decay=0.0, seed=0),
            {
                "n_steps": "int",
                "lr": "positive",
                "weight_decay": "nonneg",
                "seed": "int0",
            },
        ),
        "symmetry.experiments.sequences_needed": Spec(
            Sy.sequences_needed,
            lambda: dict(sizes=[10, 100, 1000], errors=[0.5, 0.1, 0.01], target=0.05),
            {"target": "positive"},
            extra=[
                (
                    "sizes and errors differ",
                    lambda a: a | dict(errors=[0.5, 0.1]),
                    INVALID,
                    "errors",
                ),
                (
                    "negative error",
                    lambda a: a | dict(errors=[0.5, -0.1, 0.01]),
                    INVALID,
                    "errors",
                ),
                (
                    "NaN size",
                    lambda a: a | dict(sizes=[10, math.nan, 1000]),
                    INVALID,
                    "sizes",
                ),
                (
                    "target never reached",
                    lambda a: a | dict(target=1e-5),
                    VALID,
                    "target",
                ),
            ],
            # NaN is the documented answer for a target the curve never reaches.
            overflow={"target": ("1e-30", "1e30", "target never reached")},
        ),
    }
