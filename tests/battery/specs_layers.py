"""The battery's specs for ``attnlib.layers``."""

from __future__ import annotations

import importlib

from .core import Spec, _randn

MODULE = "layers"


def specs():
    L = importlib.import_module("attnlib.layers")

    return {
        "layers.MultiHeadAttention": Spec(
            lambda embed_dim, num_heads, kdim, query, key, value: L.MultiHeadAttention(
                embed_dim, num_heads, kdim=kdim, vdim=kdim, batch_first=True
            )(query, key, value),
            lambda: dict(
                embed_dim=4,
                num_heads=2,
                kdim=3,
                query=_randn(2, 3, 4),
                key=_randn(2, 5, 3, seed=1),
                value=_randn(2, 5, 3, seed=2),
            ),
            {
                "embed_dim": "int",
                "num_heads": "int",
                "kdim": "int",
                "query": "array",
                "key": "array",
                "value": "array",
            },
            optional=("kdim", "value"),
            group=("query", "key", "value", "kdim"),
        ),
        "layers.TransformerEncoderLayer": Spec(
            lambda d_model, nhead, dim_feedforward, src: L.TransformerEncoderLayer(
                d_model, nhead, dim_feedforward
            )(src),
            lambda: dict(d_model=4, nhead=2, dim_feedforward=8, src=_randn(2, 3, 4)),
            {
                "d_model": "int",
                "nhead": "int",
                "dim_feedforward": "int",
                "src": "array",
            },
            # torch's signature: nhead and dim_feedforward (2048) take no None
        ),
        "layers.TransformerDecoderLayer": Spec(
            lambda d_model, nhead, tgt, memory: L.TransformerDecoderLayer(
                d_model, nhead, 8, batch_first=True
            )(tgt, memory),
            lambda: dict(
                d_model=4, nhead=2, tgt=_randn(2, 3, 4), memory=_randn(2, 5, 4, seed=1)
            ),
            {"d_model": "int", "nhead": "int", "tgt": "array", "memory": "array"},
            group=("tgt", "memory"),
        ),
    }
