"""The battery's specs for ``attnlib.normalizers``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    VALID,
    Spec,
    _probs,
    _rand,
    _randn,
)

MODULE = "normalizers"


def _dim_cases(name="dim"):
    return [
        ("dim out of range", lambda a: a | {name: 5}, INVALID, name),
        ("dim a float", lambda a: a | {name: 1.5}, INVALID, name),
        ("dim a string", lambda a: a | {name: "a"}, INVALID, name),
    ]


LOSSES = ("SparsemaxLoss", "Entmax15Loss", "EntmaxLoss")


def _loss_spec(loss):
    """A loss module on class targets, with one ignored row."""
    return Spec(
        lambda scores, target, ignore_index, reduction: loss(
            ignore_index=ignore_index, reduction=reduction
        )(scores, target),
        lambda: dict(
            scores=_randn(3, 5),
            target=torch.tensor([0, 4, -100]),
            ignore_index=-100,
            reduction="mean",
        ),
        {"scores": "scores", "reduction": "choice"},
        group=("scores", "target"),
        extra=[
            (
                "target floats",
                lambda a: a | dict(target=a["target"].double()),
                INVALID,
                "target",
            ),
            (
                "index out of range",
                lambda a: a | dict(target=torch.tensor([0, 7, 1])),
                INVALID,
                "target",
            ),
            (
                "ignore_index 1.5",
                lambda a: a | dict(ignore_index=1.5),
                INVALID,
                "ignore_index",
            ),
            (
                "ignore_index True",
                lambda a: a | dict(ignore_index=True),
                INVALID,
                "ignore_index",
            ),
            (
                "all ignored",  # NaN, as torch's losses give it
                lambda a: a | dict(target=torch.full((3,), -100)),
                VALID,
                "target",
            ),
        ],
        overflow={"target": ("all ignored",)},
    )


def specs():
    N = importlib.import_module("attnlib.normalizers")

    x = lambda: dict(x=_randn(3, 5), dim=-1)  # noqa: E731
    return {
        "normalizers.softmax": Spec(N.softmax, x, {"x": "scores"}, extra=_dim_cases()),
        "normalizers.sparsemax": Spec(
            N.sparsemax, x, {"x": "scores"}, extra=_dim_cases()
        ),
        "normalizers.entmax": Spec(
            N.entmax,
            lambda: dict(x=_randn(3, 5), alpha=1.5, dim=-1),
            {"x": "scores", "alpha": "alpha"},
            extra=_dim_cases(),
        ),
        "normalizers.Sparsemax": Spec(
            lambda x, dim: N.Sparsemax(dim=dim)(x),
            x,
            {"x": "scores"},
            extra=_dim_cases(),
        ),
        "normalizers.Entmax15": Spec(
            lambda x, dim: N.Entmax15(dim=dim)(x),
            x,
            {"x": "scores"},
            extra=_dim_cases(),
        ),
        "normalizers.Entmax": Spec(
            lambda x, alpha, learn_alpha: N.Entmax(alpha, learn_alpha=learn_alpha)(x),
            lambda: dict(x=_randn(3, 5), alpha=1.5, learn_alpha=True),
            {"x": "scores", "alpha": "alpha"},
            extra=[
                ("alpha 1", lambda a: a | dict(alpha=1.0), INVALID, "alpha"),
                (
                    "alpha tensor with 1",
                    lambda a: a | dict(alpha=torch.tensor([[1.5], [1.0], [2.0]])),
                    INVALID,
                    "alpha",
                ),
                (
                    "alpha per row",
                    lambda a: a | dict(alpha=torch.tensor([[1.5], [1.2], [2.0]])),
                    VALID,
                    "alpha",
                ),
            ],
        ),
        **{f"normalizers.{loss}": _loss_spec(getattr(N, loss)) for loss in LOSSES},
        "normalizers.tsallis_entropy": Spec(
            N.tsallis_entropy,
            lambda: dict(p=_probs(), alpha=1.5, dim=-1),
            {"p": "array", "alpha": "alpha"},
            extra=_dim_cases()
            + [("p negative", lambda a: a | dict(p=-a["p"]), INVALID, "p")],
        ),
        "normalizers.exp_beta": Spec(
            N.exp_beta,
            lambda: dict(u=_randn(3, 5), beta=0.5),
            {"u": "array", "beta": "real"},
            allow={"u": ("scalar",)},
            # exp_β(u) beyond the dtype, or past its pole
            overflow={
                "u": ("x1e30",),
                "beta": ("1e30",),
            },
        ),
        "normalizers.log_beta": Spec(
            N.log_beta,
            lambda: dict(u=_rand(3, 5) + 0.1, beta=0.5),
            {"u": "array", "beta": "real"},
            allow={"u": ("scalar",)},
            overflow={"beta": ("1e30",)},  # u^(1-β) / (1-β) beyond the dtype for u < 1
            extra=[("u negative", lambda a: a | dict(u=-a["u"]), INVALID, "u")],
        ),
        "normalizers.fenchel_young_loss": Spec(
            N.fenchel_young_loss,
            lambda: dict(
                scores=_randn(3, 5), target=_probs(), alpha=1.5, reduction="mean"
            ),
            {
                "scores": "scores",
                "target": "array",
                "alpha": "alpha",
                "reduction": "choice",
            },
            group=("scores", "target"),
            extra=[
                (
                    "target sums to 2",
                    lambda a: a | dict(target=2 * a["target"]),
                    INVALID,
                    "target",
                ),
                (
                    "target negative",
                    lambda a: a | dict(target=a["target"] - 0.5),
                    INVALID,
                    "target",
                ),
                (
                    "index out of range",
                    lambda a: a | dict(target=torch.tensor([0, 7, 1])),
                    INVALID,
                    "target",
                ),
                (
                    "indices",
                    lambda a: a | dict(target=torch.tensor([0, 4, 1])),
                    VALID,
                    "target",
                ),
            ],
        ),
    }
