"""The battery's specs for ``attnlib.functional``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    VALID,
    Spec,
    _randn,
)

MODULE = "functional"


def specs():
    A = importlib.import_module("attnlib.functional")

    return {
        "functional.attention": Spec(
            lambda q, k, v, temperature, score, normalizer: A.attention(
                q, k, v, temperature=temperature, score=score, normalizer=normalizer
            ),
            lambda: dict(
                q=_randn(4, 3),
                k=_randn(5, 3, seed=1),
                v=_randn(5, 2, seed=2),
                temperature=None,
                score="scaled_dot",
                normalizer="softmax",
            ),
            {
                "q": "array",
                "k": "array",
                "v": "array",
                "temperature": "positive",
                "score": "choice",
                "normalizer": "choice",
            },
            optional=("temperature",),
            group=("q", "k", "v"),
            extra=[
                ("k,v rows differ", lambda a: a | dict(v=a["v"][:-1]), INVALID, "v"),
                (
                    "q,k features differ",
                    lambda a: a | dict(k=a["k"][:, :2]),
                    INVALID,
                    "k",
                ),
                (
                    "q,k ~1e20 t=1e-40",
                    lambda a: (
                        a | dict(q=a["q"] * 1e20, k=a["k"] * 1e20, temperature=1e-40)
                    ),
                    VALID,
                    "q",
                ),
                (
                    "t=1e-40",
                    lambda a: a | dict(temperature=1e-40),
                    VALID,
                    "temperature",
                ),
                (
                    "t=1e-40 none",
                    lambda a: a | dict(temperature=1e-40, normalizer="none"),
                    VALID,
                    "temperature",
                ),
                (
                    "batch mismatch",
                    lambda a: a | dict(q=_randn(2, 4, 3), k=_randn(3, 5, 3)),
                    INVALID,
                    "batch",
                ),
            ],
        ),
        "functional.attend": Spec(
            lambda temperature, score, normalizer: A.attend(
                _randn(4, 3),
                _randn(5, 3, seed=1),
                _randn(5, 2, seed=2),
                temperature=temperature,
                score=score,
                normalizer=normalizer,
            ),
            lambda: dict(temperature=None, score="scaled_dot", normalizer="softmax"),
            {"temperature": "positive", "score": "choice", "normalizer": "choice"},
            optional=("temperature",),
        ),
        "functional.scaled_dot_product_attention": Spec(
            lambda query, key, value, normalizer, scale, enable_gqa, **positional: (
                A.scaled_dot_product_attention(
                    query,
                    key,
                    value,
                    **positional,  # attn_mask, dropout_p, is_causal
                    scale=scale,
                    enable_gqa=enable_gqa,
                    normalizer=normalizer,
                )
            ),
            lambda: dict(
                query=_randn(2, 4, 3),
                key=_randn(2, 5, 3, seed=1),
                value=_randn(2, 5, 2, seed=2),
                scale=None,
                normalizer="softmax",
                attn_mask=_randn(4, 5, seed=3),
                dropout_p=0.0,
                is_causal=False,
                enable_gqa=False,
            ),
            {
                "query": "array",
                "key": "array",
                "value": "array",
                "scale": "positive",
                "normalizer": "choice",
                "attn_mask": "scores",
                "dropout_p": "probability",
                "is_causal": "flag",
                "enable_gqa": "flag",
            },
            optional=("scale", "attn_mask"),
            group=("query", "key", "value"),
            # torch's SDPA takes any finite scale; and an infinite key whose every
            # score is -inf gets weight zero (the output is SDPA's, finite): no pass
            # over the keys is spent to refuse it.
            # a bool mask is a mask; a fully masked row gives zeros (SDPA: NaN), the
            # documented departure
            allow={
                "scale": ("0", "-1"),
                "key": ("+inf", "-inf"),
                "attn_mask": ("bool", "row -inf"),
            },
            extra=[
                (
                    "key,value rows differ",
                    lambda a: a | dict(value=a["value"][:, :-1]),
                    INVALID,
                    "value",
                ),
                (
                    "query,key features differ",
                    lambda a: a | dict(key=a["key"][..., :2]),
                    INVALID,
                    "key",
                ),
                (
                    "batch mismatch",
                    lambda a: a | dict(query=_randn(3, 4, 3)),
                    INVALID,
                    "batch",
                ),
                (  # SDPA refuses the pair
                    "is_causal with attn_mask",
                    lambda a: a | dict(is_causal=True),
                    INVALID,
                    "is_causal",
                ),
                (
                    "attn_mask of the wrong shape",
                    lambda a: a | dict(attn_mask=_randn(4, 4)),
                    INVALID,
                    "attn_mask",
                ),
                (
                    "attn_mask bool",
                    lambda a: a | dict(attn_mask=_randn(4, 5) > -1),
                    VALID,
                    "attn_mask",
                ),
            ],
        ),
        "functional.resolve": Spec(
            A.resolve,
            lambda: dict(score="scaled_dot", normalizer="softmax"),
            {"score": "choice", "normalizer": "choice"},
        ),
    }
