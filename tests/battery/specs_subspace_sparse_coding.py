"""The battery's specs for ``attnlib.subspace.sparse_coding``."""

from __future__ import annotations

import importlib

from .core import (
    Spec,
    _randn,
)

MODULE = "subspace.sparse_coding"


def specs():
    Sc = importlib.import_module("attnlib.subspace.sparse_coding")

    return {
        "subspace.sparse_coding.sparse_coding_attention": Spec(
            lambda q, k, v, lam, n_iter, step: Sc.sparse_coding_attention(
                q, k, v, lam, n_iter, step
            ),
            lambda: dict(
                q=_randn(4, 3),
                k=_randn(6, 3, seed=1),
                v=_randn(6, 2, seed=2),
                lam=0.1,
                n_iter=10,
                step=None,
            ),
            {
                "q": "array",
                "k": "array",
                "v": "array",
                "lam": "positive",
                "n_iter": "int",
                "step": "positive",
            },
            optional=("step",),
            group=("q", "k", "v"),
        ),
        "subspace.sparse_coding.UnrolledISTAAttention": Spec(
            lambda embed_dim, n_iter, lam, x: Sc.UnrolledISTAAttention(
                embed_dim, n_iter, lam
            )(x),
            lambda: dict(embed_dim=3, n_iter=2, lam=0.1, x=_randn(2, 5, 3)),
            {"embed_dim": "int", "n_iter": "int", "lam": "positive", "x": "array"},
        ),
    }
