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


LOSSES = (
    "SparsemaxLoss",
    "Entmax15Loss",
    "EntmaxLoss",
    "SparsemaxBisectLoss",
    "EntmaxBisectLoss",
    "NormmaxBisectLoss",
)
#: A row that is entirely -inf is an input of the maps: they give it zeros.
ROW = ("row -inf",)


def _target_dtypes():
    """Class indices in cross_entropy's dtypes (int64, uint8) and the ones it
    refuses (bool, int32, int16): tests/test_bad_input_52.py compares with it."""
    return [
        (
            f"target {dtype}",
            lambda a, dtype=dtype: a | dict(target=a["target"].clamp(min=0).to(dtype)),
            VALID if dtype == torch.uint8 else INVALID,
            "target",
        )
        for dtype in (torch.uint8, torch.bool, torch.int32, torch.int16)
    ]


def _dead(scores, target):
    """``scores`` with the first row's target score at -inf."""
    out = scores.clone()
    out[0, int(target[0])] = -torch.inf
    return out


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
        # the target's own score -inf: the loss is inf, as cross_entropy's
        extra=[
            (
                "target floats",
                lambda a: a | dict(target=a["target"].double()),
                INVALID,
                "target",
            ),
            *_target_dtypes(),
            (
                "dead target",
                lambda a: a | dict(scores=_dead(a["scores"], a["target"])),
                VALID,
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
        overflow={"target": ("all ignored", "dead target")},
    )


def specs():
    N = importlib.import_module("attnlib.normalizers")

    x = lambda: dict(x=_randn(3, 5), dim=-1)  # noqa: E731
    return {
        # The hard choice (specced under mux too, whose face re-exports it).
        "normalizers.hardmax": Spec(
            N.hardmax, lambda: dict(scores=_randn(3, 4)), {"scores": "scores"}
        ),
        "normalizers.straight_through_hardmax": Spec(
            N.straight_through_hardmax,
            lambda: dict(scores=_randn(3, 4)),
            {"scores": "scores"},
        ),
        "normalizers.softmax": Spec(
            N.softmax, x, {"x": "scores"}, extra=_dim_cases(), allow={"x": ROW}
        ),
        "normalizers.sparsemax": Spec(
            N.sparsemax, x, {"x": "scores"}, extra=_dim_cases(), allow={"x": ROW}
        ),
        "normalizers.entmax": Spec(
            N.entmax,
            lambda: dict(x=_randn(3, 5), alpha=1.5, dim=-1),
            {"x": "scores", "alpha": "alpha"},
            extra=_dim_cases(),
            allow={"x": ROW},
        ),
        "normalizers.Sparsemax": Spec(
            lambda x, dim: N.Sparsemax(dim=dim)(x),
            x,
            {"x": "scores"},
            extra=_dim_cases(),
            allow={"x": ROW},
        ),
        "normalizers.Entmax15": Spec(
            lambda x, dim: N.Entmax15(dim=dim)(x),
            x,
            {"x": "scores"},
            extra=_dim_cases(),
            allow={"x": ROW},
        ),
        "normalizers.Entmax": Spec(
            lambda x, alpha, learn_alpha, dim: N.Entmax(
                alpha, dim=dim, learn_alpha=learn_alpha
            )(x),
            lambda: dict(x=_randn(3, 5), alpha=1.5, learn_alpha=True, dim=-1),
            {"x": "scores", "alpha": "alpha", "learn_alpha": "flag"},
            allow={"x": ROW},
            extra=_dim_cases()
            + [
                (
                    "learned alpha 100",
                    lambda a: a | dict(alpha=100.0),
                    VALID,
                    "alpha",
                ),
                (
                    "learned alpha the dtype rounds to 1",
                    lambda a: a | dict(alpha=1 + 1e-9),
                    INVALID,
                    "alpha",
                ),
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
        **_package_specs(N),
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
            overflow={"target": ("dead class target",)},
            extra=[
                *[
                    (
                        f"class target {dtype}",
                        lambda a, dtype=dtype: (
                            a | dict(target=torch.tensor([0, 4, 1]).to(dtype))
                        ),
                        VALID if dtype == torch.uint8 else INVALID,
                        "target",
                    )
                    for dtype in (torch.uint8, torch.bool, torch.int32)
                ],
                (
                    "dead class target",
                    lambda a: (
                        a
                        | dict(
                            scores=_dead(a["scores"], torch.tensor([0])),
                            target=torch.tensor([0, 4, 1]),
                        )
                    ),
                    VALID,
                    "target",
                ),
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


def _package_specs(N) -> dict:
    """The ``entmax`` package's other names (their scores are called ``X``)."""
    X = lambda: dict(X=_randn(3, 5), dim=-1)  # noqa: E731
    rows = {"X": ROW}
    out = {
        "normalizers.entmax15": Spec(
            N.entmax15,
            lambda: dict(x=_randn(3, 5), dim=-1),
            {"x": "scores"},
            extra=_dim_cases(),
            allow={"x": ROW},
        ),
        "normalizers.sparsemax_bisect": Spec(
            N.sparsemax_bisect, X, {"X": "scores"}, extra=_dim_cases(), allow=rows
        ),
        "normalizers.entmax_bisect": Spec(
            N.entmax_bisect,
            lambda: dict(X=_randn(3, 5), alpha=1.5, dim=-1),
            {"X": "scores", "alpha": "alpha"},
            extra=_dim_cases(),
            allow={"X": ROW, "alpha": ("0.5",)},  # the package's range: α > 0
        ),
        "normalizers.normmax_bisect": Spec(
            N.normmax_bisect,
            lambda: dict(X=_randn(3, 5), alpha=2.0, dim=-1),
            {"X": "scores", "alpha": "alpha"},
            extra=_dim_cases(),
            allow=rows,
        ),
        "normalizers.budget_bisect": Spec(
            N.budget_bisect,
            lambda: dict(X=_randn(3, 5), budget=2.0, dim=-1),
            {"X": "scores", "budget": "nonneg"},
            extra=_dim_cases()
            + [("budget above n", lambda a: a | dict(budget=6.0), INVALID, "budget")],
            allow=rows,
        ),
    }
    for name in ("SparsemaxBisect", "EntmaxBisect", "NormmaxBisect", "BudgetBisect"):
        out[f"normalizers.{name}"] = Spec(
            lambda X, dim, name=name: getattr(N, name)(dim=dim)(X),
            X,
            {"X": "scores"},
            extra=_dim_cases(),
            allow=rows,
        )
    for name in (
        "sparsemax_loss",
        "entmax15_loss",
        "sparsemax_bisect_loss",
        "entmax_bisect_loss",
        "normmax_bisect_loss",
    ):
        out[f"normalizers.{name}"] = Spec(
            getattr(N, name),
            lambda: dict(X=_randn(3, 5), target=torch.tensor([0, 4, 1])),
            {"X": "scores"},
            group=("X", "target"),
            overflow={"target": ("dead target",)},
            extra=[
                *_target_dtypes(),
                (
                    "dead target",
                    lambda a: a | dict(X=_dead(a["X"], a["target"])),
                    VALID,
                    "target",
                ),
                (
                    "index out of range",
                    lambda a: a | dict(target=torch.tensor([0, 7, 1])),
                    INVALID,
                    "target",
                ),
                (
                    "target floats",
                    lambda a: a | dict(target=a["target"].double()),
                    INVALID,
                    "target",
                ),
            ],
        )
    return out
