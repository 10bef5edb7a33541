"""Leave-one-out kernel sums for every candidate bandwidth in one streamed pass.

An engine (internal fast path) of :class:`attnlib.kernel_regression.NadarayaWatson`'s
``bandwidth="loo"``. Choosing among ``B`` bandwidths by leave-one-out asks, for every
training point ``i`` and every candidate ``h_b``, for the sums
``Σ_{j≠i} κ_b(x_i, x_j) [v_j]`` (``v_j`` = the target and a one, or with sample weights
``[w_j y_j, w_j]``). Formed candidate by candidate as masked attention, that is ``B``
matrices of ``n × n``; here each pair's distance is computed once, in a block of keys
that stays in cache, and turned into the ``B`` kernel values there: memory is the
``n × B × m`` sums and one block, and the distances are computed ``2 n²`` times, not
``B n²``.

The exponential kernels are shifted by each point's distance to its nearest other
point (computed in a first pass over the same blocks), so that the nearest key weighs
one and a tiny bandwidth gives the nearest-neighbour limit, never 0/0, as the softmax
path does. Everything runs in float64, whatever the input's dtype: the sums only rank
candidates.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ..utils.fastexp import JIT_OPTIONS as _FAST
from ..utils.fastexp import fast_exp
from ._kernelsums import _block_distances

__all__ = ["loo_sums"]

#: The kernels the engine streams: the exponential ones first (``kind < 2``).
KINDS = ("gaussian", "laplace", "epanechnikov", "biweight", "triweight", "boxcar")
_BLOCK = 512


@numba.njit(**_FAST)
def _weights(dist, m, kind, c, shift, w):
    """``w[:m]`` = the kernel of the block's distances for one coefficient ``c``."""
    if kind < 2:  # exp(-c (D - D_min)): D is ||.||² (gaussian) or ||.||₁ (laplace)
        for j in range(m):  # below e^-700 a weight is 0, as it underflows in torch
            a = c * (shift - dist[j])
            w[j] = fast_exp(a) if a > -700.0 else 0.0
    elif kind == 5:  # boxcar: 1[||u||² <= 1], u = (x - x_j) / h, c = 1 / h²
        for j in range(m):
            w[j] = 1.0 if dist[j] * c <= 1.0 else 0.0
    else:  # (1 - ||u||²)₊ to the power 1, 2 or 3
        for j in range(m):
            w[j] = max(0.0, 1.0 - dist[j] * c) ** (kind - 1)


@numba.njit(**_FAST)
def _loo_rows(x, xt, vt, coef, kind, twin, start_row, stop_row, out):
    """``out[i, b, v] = Σ_{j≠i} κ_b(x_i, x_j) vt[v, j]`` for rows ``start..stop``.

    ``x`` (n, d) and ``xt`` (d, n) hold the points, ``vt`` (m, n) the values, ``coef``
    (B,) each candidate's coefficient; the self pair weighs 0. A row with ``twin[i]``
    keeps copies of itself in (at distance 0): its exponentials are shifted by 0.
    """
    n, m, nb = xt.shape[1], vt.shape[0], coef.shape[0]
    l1 = kind == 1
    dist = np.empty(_BLOCK)
    w = np.empty(_BLOCK)
    for i in range(start_row, stop_row):
        q = x[i]
        low = 0.0 if twin[i] else np.inf
        if (
            kind < 2 and not twin[i]
        ):  # pass 1: the nearest other point, the shift of the exponentials
            for start in range(0, n, _BLOCK):
                stop = min(n, start + _BLOCK)
                _block_distances(q, xt, start, stop, l1, dist)
                if start <= i < stop:
                    dist[i - start] = np.inf
                for j in range(stop - start):
                    low = min(low, dist[j])
        for start in range(0, n, _BLOCK):
            stop = min(n, start + _BLOCK)
            mm = stop - start
            _block_distances(q, xt, start, stop, l1, dist)
            for b in range(nb):
                _weights(dist, mm, kind, coef[b], low, w)
                if start <= i < stop:
                    w[i - start] = 0.0  # exactly: the point itself is left out
                for v in range(m):
                    acc = 0.0
                    vv = vt[v, start:stop]
                    for j in range(mm):
                        acc += w[j] * vv[j]
                    out[i, b, v] += acc


def loo_sums(X, values, kind: str, bandwidths, threads: int = 1, twin=None):
    """The leave-one-out kernel sums of every candidate bandwidth, streamed.

    For checked arrays (the estimator's ``fit`` checked them).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Training inputs, finite.
    values : ndarray, shape (n, m)
        What is summed: the targets and a column of ones, or ``[w y, w]``.
    kind : str
        One of :data:`KINDS`.
    bandwidths : ndarray, shape (B,)
        Positive candidates ``h``.
    threads : int
        Worker threads, each taking a contiguous share of the points.
    twin : ndarray of bool, shape (n,), optional
        Points whose left-out sums will be given copies of themselves (by the caller):
        their exponentials are shifted by the distance 0 to those copies.

    Returns
    -------
    ndarray, shape (n, B, m), float64
        ``sums[i, b] = Σ_{j≠i} κ((x_i - x_j) / h_b) values[j]``, the exponential
        kernels multiplied by ``exp(c_b D_i)``, ``D_i`` the distance from ``x_i`` to its
        nearest other point, or 0 where ``twin`` (the ratio of two sums does not
        change).

    Implements
    ----------
    Leave-one-out cross-validation of the bandwidth (Silverman, 1986) for Eq. (5) of the
    self-expression paper, every candidate from one pass over the pairs.
    """
    h = np.asarray(bandwidths, dtype=np.float64)
    k = KINDS.index(kind)
    big = np.finfo(np.float64).max  # inf, not 1/0, for a tiny bandwidth
    with np.errstate(over="ignore", divide="ignore"):
        coef = np.minimum(1 / h if k == 1 else (0.5 if k == 0 else 1.0) / h / h, big)
    x = np.ascontiguousarray(X, dtype=np.float64)
    xt = np.ascontiguousarray(x.T)
    vt = np.ascontiguousarray(np.asarray(values, dtype=np.float64).T)
    n = len(x)
    twin = np.zeros(n, bool) if twin is None else np.ascontiguousarray(twin, bool)
    out = np.zeros((n, len(h), vt.shape[0]))
    bounds = np.linspace(0, n, max(1, min(threads, n)) + 1).astype(int)
    parts = list(zip(bounds[:-1], bounds[1:]))
    if len(parts) == 1:
        _loo_rows(x, xt, vt, coef, k, twin, 0, n, out)
    else:
        with ThreadPoolExecutor(len(parts)) as pool:
            list(
                pool.map(
                    lambda p: _loo_rows(x, xt, vt, coef, k, twin, p[0], p[1], out),
                    parts,
                )
            )
    return out
