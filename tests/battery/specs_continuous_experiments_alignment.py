"""The battery's specs for ``attnlib.continuous.experiments.alignment``."""

from __future__ import annotations

import importlib

from .core import (
    INVALID,
    Spec,
    _model_task_cases,
)

MODULE = "continuous.experiments.alignment"


def specs():
    Al = importlib.import_module("attnlib.continuous.experiments.alignment")

    task = lambda: Al.monotone_alignment(3, 6, 3, vocab=5)  # noqa: E731
    model = lambda: Al.AlignmentModel(  # noqa: E731
        5, 6, 3, "continuous", dim=4, n_basis=4
    )
    return {
        "continuous.experiments.alignment.monotone_alignment": Spec(
            Al.monotone_alignment,
            lambda: dict(n=3, source_len=6, target_len=3, vocab=5, seed=0),
            {
                "n": "int",
                "source_len": "int",
                "target_len": "int",
                "vocab": "int",
                "seed": "int0",
            },
        ),
        "continuous.experiments.alignment.AlignmentModel": Spec(
            lambda vocab, source_len, target_len, kind, dim, n_basis, source: (
                Al.AlignmentModel(
                    vocab, source_len, target_len, kind, dim=dim, n_basis=n_basis
                )(source)
            ),
            lambda: dict(
                vocab=5,
                source_len=6,
                target_len=3,
                kind="continuous",
                dim=4,
                n_basis=4,
                source=task().source,
            ),
            {
                "vocab": "int",
                "source_len": "int",
                "target_len": "int",
                "kind": "choice",
                "dim": "int",
                "n_basis": "int",
            },
            extra=[
                (
                    "source float",
                    lambda a: a | dict(source=a["source"].float()),
                    INVALID,
                    "source",
                ),
                (
                    "source too long",
                    lambda a: a | dict(source_len=4, kind="discrete"),
                    INVALID,
                    "source",
                ),
                ("source out of vocab", lambda a: a | dict(vocab=2), INVALID, "source"),
            ],
        ),
        "continuous.experiments.alignment.fit_alignment": Spec(
            lambda model, task, n_steps, batch, lr: Al.fit_alignment(
                model, task, n_steps=n_steps, batch=batch, lr=lr, progress=False
            ),
            lambda: dict(model=model(), task=task(), n_steps=2, batch=2, lr=0.01),
            {"n_steps": "int", "batch": "int", "lr": "positive"},
            extra=_model_task_cases(),
        ),
        "continuous.experiments.alignment.alignment_accuracy": Spec(
            Al.alignment_accuracy,
            lambda: dict(model=model(), task=task()),
            {},
            extra=_model_task_cases(),
        ),
        "continuous.experiments.alignment.alignment_means": Spec(
            Al.alignment_means,
            lambda: dict(model=model()),
            {},
            extra=[
                ("model a string", lambda a: a | dict(model="abc"), INVALID, "model"),
                (
                    "a discrete model",
                    lambda a: (
                        a | dict(model=Al.AlignmentModel(5, 6, 3, "discrete", dim=4))
                    ),
                    INVALID,
                    "model",
                ),
            ],
        ),
    }
