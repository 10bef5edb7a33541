"""The battery's machinery: mutation kinds, specs, the judge, shared data.

A battery of bad inputs for every public callable of attnlib, data-driven.

Each public callable has a :class:`Spec`: a valid baseline call and, for each argument
worth attacking, its *kind*. Every kind has a list of mutations, each either ``invalid``
(the call must raise a ``ValueError`` naming the argument), ``valid`` (the call must
return an output without NaN or inf, or raise a ``ValueError`` naming the argument: a
clear refusal is fine), or ``f64`` (valid, and a float64 tensor must not come back as
float32).

Run ``python tests/test_battery.py`` for the counts (calls, clear errors, silent NaN,
silent wrong, cryptic); ``--by-module`` adds a table per module family, ``-v`` lists the
failures, and names (``mux continuous``) restrict the run to callables so prefixed.
``PYTHONPATH=<another checkout's root>`` counts that checkout's attnlib, same specs.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

# ------------------------------------------------------------------- mutations per kind
INVALID, VALID, F64 = "invalid", "valid", "f64"


def _t(x):
    return torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x


def _set_first(x, value):
    t = _t(x).clone().double() if not _t(x).is_floating_point() else _t(x).clone()
    t.view(-1)[0] = value
    return t if isinstance(x, torch.Tensor) else t.numpy()


def _as(x, fn):
    """Apply ``fn`` to ``x`` as a tensor and give back the caller's container type."""
    out = fn(_t(x))
    return out if isinstance(x, torch.Tensor) else out.numpy()


def _swap(x):
    return x.numpy() if isinstance(x, torch.Tensor) else torch.as_tensor(x)


ARRAY = [
    ("nan", lambda x: _set_first(x, math.nan), INVALID),
    ("+inf", lambda x: _set_first(x, math.inf), INVALID),
    ("-inf", lambda x: _set_first(x, -math.inf), INVALID),
    ("empty", lambda x: _as(x, lambda t: t[:0]), VALID),
    ("ndim+1", lambda x: _as(x, lambda t: t[None]), VALID),
    ("ndim-1", lambda x: _as(x, lambda t: t[0]), VALID),
    ("scalar", lambda x: 1.0, INVALID),
    ("integer", lambda x: _as(x, lambda t: t.round().long()), VALID),
    ("float16", lambda x: _t(x).half(), VALID),
    ("bfloat16", lambda x: _t(x).bfloat16(), VALID),
    ("float64", lambda x: _t(x).double(), F64),
    ("numpy<->tensor", _swap, VALID),
    ("string", lambda x: "abc", INVALID),
    ("None", lambda x: None, INVALID),
    # Booleans and strings are not numbers (NumPy parses "0.5" into one silently), and
    # a complex array must not lose its imaginary part.
    ("bool", lambda x: _as(x, lambda t: t > 0), INVALID),
    ("numeric strings", lambda x: _t(x).double().numpy().astype(str), INVALID),
    ("complex", lambda x: _as(x, lambda t: t.to(torch.complex128)), INVALID),
    (
        "x1e30",
        lambda x: _as(
            x, lambda t: t.double() * 1e30 if t.dtype == torch.float64 else t * 1e30
        ),
        VALID,
    ),
    ("x1e-30", lambda x: _as(x, lambda t: t * 1e-30), VALID),
]
# Scores of a normaliser: -inf marks a masked entry (valid); a whole row of it is not.
SCORES_ARRAY = [m for m in ARRAY if m[0] != "-inf"] + [
    (
        "row -inf",
        lambda x: _as(
            x,
            lambda t: (
                t.index_fill(-1, torch.arange(t.shape[-1]), -math.inf)
                if t.ndim == 1
                else torch.cat([torch.full_like(t[:1], -math.inf), t[1:]])
            ),
        ),
        INVALID,
    )
]
POSITIVE = [
    ("0", lambda v: 0.0, INVALID),
    ("-1", lambda v: -1.0, INVALID),
    ("nan", lambda v: math.nan, INVALID),
    ("inf", lambda v: math.inf, INVALID),
    ("string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("True", lambda v: True, INVALID),
    ("complex", lambda v: 1 + 0j, INVALID),
    ("1e30", lambda v: 1e30, VALID),
    ("1e-30", lambda v: 1e-30, VALID),
]
NONNEG = [("0", lambda v: 0.0, VALID)] + POSITIVE[1:]
INT = [
    ("0", lambda v: 0, INVALID),
    ("-1", lambda v: -1, INVALID),
    ("1.5", lambda v: 1.5, INVALID),
    ("string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("True", lambda v: True, INVALID),
]
INT0 = [("0", lambda v: 0, VALID)] + INT[1:]
CHOICE = [
    ("unknown", lambda v: "no-such-choice", INVALID),
    ("None", lambda v: None, INVALID),
    ("number", lambda v: 3, INVALID),
]
#: A True/False switch: truthy stand-ins are refused, not read by truthiness.
FLAG = [
    ("string", lambda v: "no", INVALID),
    ("int 1", lambda v: 1, INVALID),
    ("int 0", lambda v: 0, INVALID),
    ("None", lambda v: None, INVALID),
    ("numpy bool", lambda v: np.bool_(True), INVALID),
]
#: LayerNorm's ε: torch accepts any float; a negative or NaN one gives NaN.
EPS = [
    ("0", lambda v: 0.0, VALID),
    ("-1", lambda v: -1.0, INVALID),
    ("nan", lambda v: math.nan, INVALID),
    ("inf", lambda v: math.inf, INVALID),
    ("string", lambda v: "1e-5", INVALID),
    ("None", lambda v: None, INVALID),
    ("True", lambda v: True, INVALID),
    ("1e-30", lambda v: 1e-30, VALID),
    ("1e30", lambda v: 1e30, VALID),
]
#: A probability (dropout): [0, 1].
PROBABILITY = [
    ("0", lambda v: 0.0, VALID),
    ("1", lambda v: 1.0, VALID),
    ("-0.1", lambda v: -0.1, INVALID),
    ("1.5", lambda v: 1.5, INVALID),
    ("nan", lambda v: math.nan, INVALID),
    ("string", lambda v: "0.1", INVALID),
    ("None", lambda v: None, INVALID),
    ("True", lambda v: True, INVALID),
]
#: A seed: torch's generators take integers in [0, 2^64 - 1].
SEED = [
    ("1.5", lambda v: 1.5, INVALID),
    ("string", lambda v: "3", INVALID),
    ("True", lambda v: True, INVALID),
    ("-1", lambda v: -1, INVALID),
    ("2^64", lambda v: 2**64, INVALID),
    ("numpy int", lambda v: np.int64(3), VALID),
    ("2^64 - 1", lambda v: 2**64 - 1, VALID),
]
KINDS = {
    "flag": FLAG,
    "eps": EPS,
    "probability": PROBABILITY,
    "seed": SEED,
    "array": ARRAY,
    "scores": SCORES_ARRAY,
    "positive": POSITIVE,
    "nonneg": NONNEG,
    "int": INT,
    "int0": INT0,
    "choice": CHOICE,
}


@dataclasses.dataclass
class Spec:
    """How to call one public callable: ``call(**args)`` with valid ``args``.

    ``kinds`` of the attacked ones.

    ``optional`` arguments accept None; ``extra`` lists further
    ``(label, args_update, expectation, name)`` cases, e.g. mismatched sizes, whose
    error must name ``name``.
    """

    call: Callable[..., Any]
    args: Callable[[], dict]
    kinds: dict[str, str]
    optional: tuple[str, ...] = ()
    extra: list[tuple[str, Callable[[dict], dict], str, str]] = dataclasses.field(
        default_factory=list
    )
    #: arguments checked together (shapes, dtypes): an error naming any of them is clear
    group: tuple[str, ...] = ()
    #: {arg: labels} of mutations valid for this callable although invalid in general
    allow: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    #: {arg: labels} where an infinite output is the correctly rounded answer (e.g.
    #: exp(1e30)), or NaN the documented answer for an undefined result
    overflow: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    #: a scikit-learn estimator: scikit-learn's own validation messages count as clear
    sklearn: bool = False


@dataclasses.dataclass
class Outcome:
    callable: str
    arg: str
    mutation: str
    expectation: str
    verdict: str  # ok-output, clear, silent-nan, silent-wrong, cryptic
    detail: str = ""


def _leaves(out):
    if (
        isinstance(out, torch.nn.Module)
        or out is None
        or isinstance(out, (str, bool, torch.device))
    ):
        return
    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, np.ndarray):
        if np.issubdtype(out.dtype, np.number):
            yield out
    elif isinstance(out, (int, float)):
        yield np.asarray(out, dtype=float)
    elif isinstance(out, dict):
        for v in out.values():
            yield from _leaves(v)
    elif isinstance(out, (tuple, list)):
        for v in out:
            yield from _leaves(v)
    elif hasattr(out, "toarray"):  # SciPy sparse
        yield out.toarray()


def _finite(leaf) -> bool:
    if isinstance(leaf, torch.Tensor):
        leaf = leaf.detach()
        return bool(torch.isfinite(leaf).all()) if leaf.is_floating_point() else True
    return (
        bool(np.isfinite(leaf).all()) if np.issubdtype(leaf.dtype, np.inexact) else True
    )


def judge(
    name: str,
    spec: Spec,
    arg: str,
    label: str,
    args: dict,
    expectation: str,
    must_name: str,
) -> Outcome:
    """Run one mutated call and classify it."""
    names = (must_name, *spec.group) if must_name in spec.group else (must_name,)
    if spec.sklearn and must_name == "X_new":  # predict's (or transform's) X
        names += ("X",)
    try:
        out = spec.call(**args)
    except Exception as err:  # noqa: BLE001 - the type is what the battery looks at
        message = str(err)
        clear = isinstance(err, ValueError) and any(n in message for n in names)
        clear = clear or (spec.sklearn and _raised_by_sklearn_validation(err))
        verdict = "clear" if clear else "cryptic"
        return Outcome(
            name,
            arg,
            label,
            expectation,
            verdict,
            f"{type(err).__name__}: {message[:160]}",
        )
    finally:
        plt.close("all")
    if expectation == INVALID:
        return Outcome(
            name,
            arg,
            label,
            expectation,
            "silent-wrong",
            "accepted an invalid argument",
        )
    leaves = list(_leaves(out))
    if not all(_finite(leaf) for leaf in leaves) and label not in spec.overflow.get(
        arg, ()
    ):
        return Outcome(
            name, arg, label, expectation, "silent-nan", "output holds NaN or inf"
        )
    if expectation == F64 and any(
        isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in leaves
    ):
        return Outcome(
            name,
            arg,
            label,
            expectation,
            "silent-wrong",
            "float64 input came back as float32",
        )
    return Outcome(name, arg, label, expectation, "ok-output")


def _raised_by_sklearn_validation(err: BaseException) -> bool:
    """Whether scikit-learn's input validation raised ``err`` (standard messages)."""
    tb = err.__traceback__
    while tb is not None:
        if "sklearn/utils/validation" in tb.tb_frame.f_code.co_filename.replace(
            "\\", "/"
        ):
            return True
        tb = tb.tb_next
    return False


def cases(specs: dict[str, Spec]):
    """Every (name, spec, arg, label, mutated args, expectation, name in the error)."""
    for name, spec in specs.items():
        yield name, spec, "-", "baseline", spec.args(), VALID, "-"
        for arg, kind in spec.kinds.items():
            for label, mutate, expectation in KINDS[kind]:
                if (
                    label == "None" and arg in spec.optional
                ) or label in spec.allow.get(arg, ()):
                    expectation = VALID
                args = spec.args()
                args[arg] = mutate(args[arg])
                yield name, spec, arg, label, args, expectation, arg
        for label, update, expectation, must_name in spec.extra:
            yield (
                name,
                spec,
                must_name,
                label,
                update(spec.args()),
                expectation,
                must_name,
            )


def run(specs: dict[str, Spec]) -> list[Outcome]:
    return [
        judge(name, spec, arg, label, args, exp, must)
        for name, spec, arg, label, args, exp, must in cases(specs)
    ]


def failed(outcome: Outcome) -> bool:
    return outcome.verdict in ("silent-nan", "silent-wrong", "cryptic")


def counts(outcomes: list[Outcome]) -> Counter:
    c = Counter(o.verdict for o in outcomes)
    c["calls"] = len(outcomes)
    return c


# --------------------------------------------------------------------------- the specs
def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _rand(*shape, seed=0):
    return torch.rand(*shape, generator=_g(seed))


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=_g(seed))


def _probs(n=3, m=5):
    return torch.softmax(_randn(n, m, seed=4), -1)


ALPHA = [
    ("0.5", lambda v: 0.5, INVALID),
    ("nan", lambda v: math.nan, INVALID),
    ("string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("inf", lambda v: math.inf, VALID),
    ("1e30", lambda v: 1e30, VALID),
    ("1+1e-12", lambda v: 1 + 1e-12, VALID),
]


REAL = [
    ("nan", lambda v: math.nan, INVALID),
    ("inf", lambda v: math.inf, INVALID),
    ("string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("1e30", lambda v: 1e30, VALID),
    ("-1e30", lambda v: -1e30, VALID),
    ("True", lambda v: True, INVALID),
]


KINDS["alpha"] = ALPHA


KINDS["real"] = REAL


ALPHA12 = [
    ("3", lambda v: 3, INVALID),
    ("1.5", lambda v: 1.5, INVALID),
    ("string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("True", lambda v: True, INVALID),  # equals 1 in Python, but a flag, not an α
]


KINDS["alpha12"] = ALPHA12


NOT_CALLABLE = [
    ("string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("number", lambda v: 3, INVALID),
]


KINDS["callable"] = NOT_CALLABLE


def _spd(n=3, seed=5):
    a = _randn(n, 2, 2, seed=seed)
    return a @ a.transpose(-1, -2) * 0.01 + 0.002 * torch.eye(2)


def _rbf1(n=6):
    B = importlib.import_module("attnlib.continuous.basis")
    return B.GaussianRBF(torch.linspace(0, 1, n), 0.02)


def _rbf2(n_side=3):
    B = importlib.import_module("attnlib.continuous.basis")
    return B.GaussianRBF.grid(n_side, 0.02)


BASIS = [
    ("a string", lambda v: "abc", INVALID),
    ("None", lambda v: None, INVALID),
    ("an array", lambda v: torch.ones(3), INVALID),
]


KINDS["basis"] = BASIS


LABELS = [
    ("empty", lambda y: y[:0], INVALID),
    ("None", lambda y: None, INVALID),
    ("string", lambda y: "abc", INVALID),
    ("nan", lambda y: np.where(np.arange(len(y)) == 0, np.nan, y), INVALID),
    ("2-D", lambda y: np.stack([y, y], 1), INVALID),
    ("floats", lambda y: y + 0.5, VALID),
    ("strings", lambda y: np.array([f"c{v}" for v in y]), VALID),
]


KINDS["labels"] = LABELS


def _subspace_data():
    Dt = importlib.import_module("attnlib.data")
    data = Dt.union_of_subspaces(2, 2, 4, 6, noise=0.01, seed=0)
    return data.X, data.labels


def _model_task_cases(model_factory_name="model", task_name="task"):
    return [
        ("task a tuple", lambda a: a | {task_name: (1, 2)}, INVALID, task_name),
        ("task None", lambda a: a | {task_name: None}, INVALID, task_name),
        (
            "model a string",
            lambda a: a | {model_factory_name: "abc"},
            INVALID,
            model_factory_name,
        ),
    ]
