"""The battery's specs for ``attnlib.layers``.

Every constructor and forward argument is attacked: integers (``int``), flags by type
(``flag``: a string, 0/1, None, a NumPy bool), probabilities (``dropout``), LayerNorm's
ε (``eps``), names (``choice``), tokens (``array``), and the masks in the shapes
torch's modules refuse (a 3-D mask per sequence, a padding mask of the wrong length, a
mask per batch of the wrong size): tests/test_bad_input_52.py checks torch's own
modules refuse the same mask shapes.
"""

from __future__ import annotations

import importlib

import torch

from .core import INVALID, VALID, Spec, _randn

MODULE = "layers"


def _masks(n_q, n_k, batch, heads):
    """Bad masks: a 3-D mask per sequence (torch takes (N·heads, L, S) or (L, S))
    and a padding mask of the wrong length; a per-head mask is valid."""
    am, kpm = "attn_mask", "key_padding_mask"
    return [
        (
            "3-D mask per sequence",
            lambda a: a | {am: torch.zeros(batch, n_q, n_k, dtype=torch.bool)},
            INVALID,
            am,
        ),
        (
            "mask of the wrong size",
            lambda a: a | {am: torch.zeros(n_q + 1, n_k, dtype=torch.bool)},
            INVALID,
            am,
        ),
        (
            "padding mask too short",
            lambda a: a | {kpm: torch.zeros(batch, n_k - 1, dtype=torch.bool)},
            INVALID,
            kpm,
        ),
        (
            "per-head mask",
            lambda a: a | {am: torch.zeros(batch * heads, n_q, n_k, dtype=torch.bool)},
            VALID,
            am,
        ),
    ]


def specs():
    L = importlib.import_module("attnlib.layers")

    def mha(embed_dim, num_heads, kdim, query, key, value, dropout, bias,
            add_bias_kv, add_zero_attn, batch_first, normalizer, init,
            **forward):  # fmt: skip
        m = L.MultiHeadAttention(
            embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn,
            kdim=kdim, vdim=kdim, batch_first=batch_first, normalizer=normalizer,
            init=init,
        )  # fmt: skip
        # attn_mask, key_padding_mask, need_weights, average_attn_weights, is_causal
        return m(query, key, value, **forward)

    def encoder(d_model, nhead, dim_feedforward, src, dropout, activation,
                layer_norm_eps, norm_first, bias, normalizer, src_mask,
                src_key_padding_mask, is_causal):  # fmt: skip
        layer = L.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
            True, norm_first, bias, normalizer=normalizer,
        )  # fmt: skip
        return layer(src, src_mask, src_key_padding_mask, is_causal)

    def decoder(d_model, nhead, tgt, memory, dropout, layer_norm_eps, norm_first,
                tgt_mask, memory_mask, tgt_key_padding_mask,
                memory_key_padding_mask, tgt_is_causal, memory_is_causal):  # fmt: skip
        layer = L.TransformerDecoderLayer(
            d_model, nhead, 8, dropout, layer_norm_eps=layer_norm_eps,
            norm_first=norm_first, batch_first=True,
        )  # fmt: skip
        return layer(
            tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
            memory_key_padding_mask, tgt_is_causal, memory_is_causal,
        )  # fmt: skip

    flags = ("bias", "add_bias_kv", "add_zero_attn", "need_weights",
             "average_attn_weights", "is_causal")  # fmt: skip
    return {
        "layers.MultiHeadAttention": Spec(
            mha,
            lambda: dict(
                embed_dim=4,
                num_heads=2,
                kdim=3,
                query=_randn(2, 3, 4),
                key=_randn(2, 5, 3, seed=1),
                value=_randn(2, 5, 3, seed=2),
                dropout=0.0,
                bias=True,
                add_bias_kv=False,
                add_zero_attn=False,
                batch_first=True,
                normalizer="softmax",
                init="torch",
                attn_mask=None,
                key_padding_mask=None,
                need_weights=True,
                average_attn_weights=True,
                is_causal=False,
            ),
            {
                "embed_dim": "int",
                "num_heads": "int",
                "kdim": "int",
                "query": "array",
                "key": "array",
                "value": "array",
                "dropout": "probability",
                "batch_first": "flag",
                "normalizer": "choice",
                "init": "choice",
                **{f: "flag" for f in flags},
            },
            optional=("kdim", "value", "batch_first"),
            group=("query", "key", "value", "kdim"),
            extra=_masks(3, 5, 2, 2)
            + [
                (  # torch asks for attn_mask too; ours applies the causal mask
                    "is_causal without a mask",  # (documented departure)
                    lambda a: a | dict(is_causal=True, need_weights=False),
                    VALID,
                    "is_causal",
                ),
                (
                    "heads do not divide embed_dim",
                    lambda a: a | dict(num_heads=3),
                    INVALID,
                    "num_heads",
                ),
            ],
        ),
        "layers.TransformerEncoderLayer": Spec(
            encoder,
            lambda: dict(
                d_model=4,
                nhead=2,
                dim_feedforward=8,
                src=_randn(2, 3, 4),
                dropout=0.1,
                activation="relu",
                layer_norm_eps=1e-5,
                norm_first=False,
                bias=True,
                normalizer="softmax",
                src_mask=None,
                src_key_padding_mask=None,
                is_causal=False,
            ),
            {
                "d_model": "int",
                "nhead": "int",
                "dim_feedforward": "int",
                "src": "array",
                "dropout": "probability",
                "activation": "choice",
                "layer_norm_eps": "eps",
                "norm_first": "flag",
                "bias": "flag",
                "normalizer": "choice",
                "is_causal": "flag",
            },
            # torch's signature: nhead and dim_feedforward (2048) take no None
            extra=[
                (
                    "src_mask 3-D per sequence",
                    lambda a: a | dict(src_mask=torch.zeros(2, 3, 3, dtype=torch.bool)),
                    INVALID,
                    "mask",
                ),
                (
                    "src_key_padding_mask too short",
                    lambda a: (
                        a
                        | dict(src_key_padding_mask=torch.zeros(2, 2, dtype=torch.bool))
                    ),
                    INVALID,
                    "key_padding_mask",
                ),
            ],
        ),
        "layers.TransformerDecoderLayer": Spec(
            decoder,
            lambda: dict(
                d_model=4,
                nhead=2,
                tgt=_randn(2, 3, 4),
                memory=_randn(2, 5, 4, seed=1),
                dropout=0.1,
                layer_norm_eps=1e-5,
                norm_first=True,
                tgt_mask=None,
                memory_mask=None,
                tgt_key_padding_mask=None,
                memory_key_padding_mask=None,
                tgt_is_causal=False,
                memory_is_causal=False,
            ),
            {
                "d_model": "int",
                "nhead": "int",
                "tgt": "array",
                "memory": "array",
                "dropout": "probability",
                "layer_norm_eps": "eps",
                "norm_first": "flag",
                "tgt_is_causal": "flag",
                "memory_is_causal": "flag",
            },
            group=("tgt", "memory"),
            extra=[
                (
                    "memory_mask 3-D per sequence",
                    lambda a: (
                        a | dict(memory_mask=torch.zeros(2, 3, 5, dtype=torch.bool))
                    ),
                    INVALID,
                    "mask",
                ),
                (
                    "tgt_mask of the wrong size",
                    lambda a: a | dict(tgt_mask=torch.zeros(3, 4, dtype=torch.bool)),
                    INVALID,
                    "mask",
                ),
                (
                    "memory_key_padding_mask too short",
                    lambda a: (
                        a
                        | dict(
                            memory_key_padding_mask=torch.zeros(2, 4, dtype=torch.bool)
                        )
                    ),
                    INVALID,
                    "key_padding_mask",
                ),
            ],
        ),
    }
