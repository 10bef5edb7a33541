"""The leave-one-out choice of :class:`~attnlib.kernel_regression.NadarayaWatson`'s
bandwidth: the candidates, and each one's leave-one-out error.

The built-in kernels score every candidate in one streamed pass
(:mod:`attnlib.kernel_regression._loo_sums`); a callable kernel, one masked attention
call per candidate. A point of sample weight ``w`` counts as ``w`` copies of it, so
leaving it out leaves ``w - 1`` copies in: the choice on integer weights is the choice
on the repeated data.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import EmptySupportError
from ..utils import check_positive
from ._loo_sums import loo_sums
from .core import Kernel, _loo

__all__ = [
    "_candidates",
    "_default_bandwidths",
    "_loo_errors",
    "_ratio",
    "_weighted_values",
]


def _default_bandwidths(X: np.ndarray, n: int = 30, weights=None) -> np.ndarray:
    """A geometric grid around the median pairwise distance (of at most 1000 points).

    With ``weights``, the median of the distances that ``w`` copies of each point would
    have (pair ``(i, j)`` counted ``w_i w_j`` times).
    """
    from scipy.spatial.distance import pdist

    pick = np.random.default_rng(0).permutation(len(X))[:1000]
    distances = pdist(X[pick])
    positive = distances > 0
    if not positive.any():
        return np.geomspace(1e-2, 3.0, n)
    if weights is None:
        return float(np.median(distances[positive])) * np.geomspace(1e-2, 3.0, n)
    w = weights[pick].astype(np.float64)  # w_i w_j overflows float32 from 1.8e19
    pairs = np.multiply.outer(w, w)[np.triu_indices(len(w), 1)][positive]
    order = np.argsort(distances[positive], kind="stable")
    sorted_d, cum = distances[positive][order], np.cumsum(pairs[order])
    if cum[-1] <= 0:  # every pair with a distance has a zero weight
        return np.geomspace(1e-2, 3.0, n)
    # np.median of the repeated distances: the mean of its middle one or two
    at = lambda k: sorted_d[min(np.searchsorted(cum, k, side="right"), len(cum) - 1)]
    scale = (at(np.ceil(cum[-1] / 2) - 1) + at(np.floor(cum[-1] / 2))) / 2
    return float(scale) * np.geomspace(1e-2, 3.0, n)


def _candidates(bandwidths, X: np.ndarray, weights=None) -> np.ndarray:
    """The checked candidates of ``"loo"`` (default: :func:`_default_bandwidths`)."""
    grid = (
        _default_bandwidths(X, weights=weights)
        if bandwidths is None
        else np.asarray(bandwidths, dtype=float).ravel()
    )
    if grid.size == 0:
        raise ValueError("bandwidths must hold at least one candidate")
    bad = ~(np.isfinite(grid) & (grid > 0))
    if bad.any():  # one pass over the candidates, then the check's message
        check_positive(float(grid[bad][0]), "bandwidths")
    return grid


def _loo_errors(X, y, values, weights, kernel: Kernel, grid) -> np.ndarray:
    """The leave-one-out mean squared error of each bandwidth of ``grid``.

    On checked arrays: ``values`` are :func:`_weighted_values`. A built-in kernel scores
    every candidate in one streamed pass over the pairs (``_loo_sums``, memory
    ``O(n · len(grid))``); a callable one, one masked attention call per candidate.
    """
    if callable(kernel):
        keys, tensors = torch.from_numpy(X), torch.from_numpy(values)
        return np.array(
            [_loo_mse(keys, tensors, y, weights, kernel, float(h)) for h in grid]
        )
    if weights is None:  # the ratio's denominator: a column of ones
        values = np.concatenate([values, np.ones((len(X), 1), X.dtype)], axis=1)
        twins = None
    else:  # weight w counts as w copies: leaving one out leaves w - 1 of it in
        twins = np.maximum(weights - 1, 0)
    sums = loo_sums(
        X,
        values,
        kernel,
        grid,
        torch.get_num_threads(),
        None if twins is None else twins > 0,
    )
    if twins is not None:  # the copies left in, at distance 0 (κ(0) = 1)
        sums += (
            twins[:, None, None]
            * np.c_[y.reshape(len(y), -1), np.ones(len(y))][:, None]
        )
    total = sums[..., -1]  # (n, B): zero where no other point counts
    defined = (total > 0).all(0)
    pred = sums[..., :-1] / np.where(total > 0, total, 1.0)[..., None]
    errors = ((pred - y.reshape(len(y), 1, -1)) ** 2).mean(2)
    return np.where(defined, np.average(errors, axis=0, weights=weights), np.inf)


def _loo_mse(keys, values, y, weights, kernel: Kernel, h: float) -> float:
    try:
        sums = _loo(keys, values, kernel, h).numpy()
    except EmptySupportError:  # a compact kernel left a point without neighbours
        return float("inf")
    except ValueError as err:  # the inputs overflow the dtype
        raise ValueError(f"X: {err}") from err
    pred = _ratio(sums, weights)
    if pred is None:  # a point whose every other neighbour weighs zero
        return float("inf")
    errors = ((pred - y.reshape(len(y), -1)) ** 2).mean(1)
    return float(np.average(errors, weights=weights))


def _weighted_values(y: np.ndarray, weights) -> np.ndarray:
    """The values averaged: ``y`` as columns, and with weights ``[w y, w]``.

    Kernel averages of ``w y`` and of ``w`` share their denominator, so their ratio
    is the weighted average ``Σ K w y / Σ K w``.
    """
    y = y.reshape(len(y), -1)
    if weights is None:
        return np.require(y, requirements="W")
    return np.concatenate([weights[:, None] * y, weights[:, None]], axis=1)


def _ratio(sums: np.ndarray, weights):
    """Predictions from the averages of :func:`_weighted_values` (None if undefined)."""
    if weights is None:
        return sums
    total = sums[:, -1:]
    if not (total > 0).all():
        return None
    return sums[:, :-1] / total
