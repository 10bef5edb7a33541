"""Chapter 06's learning curves: fit every learner at growing training-set sizes.

A learner with a ``fit`` method is fitted in closed form; any other is tuned on a
validation split over ``GRID`` and refitted on every sequence (:func:`fit_tuned`).
:func:`sample_efficiency` runs the sweep over seeds, sizes and learners, and
:func:`sequences_needed` reads off a curve the training-set size at which it reaches a
given error.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from ...attention import output_of
from ...errors import TrainingDivergedError
from ...training import evaluating, train
from ...utils import check_int, check_positive, device_or_cpu
from .learners import LEARNERS
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
    seed = check_int(seed, "seed", minimum=0)
    x, y = train_data
    if hasattr(model, "fit"):
        model.fit(x, y)
        with evaluating(model):
            final = float(((output_of(model(x)) - y) ** 2).mean())
    else:

        def loss(m, batch):
            return ((output_of(m(batch[0])) - batch[1]) ** 2).mean()

        history = train(
            model,
            loss,
            [(x, y)],
            n_steps=n_steps,
            lr=lr,
            weight_decay=weight_decay,
            seed=seed,
            progress=progress,
        )
        final = history[-1]
    scores = {"train": final / float((y**2).mean())}
    for name, (xt, yt) in test_data.items():
        try:
            scores[name] = relative_error(model, xt, yt)
        except ValueError:
            scores[name] = float("nan")
    return scores


def _mse(model, x, y) -> float:
    with evaluating(model):
        return float(((output_of(model(x)) - y) ** 2).mean())


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
    if set(grid) != {"lr", "weight_decay", "n_steps"} or not all(grid.values()):
        raise ValueError(
            "grid must map lr, weight_decay and n_steps to non-empty sequences, "
            f"got {grid!r}"
        )
    checkpoints = sorted({check_int(n, "n_steps") for n in grid["n_steps"]})
    seed = check_int(seed, "seed", minimum=0)
    x, y = train_data
    val_fraction = check_positive(val_fraction, "val_fraction")
    if not val_fraction < 1 or len(x) < 2:
        raise ValueError(
            "val_fraction must be below 1 and train_data must hold at least two "
            f"sequences, got {val_fraction} and {len(x)}"
        )
    n_val = max(1, math.ceil(val_fraction * len(x)))
    fit, held = (x[:-n_val], y[:-n_val]), (x[-n_val:], y[-n_val:])
    power = float((held[1] ** 2).mean())

    def loss(m, batch):
        return ((output_of(m(batch[0])) - batch[1]) ** 2).mean()

    best = {"val": math.inf}
    for lr in grid["lr"]:
        for weight_decay in grid["weight_decay"]:
            torch.manual_seed(seed)
            model = make()
            seen = {}

            def batches(step, model=model, seen=seen):
                if step in checkpoints:  # the model after `step` updates
                    seen[step] = _mse(model, *held) / power
                return fit

            try:
                train(
                    model,
                    loss,
                    batches,
                    n_steps=checkpoints[-1],
                    lr=lr,
                    weight_decay=weight_decay,
                    seed=seed,
                    device=x.device,
                    progress=False,
                )
            except TrainingDivergedError:
                continue
            seen[checkpoints[-1]] = _mse(model, *held) / power
            for n_steps, val in seen.items():
                if val < best["val"]:
                    best = dict(
                        lr=lr, weight_decay=weight_decay, n_steps=n_steps, val=val
                    )
    if not math.isfinite(best["val"]):
        raise TrainingDivergedError("every setting of the grid diverged; lower lr")
    torch.manual_seed(seed)
    model = make()
    train(
        model,
        loss,
        [(x, y)],
        n_steps=best["n_steps"],
        lr=best["lr"],
        weight_decay=best["weight_decay"],
        seed=seed,
        device=x.device,
        progress=False,
    )
    return model, best


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
        Keys of ``LEARNERS``.
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
    This book's test of whether the form of seed 003 makes learning cheaper; the paper
    itself has no experiment.
    """
    sizes = [check_int(s, "sizes", minimum=2) for s in sizes]
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    unknown = [name for name in learners if name not in LEARNERS]
    if unknown or not learners:
        raise ValueError(
            f"learners must be names from {tuple(LEARNERS)}, got {list(learners)}"
        )
    test_lengths = [check_int(n, "test_lengths") for n in test_lengths]
    where = device_or_cpu(device)
    rows = []
    jobs = [(seed, size, name) for seed in seeds for size in sizes for name in learners]
    # These models are so small that extra threads only add synchronisation overhead.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    labellers = {}
    try:
        for seed, size, name in tqdm(
            jobs, desc="learning curves", disable=not progress, mininterval=0.5
        ):
            if seed not in labellers:
                labeller = make_teacher(
                    embed_dim, n_knowledge, kernel=teacher, seed=seed
                ).to(where)
                tests = {
                    f"test_n{n}": knowledge_task(
                        labeller, n_test, n, seed=10_000 + 100 * seed + n
                    )
                    for n in test_lengths
                }
                labellers = {seed: (labeller, tests)}
            labeller, tests = labellers[seed]
            x, y = knowledge_task(labeller, size, length, noise=noise, seed=seed)
            make = LEARNERS[name]
            torch.manual_seed(seed)
            model = make(length, embed_dim, n_knowledge).to(where)
            start = time.perf_counter()
            chosen = dict(lr=None, weight_decay=None, n_steps=None, val=None)
            if hasattr(model, "fit"):
                model.fit(x, y)
            else:
                model, chosen = fit_tuned(
                    lambda make=make: make(length, embed_dim, n_knowledge).to(where),
                    (x, y),
                    grid=grid,
                    seed=seed,
                )
            scores = {"train": _mse(model, x, y) / float((y**2).mean())}
            for test, (xt, yt) in tests.items():
                try:
                    scores[test] = relative_error(model, xt, yt)
                except ValueError:
                    scores[test] = float("nan")
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
    finally:
        torch.set_num_threads(threads)
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
