"""The battery's specs for ``attnlib.continuous.experiments.documents``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
)

MODULE = "continuous.experiments.documents"


def specs():
    Do = importlib.import_module("attnlib.continuous.experiments.documents")

    docs = lambda: Do.span_documents(2, length=30, span=4, vocab=8)  # noqa: E731
    rows = lambda: [  # noqa: E731
        dict(attention="discrete", alpha=1, N=None, accs=[0.8, 0.9]),
        dict(attention="continuous", alpha=2, N=32, accs=[0.85]),
    ]
    return {
        "continuous.experiments.documents.span_documents": Spec(
            Do.span_documents,
            lambda: dict(n=2, length=30, span=4, vocab=8, cue=0.3, decoys=0.03, seed=0),
            {
                "n": "int",
                "length": "int",
                "span": "int",
                "vocab": "int",
                "cue": "nonneg",
                "decoys": "nonneg",
                "seed": "int0",
            },
            extra=[
                ("span > length", lambda a: a | dict(span=40), INVALID, "span"),
                ("cue > 1", lambda a: a | dict(cue=1.5), INVALID, "cue"),
            ],
        ),
        "continuous.experiments.documents.DocumentClassifier": Spec(
            lambda vocab, kind, n_basis, dim, span, tokens: Do.DocumentClassifier(
                vocab, kind, n_basis=n_basis, dim=dim, span=span
            )(tokens),
            lambda: dict(
                vocab=16,
                kind="combined",
                n_basis=6,
                dim=4,
                span=4,
                tokens=docs().tokens,
            ),
            {
                "vocab": "int",
                "kind": "choice",
                "n_basis": "int",
                "dim": "int",
                "span": "int",
            },
            extra=[
                ("tokens out of vocab", lambda a: a | dict(vocab=3), INVALID, "tokens"),
                (
                    "tokens float",
                    lambda a: a | dict(tokens=a["tokens"].float()),
                    INVALID,
                    "tokens",
                ),
                ("tokens None", lambda a: a | dict(tokens=None), INVALID, "tokens"),
                (
                    "tokens 1-D",
                    lambda a: a | dict(tokens=a["tokens"][0]),
                    INVALID,
                    "tokens",
                ),
            ],
        ),
        "continuous.experiments.documents.table1": Spec(
            lambda rows: Do.table1(rows).shape,
            lambda: dict(rows=rows()),
            {},
            extra=[
                ("rows None", lambda a: a | dict(rows=None), INVALID, "rows"),
                (
                    "a row without accs",
                    lambda a: (
                        a
                        | dict(rows=[{"attention": "discrete", "alpha": 1, "N": None}])
                    ),
                    INVALID,
                    "rows",
                ),
            ],
        ),
    }
