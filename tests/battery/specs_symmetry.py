"""The battery's specs for ``attnlib.symmetry``."""

from __future__ import annotations

import importlib
import math

import torch

from .core import (
    INVALID,
    VALID,
    Spec,
    _g,
    _randn,
)

MODULE = "symmetry"


def specs():
    S = importlib.import_module("attnlib.symmetry")

    def layer(embed_dim, n_knowledge, num_heads, num_layers, kernel, value, x):
        model = S.KnowledgeAttention(
            embed_dim,
            n_knowledge,
            num_heads=num_heads,
            num_layers=num_layers,
            kernel=kernel,
            value=value,
        )
        return model(x)

    return {
        "symmetry.random_orthogonal": Spec(
            lambda d, generator: S.random_orthogonal(d, generator),
            lambda: dict(d=3, generator=_g()),
            {"d": "int"},
            extra=[
                (
                    "generator a seed",
                    lambda a: a | dict(generator=3),
                    INVALID,
                    "generator",
                )
            ],
        ),
        "symmetry.random_permutation": Spec(
            lambda n, generator: S.random_permutation(n, generator),
            lambda: dict(n=4, generator=_g()),
            {"n": "int"},
            extra=[
                (
                    "generator a seed",
                    lambda a: a | dict(generator=3),
                    INVALID,
                    "generator",
                )
            ],
        ),
        "symmetry.householder": Spec(
            S.householder,
            lambda: dict(u=_randn(3)),
            {"u": "array"},
            extra=[("zero", lambda a: a | dict(u=torch.zeros(3)), INVALID, "u")],
        ),
        "symmetry.equivariance_error": Spec(
            lambda f, X, Z, group, n_trials: S.equivariance_error(
                f, X, Z=Z, group=group, n_trials=n_trials, generator=_g()
            ),
            lambda: dict(
                f=lambda x, z=None: x if z is None else x @ z.transpose(-1, -2) @ z,
                X=_randn(4, 3).double(),
                Z=_randn(2, 3, seed=1).double(),
                group="orthogonal",
                n_trials=2,
            ),
            {
                "f": "callable",
                "X": "array",
                "Z": "array",
                "group": "choice",
                "n_trials": "int",
            },
            optional=("Z",),
            group=("X", "Z"),
            extra=[
                (
                    "f gives NaN",
                    lambda a: a | dict(f=lambda x, z: x * math.nan),
                    INVALID,
                    "f",
                ),
                (
                    "f changes shape",
                    lambda a: a | dict(f=lambda x, z: x[..., :1, :] if x.ndim else x),
                    VALID,
                    "f",
                ),
            ],
        ),
        "symmetry.knowledge_attention": Spec(
            lambda x, z, a, kernel, normalizer, temperature: S.knowledge_attention(
                x, z, a, kernel=kernel, normalizer=normalizer, temperature=temperature
            ),
            lambda: dict(
                x=_randn(4, 3),
                z=_randn(2, 3, seed=1),
                a=_randn(2, 2, seed=2),
                kernel="quadratic",
                normalizer="softmax",
                temperature=None,
            ),
            {
                "x": "array",
                "z": "array",
                "a": "array",
                "kernel": "choice",
                "normalizer": "choice",
                "temperature": "positive",
            },
            optional=("a", "temperature"),
            group=("x", "z", "a"),
            extra=[
                (
                    "higher_order without c",
                    lambda a: a | dict(kernel="higher_order"),
                    INVALID,
                    "c",
                )
            ],
        ),
        "symmetry.KnowledgeAttention": Spec(
            layer,
            lambda: dict(
                embed_dim=3,
                n_knowledge=2,
                num_heads=2,
                num_layers=2,
                kernel="quadratic",
                value="scalar",
                x=_randn(2, 4, 3),
            ),
            {
                "embed_dim": "int",
                "n_knowledge": "int",
                "num_heads": "int",
                "num_layers": "int",
                "kernel": "choice",
                "value": "choice",
                "x": "array",
            },
        ),
    }
