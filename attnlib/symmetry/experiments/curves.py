"""Chapter 06's learning curves: fit every learner at growing training-set sizes.

A learner with a ``fit`` method is fitted in closed form; any other is tuned on a
validation split over ``GRID`` and refitted on every sequence (:func:`fit_tuned`).
:func:`sample_efficiency` runs the sweep over seeds, sizes and learners, and
:func:`sequences_needed` reads off a curve the training-set size at which it reaches a
given error.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from ...errors import TrainingDivergedError
from ...functional import output_of
from ...training import evaluating, train
from ...utils import check_int, check_positive, device_or_cpu
from ...utils.boundary import checking, public, trusted
from ...utils.validation import SEED_MAX
from .learners import CONTROLS, LEARNERS
from .teachers import knowledge_task, make_teacher, relative_error

__all__ = [
    "GRID",
    "fit_and_score",
    "fit_tuned",
    "sample_efficiency",
    "sequences_needed",
]

#: The validation grid every trained learner is tuned on: Adam's learning rate, its
#: (coupled, L2) weight decay, and the number of full-batch steps.
GRID = {"lr": (1e-2, 3e-2), "weight_decay": (0.0, 1e-3), "n_steps": (100, 300)}


def _mse_loss(model: nn.Module, batch) -> torch.Tensor:
    """The training loss: mean squared error of ``model`` on ``batch = (X, Y)``."""
    return ((output_of(model(batch[0])) - batch[1]) ** 2).mean()


def _train_mse(model: nn.Module, batches, *, progress: bool = False, **settings):
    """:func:`attnlib.training.train` on the mean squared error; the losses."""
    return train(model, _mse_loss, batches, progress=progress, **settings)


def _mse(model, x, y) -> float:
    """The mean squared error of ``model`` on ``(x, y)``, scored in eval mode."""
    with evaluating(model):
        return float(((output_of(model(x)) - y) ** 2).mean())


def _test_scores(model, tests: dict) -> dict:
    """:func:`relative_error` on each named ``(X, Y)``, NaN where X does not fit."""
    scores = {}
    for name, (xt, yt) in tests.items():
        try:
            scores[name] = relative_error(model, xt, yt)
        except ValueError:
            scores[name] = float("nan")
    return scores


def fit_and_score(
    model: nn.Module,
    train_data: tuple,
    test_data: dict,
    *,
    n_steps: int = 300,
    lr: float = 1e-2,
    weight_decay: float = 0.0,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Fit ``model`` to ``train_data = (X, Y)``, then score it.

    A model with a ``fit`` method (the baselines) is fitted in closed form; any other by
    full-batch mean squared error through :func:`attnlib.training.train`. ``test_data``
    maps a name to ``(X, Y)``; the result maps ``"train"`` to the final training error
    relative to the target power and each test name to :func:`relative_error`, or NaN
    where the model cannot take that input (a fixed-length model on another sequence
    length).

    Parameters
    ----------
    model : nn.Module
        A learner (see ``LEARNERS``).
    train_data : tuple of tensor, each of shape (n_sequences, length, embed_dim)
        ``(X, Y)``.
    test_data : dict
        Name to ``(X, Y)``.
    n_steps, lr, weight_decay : int, float, float
        The training loop's (:func:`attnlib.training.train`).
    seed : int
        Seeds the training.
    progress : bool
        Show the training's progress bar.

    Returns
    -------
    dict
        ``"train"`` and each test name to a relative error.
    """
    seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    x, y = train_data
    tests = {f"test_data[{name!r}]": pair for name, pair in test_data.items()}
    _check_finite({"train_data": train_data, **tests})
    if hasattr(model, "fit"):
        model.fit(x, y)
        final = _mse(model, x, y)
    else:
        final = _train_mse(
            model,
            [(x, y)],
            n_steps=n_steps,
            lr=lr,
            weight_decay=weight_decay,
            seed=seed,
            progress=progress,
        )[-1]
    return {"train": final / float((y**2).mean()), **_test_scores(model, test_data)}


def _check_finite(sets: dict) -> None:
    """Refuse a data set holding NaN or inf: its error would be NaN, not a score."""
    for name, pair in sets.items():
        for part, t in zip("XY", pair):
            if not torch.isfinite(torch.as_tensor(t)).all():
                raise ValueError(
                    f"{name} must be finite, but its {part} holds NaN or inf"
                )


def _checkpoints(grid: dict) -> list[int]:
    """The sorted step counts of ``grid``, its settings checked (see :func:`fit_tuned`).

    The learning rates and weight decays are checked here, before any training: inside
    :func:`sample_efficiency`'s ``trusted()`` block the training loop trusts them.
    """
    if set(grid) != {"lr", "weight_decay", "n_steps"} or not all(grid.values()):
        raise ValueError(
            "grid must map lr, weight_decay and n_steps to non-empty sequences, "
            f"got {grid!r}"
        )
    for lr in grid["lr"]:
        check_positive(lr, "lr")
    for weight_decay in grid["weight_decay"]:
        check_positive(weight_decay, "weight_decay", allow_zero=True)
    return sorted({check_int(n, "n_steps") for n in grid["n_steps"]})


def _split(x, y, val_fraction: float) -> tuple[tuple, tuple]:
    """``(x, y)`` split into the sequences fitted and the last ones, held out."""
    val_fraction = check_positive(val_fraction, "val_fraction")
    if not val_fraction < 1 or len(x) < 2:
        raise ValueError(
            "val_fraction must be below 1 and train_data must hold at least two "
            f"sequences, got {val_fraction} and {len(x)}"
        )
    n_val = max(1, math.ceil(val_fraction * len(x)))
    return (x[:-n_val], y[:-n_val]), (x[-n_val:], y[-n_val:])


def _fresh(make: Callable[[], nn.Module], seed: int) -> nn.Module:
    """``make()`` after seeding PyTorch's global generators with ``seed``."""
    torch.manual_seed(seed)
    return make()


def _validation_curve(make, fit, held, checkpoints, *, seed, device, **opt) -> dict:
    """Relative validation error per checkpoint of one setting; empty if it diverged."""
    power = float((held[1] ** 2).mean())
    model, seen = _fresh(make, seed), {}

    def batches(step):
        if step in checkpoints:  # the model after `step` updates
            seen[step] = _mse(model, *held) / power
        return fit

    try:
        _train_mse(
            model, batches, n_steps=checkpoints[-1], seed=seed, device=device, **opt
        )
    except TrainingDivergedError:
        return {}
    seen[checkpoints[-1]] = _mse(model, *held) / power
    return seen


def fit_tuned(
    make: Callable[[], nn.Module],
    train_data: tuple,
    *,
    grid: dict | None = None,
    val_fraction: float = 0.25,
    seed: int = 0,
) -> tuple[nn.Module, dict]:
    """Tune a trained learner on a validation split, then refit it on all the data.

    The last ``ceil(val_fraction · n)`` sequences (at least one) are held out. For each
    learning rate and weight decay of ``grid`` a fresh model (``make()`` after seeding
    with ``seed``) is trained on the rest for ``max(grid["n_steps"])`` full-batch Adam
    steps, and its validation error is read after each number of steps in
    ``grid["n_steps"]``. The setting with the lowest validation error is then trained
    from the same initialisation on every sequence.

    Parameters
    ----------
    make : callable
        Builds an untrained model.
    train_data : tuple of tensor, each of shape (n_sequences, length, embed_dim)
        ``(X, Y)``, at least two sequences.
    grid : dict, optional
        ``"lr"``, ``"weight_decay"`` and ``"n_steps"`` to sequences of values; ``GRID``
        by default.
    val_fraction : float
        The share held out, in (0, 1).
    seed : int
        Seeds every initialisation and training run.

    Returns
    -------
    model : nn.Module
        Trained on every sequence with the chosen setting.
    chosen : dict
        ``lr``, ``weight_decay``, ``n_steps`` and ``val`` (the validation mean squared
        error relative to the held-out targets' power).
    """
    grid = GRID if grid is None else grid
    checkpoints = _checkpoints(grid)
    seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    x, y = train_data
    fit, held = _split(x, y, val_fraction)
    best = _grid_search(make, fit, held, grid, checkpoints, seed=seed, device=x.device)
    model = _fresh(make, seed)
    settings = {key: best[key] for key in ("n_steps", "lr", "weight_decay")}
    _train_mse(model, [(x, y)], seed=seed, device=x.device, **settings)
    return model, best


def _grid_search(make, fit, held, grid, checkpoints, *, seed, device) -> dict:
    """The setting of ``grid`` (and checkpoint) with the lowest validation error."""
    best = {"val": math.inf}
    for lr in grid["lr"]:
        for weight_decay in grid["weight_decay"]:
            opt = dict(lr=lr, weight_decay=weight_decay)
            curve = _validation_curve(
                make, fit, held, checkpoints, seed=seed, device=device, **opt
            )
            for n_steps, val in curve.items():
                if val < best["val"]:
                    best = dict(**opt, n_steps=n_steps, val=val)
    if not math.isfinite(best["val"]):
        raise TrainingDivergedError("every setting of the grid diverged; lower lr")
    return best


@contextlib.contextmanager
def _one_thread():
    """PyTorch on one thread in the block (the learners are too small for more)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _test_sets(labeller, seed: int, lengths, n_test: int) -> dict:
    """Clean test sets labelled by seed ``seed``'s teacher: ``test_n{L}`` per length."""
    return {
        f"test_n{n}": knowledge_task(labeller, n_test, n, seed=10_000 + 100 * seed + n)
        for n in lengths
    }


def _fit_learner(name: str, shape, where, data, *, seed: int, grid) -> tuple:
    """Learner ``name`` fitted in closed form, or tuned by :func:`fit_tuned`."""

    def make():
        return {**LEARNERS, **CONTROLS}[name](*shape).to(where)

    model = _fresh(make, seed)
    if not hasattr(model, "fit"):
        return fit_tuned(make, data, grid=grid, seed=seed)
    model.fit(*data)
    return model, dict(lr=None, weight_decay=None, n_steps=None, val=None)


@public
def sample_efficiency(
    sizes,
    seeds,
    *,
    teacher: str = "quadratic",
    learners=("MLP", "MultiHeadAttention", "KnowledgeAttention"),
    embed_dim: int = 8,
    length: int = 6,
    n_knowledge: int = 4,
    noise: float = 0.1,
    test_lengths=(3, 6, 12, 24),
    n_test: int = 256,
    grid: dict | None = None,
    progress: bool = True,
    device: torch.device | str | None = None,
) -> list[dict]:
    """Learning curves of several learners on a task that is equivariant with knowledge.

    For each seed a random teacher (:func:`make_teacher` with ``kernel=teacher`` and
    that seed) labels Gaussian sequences of ``length`` tokens, with label noise
    ``noise``; the seed also draws the training data and every initialisation. For each
    training-set size in ``sizes``, every learner named in ``learners`` (keys of
    ``LEARNERS``) is fitted (in closed form, or by :func:`fit_tuned` on ``grid``) and
    scored on clean test sequences of every length in ``test_lengths``.

    Parameters
    ----------
    sizes, seeds : sequence of int
        Training-set sizes (at least two sequences each) and seeds.
    teacher : str
        The teacher's kernel (one of ``TEACHERS``).
    learners : sequence of str
        Keys of ``LEARNERS`` or ``CONTROLS``.
    embed_dim, length, n_knowledge : int
        Token size, training sequence length and the teacher's knowledge vectors.
    noise : float
        Label noise of the training targets.
    test_lengths : sequence of int
        Lengths of the clean test sequences.
    n_test : int
        Test sequences per length.
    grid : dict, optional
        The validation grid of the trained learners (``GRID`` by default).
    progress : bool
        Show a progress bar over the fits.
    device : str or torch.device, optional
        Where the teacher, the data, the learners and the scores live (default: the
        CPU). Draws are made on the CPU and moved, so a seed gives the same data on
        every device.

    Returns
    -------
    list of dict
        One row per fit: ``teacher``, ``model``, ``n_train``, ``seed``, ``n_params``
        (fitted numbers), ``seconds``, ``train`` (final training loss relative to the
        target power), ``lr``, ``weight_decay``, ``n_steps`` and ``val`` (the chosen
        setting; None for closed-form learners, whose ``alpha`` is ridge's penalty) and
        ``test_n{L}`` (the :func:`relative_error` at length ``L``; NaN where the model
        cannot take it).

    Implements
    ----------
    This book's test of whether the form of the symmetry paper makes learning cheaper;
    the paper itself has no experiment.
    """
    sizes = [check_int(s, "sizes", minimum=2) for s in sizes]
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    test_lengths = [check_int(n, "test_lengths") for n in test_lengths]
    if checking():
        known = (*LEARNERS, *CONTROLS)
        unknown = [name for name in learners if name not in known]
        if unknown or not learners:
            raise ValueError(
                f"learners must be names from {known}, got {list(learners)}"
            )
        _checkpoints(GRID if grid is None else grid)  # before any fit
    where = device_or_cpu(device)
    shape = (length, embed_dim, n_knowledge)
    jobs = [(seed, size, name) for seed in seeds for size in sizes for name in learners]
    rows, labellers = [], {}
    # Its learners, losses and tasks are the library's own: the training loops trust
    # the settings checked above.
    with _one_thread(), trusted():
        for seed, size, name in tqdm(
            jobs, desc="learning curves", disable=not progress, mininterval=0.5
        ):
            if seed not in labellers:  # one seed's teacher and tests at a time
                labeller = make_teacher(
                    embed_dim, n_knowledge, kernel=teacher, seed=seed
                ).to(where)
                tests = _test_sets(labeller, seed, test_lengths, n_test)
                labellers = {seed: (labeller, tests)}
            labeller, tests = labellers[seed]
            x, y = knowledge_task(labeller, size, length, noise=noise, seed=seed)
            start = time.perf_counter()
            model, chosen = _fit_learner(
                name, shape, where, (x, y), seed=seed, grid=grid
            )
            scores = {"train": _mse(model, x, y) / float((y**2).mean())}
            scores.update(_test_scores(model, tests))
            rows.append(
                {
                    "teacher": teacher,
                    "model": name,
                    "n_train": size,
                    "seed": seed,
                    "n_params": sum(p.numel() for p in model.parameters()),
                    "seconds": time.perf_counter() - start,
                    "alpha": getattr(model, "alpha_", None),
                    **chosen,
                    **scores,
                }
            )
    return rows


def sequences_needed(sizes, errors, target: float) -> float:
    """Training-set size at which a learning curve reaches ``target``.

    By log-log interpolation.

    Parameters
    ----------
    sizes : array-like, shape (m,)
        Training-set sizes, increasing.
    errors : array-like, shape (m,)
        The (median) error at each size, decreasing.
    target : float
        The error to reach.

    Returns
    -------
    float
        The interpolated size; NaN if the curve never reaches ``target`` (or starts
        below it).
    """
    sizes, errors = np.asarray(sizes, dtype=float), np.asarray(errors, dtype=float)
    if sizes.ndim != 1 or sizes.shape != errors.shape or len(sizes) < 2:
        raise ValueError("sizes and errors must be 1-D of the same length >= 2")
    for values, name in ((sizes, "sizes"), (errors, "errors")):
        if not (np.all(np.isfinite(values)) and np.all(values > 0)):
            raise ValueError(f"{name} must be finite and positive (a log-log curve)")
    if np.any(np.diff(errors) >= 0):
        raise ValueError("errors must decrease with the size")
    target = check_positive(target, "target")
    if not errors[-1] <= target <= errors[0]:
        return float("nan")
    return float(
        np.exp(np.interp(np.log(target), np.log(errors[::-1]), np.log(sizes[::-1])))
    )
