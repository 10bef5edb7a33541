"""Fused kernel sums: ``Σ_j exp(-κ(x, x_j)) [y_j, 1]`` for many queries, no matrix.

An engine (internal fast path) of :func:`attnlib.kernel_regression.nadaraya_watson`.
Nadaraya–Watson, and attention in general, ends in sums of exponentials weighted by
values. Formed as a matrix, the weights cost ``n_query × n_train`` memory and a trip
through it; fused, each pair costs a distance, one exponential and two multiply-adds,
all in registers. The loops here are compiled by numba for the CPU and cached on disk
(``cache=True``), so a new process loads them instead of compiling them.

Each weight is one call of the vectorised exponential of :mod:`attnlib.utils.fastexp`
(its array form: :func:`~attnlib.utils.fastexp.exp_nonpositive`).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ..utils import check_int, check_positive
from ..utils.fastexp import JIT_OPTIONS as _FAST
from ..utils.fastexp import bits, fast_exp, from_bits

__all__ = ["nadaraya_watson_sums"]


# For one query the keys are visited in blocks that fit in L1 with their distances. One
# pass over a block forms each key's distance D_j, its weight exp(c (shift - D_j)) and
# the sums Σ w_j [y_j, 1], and tracks the block's smallest distance. The shift is the
# smallest distance seen before the block (the online softmax of Milakov & Gimelshein,
# 2018), so the nearest key so far weighs one and nothing underflows to 0/0. A block
# that comes closer than that is kept if its weights stay below e^_SLACK (the sums are
# then rescaled to the new minimum); a block far closer than everything before it (the
# first, and rarely another) is summed again with its own minimum as the shift, because
# a weight e^a carries a rounding error of about a ulps. A bandwidth so small that c
# overflows still gives the nearest neighbour: c is clipped to the largest finite
# number, and D_j - D_min = 0 is never multiplied by inf. A block's sums are added in
# the dtype, in vector lanes; the blocks' sums are added in float64.
# L1 data cache of recent x86 cores (32 KiB on older ones: then L2 serves)
_L1_BYTES = 48 * 1024
_TILE = 64
_SLACK = 1.0


@numba.njit(**_FAST)
def _block_distances(q, xt, start, stop, l1, dist):
    """``dist[:n] = Σ_k (q_k - x_kj)²``, four dimensions per sweep.

    Or ``Σ_k |q_k - x_kj|`` if ``l1``.
    """
    n, d = stop - start, xt.shape[0]
    for j in range(n):
        dist[j] = q[0] - q[0]
    for k in range(0, d - 3, 4):
        q0, q1, q2, q3 = q[k], q[k + 1], q[k + 2], q[k + 3]
        r0, r1, r2, r3 = (
            xt[k, start:stop],
            xt[k + 1, start:stop],
            xt[k + 2, start:stop],
            xt[k + 3, start:stop],
        )
        if l1:
            for j in range(n):
                dist[j] += (abs(q0 - r0[j]) + abs(q1 - r1[j])) + (
                    abs(q2 - r2[j]) + abs(q3 - r3[j])
                )
        else:
            for j in range(n):
                t0, t1, t2, t3 = q0 - r0[j], q1 - r1[j], q2 - r2[j], q3 - r3[j]
                dist[j] += (t0 * t0 + t1 * t1) + (t2 * t2 + t3 * t3)
    for k in range(d - d % 4, d):
        qk, rk = q[k], xt[k, start:stop]
        if l1:
            for j in range(n):
                dist[j] += abs(qk - rk[j])
        else:
            for j in range(n):
                t = qk - rk[j]
                dist[j] += t * t


@numba.njit(**_FAST)
def _sum_1d(q, x, y, shift, c):
    """One block, one feature, one target: ``(Σ w_j y_j, Σ w_j, min_j D_j)``, fused."""
    num, den, low = shift - shift, shift - shift, bits(x.dtype.type(np.inf))
    for j in range(x.shape[0]):
        t = q - x[j]
        dist = t * t
        low = min(low, bits(dist))
        w = fast_exp(c * (shift - dist))
        den += w
        num += w * y[j]
    return num, den, from_bits(low)


@numba.njit(**_FAST)
def _sum_block(dist, m, yt, start, shift, c, block_num):
    """Turn the block's distances in ``dist`` into weights, in place.

    The weighted sums of ``yt`` go to ``block_num``; returns the block's weight sum and
    its smallest distance.
    """
    den, low = shift - shift, bits(dist.dtype.type(np.inf))
    for j in range(m):
        low = min(low, bits(dist[j]))
        w = fast_exp(c * (shift - dist[j]))
        dist[j] = w
        den += w
    for v in range(yt.shape[0]):
        acc, yv = den - den, yt[v, start : start + m]
        for j in range(m):
            acc += dist[j] * yv[j]
        block_num[v] = acc
    return den, from_bits(low)


@numba.njit(**_FAST)
def _nw_block(q, xt, yt, start, stop, l1, fused, c, low, den, num, dist, block_num):
    """Add the keys ``start..stop`` to one query's sums ``(low, den, num)``.

    Returns ``(low, den)``.
    """
    m = stop - start
    cc = xt.dtype.type(c)
    if not fused:
        _block_distances(q, xt, start, stop, l1, dist)
    # The first block, with nothing before it, is shifted by its first distance.
    shift = low if den > 0 else (q[0] - xt[0, start]) ** 2 if fused else dist[0]
    for _attempt in range(2):
        sh = xt.dtype.type(shift)
        if fused:
            b_num, b_den, b_low = _sum_1d(
                q[0], xt[0, start:stop], yt[0, start:stop], sh, cc
            )
            block_num[0] = b_num
        else:
            b_den, b_low = _sum_block(dist, m, yt, start, sh, cc, block_num)
        if not c * (shift - b_low) > _SLACK:
            break
        shift = b_low  # weights up to e^(c (shift - b_low)) would lose accuracy: again
        if not fused:
            _block_distances(q, xt, start, stop, l1, dist)
    # Express the running sums and the block's sums relative to the new shift.
    new = min(shift, b_low, low)
    old_scale = math.exp(-c * (low - new)) if den > 0 else 0.0
    block_scale = math.exp(-c * (shift - new))
    for v in range(num.shape[0]):
        num[v] = num[v] * old_scale + block_num[v] * block_scale
    return new, den * old_scale + b_den * block_scale


@numba.njit(**_FAST)
def _nw_queries(xq, xt, yt, c, l1, block, out):
    """``out[i] = Σ_j w_ij y_j / Σ_j w_ij`` for each query row.

    With ``w_ij = exp(-c D(x_i, x_j))``.

    Queries are taken _TILE at a time, and each block of ``block`` keys is read once for
    the whole tile: the block (its features, targets and distances: _L1_BYTES) stays in
    L1 while the tile's queries pass over it, instead of every query streaming all the
    keys from memory.
    """
    n, dv = xt.shape[1], yt.shape[0]
    fused = xt.shape[0] == 1 and dv == 1 and not l1
    dist = np.empty(block, dtype=xt.dtype)
    block_num = np.empty(dv, dtype=xt.dtype)
    low = np.empty(_TILE)  # per query: the shift, the smallest distance summed so far
    den = np.empty(_TILE)
    num = np.empty((_TILE, dv))
    for q0 in range(0, xq.shape[0], _TILE):
        q1 = min(xq.shape[0], q0 + _TILE)
        low[:] = np.inf
        den[:] = 0.0
        num[:] = 0.0
        for start in range(0, n, block):
            stop = min(n, start + block)
            for i in range(q1 - q0):
                low[i], den[i] = _nw_block(
                    xq[q0 + i],
                    xt,
                    yt,
                    start,
                    stop,
                    l1,
                    fused,
                    c,
                    low[i],
                    den[i],
                    num[i],
                    dist,
                    block_num,
                )
        for i in range(q1 - q0):
            for v in range(dv):
                out[q0 + i, v] = num[i, v] / den[i]


def nadaraya_watson_sums(
    x_query, x_train, y_train, bandwidth: float, *, l1: bool = False, threads: int = 1
):
    """Gaussian (or Laplace) Nadaraya–Watson predictions, fused: no weight matrix.

    Parameters
    ----------
    x_query : ndarray, shape (n_query, d)
        Queries.
    x_train : ndarray, shape (n_train, d)
        Keys.
    y_train : ndarray, shape (n_train, d_v)
        Values. All three float32 or all float64 (the computation's dtype), finite.
    bandwidth : float
        ``σ`` of the Gaussian ``exp(-||x - x_j||² / (2σ²))``; with ``l1`` the scale
        ``h`` of the Laplace kernel ``exp(-||x - x_j||₁ / h)``.
    l1 : bool
        The Laplace kernel instead of the Gaussian.
    threads : int
        Worker threads; each takes a contiguous share of the queries.

    Returns
    -------
    ndarray, shape (n_query, d_v)
        Memory beyond the inputs: a transposed copy of the keys and values and
        ``O(threads)`` small buffers, whatever ``n_query × n_train``.

    Implements
    ----------
    Eq. (5)-(6) of the self-expression paper (Nadaraya–Watson with the Gaussian kernel),
    evaluated with an online softmax (Milakov & Gimelshein, 2018) in blocks that stay in
    cache.
    """
    for a, name in ((x_query, "x_query"), (x_train, "x_train"), (y_train, "y_train")):
        if not isinstance(a, np.ndarray) or a.ndim != 2 or a.size == 0:
            raise ValueError(
                f"{name} must be a non-empty 2-D ndarray, got "
                f"{getattr(a, 'shape', type(a).__name__)}"
            )
        if a.dtype in (np.float32, np.float64) and not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or infinite values")
    if x_query.shape[1] != x_train.shape[1] or y_train.shape[0] != x_train.shape[0]:
        raise ValueError(
            f"x_train must be (n_train, {x_query.shape[1]}) and y_train (n_train, "
            f"d_v), got {x_train.shape} and {y_train.shape}"
        )
    bandwidth = check_positive(bandwidth, "bandwidth")
    threads = check_int(threads, "threads")
    return fused_sums(x_query, x_train, y_train, bandwidth, l1, threads)


def fused_sums(x_query, x_train, y_train, bandwidth, l1, threads):
    """:func:`nadaraya_watson_sums` on inputs its caller has checked."""
    return lane_sums(x_query, *key_lanes(x_train, y_train), bandwidth, l1, threads)


def key_lanes(x_train, y_train):
    """The keys and values in the engine's layout: one key per lane (copies).

    ``(d, n_train)`` and ``(d_v, n_train)``, contiguous: a caller that predicts many
    times from one training set makes them once and calls :func:`lane_sums`.
    """
    return np.ascontiguousarray(x_train.T), np.ascontiguousarray(y_train.T)


def lane_sums(x_query, xt, yt, bandwidth, l1, threads):
    """:func:`fused_sums` on keys and values already in lanes (:func:`key_lanes`)."""
    dtype = x_query.dtype
    if dtype not in (np.float32, np.float64) or xt.dtype != dtype or yt.dtype != dtype:
        raise ValueError(
            "x_query, x_train and y_train must all be float32 or all float64, got "
            f"{dtype}"
        )
    xq = np.ascontiguousarray(x_query)
    # inf, not 1/0, for a tiny bandwidth
    c = 1 / bandwidth if l1 else 0.5 / bandwidth / bandwidth
    c = min(c, float(np.finfo(dtype).max))
    out = np.empty((xq.shape[0], yt.shape[0]), dtype=dtype)
    per_key = (xt.shape[0] + yt.shape[0] + 1) * xt.itemsize
    block = int(min(4096, max(256, 2 ** int(math.log2(_L1_BYTES // per_key)))))
    bounds = np.linspace(0, xq.shape[0], max(1, min(threads, xq.shape[0])) + 1).astype(
        int
    )
    parts = list(zip(bounds[:-1], bounds[1:]))
    if len(parts) == 1:
        _nw_queries(xq, xt, yt, c, l1, block, out)
    else:
        with ThreadPoolExecutor(len(parts)) as pool:
            list(
                pool.map(
                    lambda p: _nw_queries(
                        xq[p[0] : p[1]], xt, yt, c, l1, block, out[p[0] : p[1]]
                    ),
                    parts,
                )
            )
    return out
