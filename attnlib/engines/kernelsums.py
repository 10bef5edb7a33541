"""Fused kernel sums: ``Σ_j exp(-κ(x, x_j)) [y_j, 1]`` for many queries, no matrix.

An engine (internal fast path) of :func:`attnlib.kernel_regression.nadaraya_watson`.
Nadaraya–Watson, and attention in general, ends in sums of exponentials weighted by
values. Formed as a matrix, the weights cost ``n_query × n_train`` memory and a trip
through it; fused, each pair costs a distance, one exponential and two multiply-adds,
all in registers. The loops here are compiled by numba for the CPU and cached on disk
(``cache=True``), so a new process loads them instead of compiling them.

The exponential is the bottleneck of such a loop, and LLVM does not vectorise a call to
the C library's ``exp``. :func:`exp_nonpositive` is therefore written out:
``e^x = 2^k e^f`` with ``k = round(x / ln 2)`` and ``|f| <= ln(2) / 2``, ``e^f`` a
Taylor polynomial (degree 7 for float32, 13 for float64, truncation error below a tenth
of an ulp) and ``2^k`` assembled in the exponent bits. Every step is an arithmetic
instruction, so a loop that calls it runs 8 (float64) or 16 (float32) lanes at a time on
AVX-512. Measured against ``np.exp`` in float64 on ``[-700, 0]`` its relative error is
below ``4e-16`` (float64) and ``2.5e-7`` (float32): a couple of ulps (see
``tests/test_kernel_sums.py``).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba.extending import overload

from ..utils import check_int, check_positive

__all__ = ["exp_nonpositive", "nadaraya_watson_sums"]

# No "reassoc" in the exponential: it would let LLVM fold the two-part reduction
# x - k·ln2_hi - k·ln2_lo back into one rounded product and lose float64 accuracy.
_EXACT = dict(
    fastmath={"nsz", "contract", "arcp"}, error_model="numpy", cache=True, nogil=True
)
# The sums may be reassociated: that is what lets them run in vector lanes.
_FAST = dict(
    fastmath={"nsz", "contract", "arcp", "reassoc"},
    error_model="numpy",
    cache=True,
    nogil=True,
)
#: The numba options of the reassociating loops, for the other engines' loops.
JIT_OPTIONS = _FAST

_LOG2E = 1.4426950408889634
_LN2_HI = (
    0.693145751953125  # ln 2 in 16 bits: k · _LN2_HI is exact in float32 for |k| < 2^8
)
_LN2_LO = 1.4286068203094173e-06  # ln 2 - _LN2_HI
_LN2_HI64 = 0.6931471803691238  # ln 2 in 32 bits: exact products for |k| < 2^21
_LN2_LO64 = 1.9082149292705877e-10


@numba.njit(**_EXACT)
def _exp32(x):
    # callers pass x <= 0; below -87 the result is not normal
    x = max(x, np.float32(-87.0))
    k = np.floor(x * np.float32(_LOG2E) + np.float32(0.5))
    f = x - k * np.float32(_LN2_HI)
    f = f - k * np.float32(_LN2_LO)
    p = np.float32(1 / 5040)
    p = p * f + np.float32(1 / 720)
    p = p * f + np.float32(1 / 120)
    p = p * f + np.float32(1 / 24)
    p = p * f + np.float32(1 / 6)
    p = p * f + np.float32(0.5)
    p = p * f + np.float32(1.0)
    p = p * f + np.float32(1.0)
    scale = np.int32((np.int32(k) + np.int32(127)) << np.int32(23)).view(np.float32)
    return p * scale


@numba.njit(**_EXACT)
def _exp64(x):
    x = max(x, -708.0)
    k = np.floor(x * _LOG2E + 0.5)
    f = x - k * _LN2_HI64
    f = f - k * _LN2_LO64
    p = 1 / 6227020800
    p = p * f + 1 / 479001600
    p = p * f + 1 / 39916800
    p = p * f + 1 / 3628800
    p = p * f + 1 / 362880
    p = p * f + 1 / 40320
    p = p * f + 1 / 5040
    p = p * f + 1 / 720
    p = p * f + 1 / 120
    p = p * f + 1 / 24
    p = p * f + 1 / 6
    p = p * f + 0.5
    p = p * f + 1.0
    p = p * f + 1.0
    scale = np.int64((np.int64(k) + np.int64(1023)) << np.int64(52)).view(np.float64)
    return p * scale


def fast_exp(x):
    """``exp(x)`` for ``x <= 0`` in the dtype of ``x``, for compiled code only."""
    raise NotImplementedError("fast_exp is called from numba-compiled functions")


@overload(fast_exp, jit_options=_EXACT)
def _fast_exp(x):
    if x == numba.types.float32:
        return lambda x: _exp32(x)
    if x == numba.types.float64:
        return lambda x: _exp64(x)
    return None


def _bits(x):
    """The bits of a float as a signed integer, in the float's order for ``x >= 0``."""
    raise NotImplementedError("_bits is called from numba-compiled functions")


def _from_bits(i):
    """The float whose bits are ``i`` (the inverse of :func:`_bits`)."""
    raise NotImplementedError("_from_bits is called from numba-compiled functions")


# A minimum over non-negative floats taken on their bits: LLVM vectorises an integer min
# reduction, but not a floating-point one without the no-NaN, no-inf flags.
@overload(_bits, jit_options=_EXACT)
def _bits_impl(x):
    if x == numba.types.float32:
        return lambda x: np.float32(x).view(np.int32)
    if x == numba.types.float64:
        return lambda x: np.float64(x).view(np.int64)
    return None


@overload(_from_bits, jit_options=_EXACT)
def _from_bits_impl(i):
    if i == numba.types.int32:
        return lambda i: np.int32(i).view(np.float32)
    if i == numba.types.int64:
        return lambda i: np.int64(i).view(np.float64)
    return None


@numba.njit(**_FAST)
def _exp_array(x, out):
    for i in range(x.shape[0]):
        out[i] = fast_exp(x[i])


def exp_nonpositive(x: np.ndarray) -> np.ndarray:
    """The vectorised exponential of the compiled loops, on an array.

    For tests and timing.

    Parameters
    ----------
    x : ndarray, shape (n,), float32 or float64
        Arguments ``<= 0`` (up to 88 in float32 and 709 in float64 also work). Below
        ``-87`` (float32) or ``-708`` (float64) the result is clipped to about the
        smallest normal number.

    Returns
    -------
    ndarray, shape (n,), dtype of ``x``
        ``exp(x)`` within a few ulps (relative error below 2.5e-7 in float32, 4e-16 in
        float64).

    Implements
    ----------
    Range reduction ``e^x = 2^k e^f`` (Cody and Waite's two-part ``ln 2``) and a Taylor
    polynomial for ``e^f``: a textbook construction, written so that LLVM vectorises it.
    """
    try:
        x = np.asarray(x)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"x must be a 1-D float array, got {type(x).__name__}"
        ) from err
    if x.ndim != 1 or x.dtype not in (np.float32, np.float64):
        raise ValueError(
            f"x must be a 1-D float32 or float64 array, got {x.dtype} {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or infinite values")
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    _exp_array(x, out)
    return out


# ----------------------------------------------------------------- Nadaraya–Watson sums
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
    num, den, low = shift - shift, shift - shift, _bits(x.dtype.type(np.inf))
    for j in range(x.shape[0]):
        t = q - x[j]
        dist = t * t
        low = min(low, _bits(dist))
        w = fast_exp(c * (shift - dist))
        den += w
        num += w * y[j]
    return num, den, _from_bits(low)


@numba.njit(**_FAST)
def _sum_block(dist, m, yt, start, shift, c, block_num):
    """Turn the block's distances in ``dist`` into weights, in place.

    The weighted sums of ``yt`` go to ``block_num``; returns the block's weight sum and
    its smallest distance.
    """
    den, low = shift - shift, _bits(dist.dtype.type(np.inf))
    for j in range(m):
        low = min(low, _bits(dist[j]))
        w = fast_exp(c * (shift - dist[j]))
        dist[j] = w
        den += w
    for v in range(yt.shape[0]):
        acc, yv = den - den, yt[v, start : start + m]
        for j in range(m):
            acc += dist[j] * yv[j]
        block_num[v] = acc
    return den, _from_bits(low)


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
    dtype = x_query.dtype
    if (
        dtype not in (np.float32, np.float64)
        or x_train.dtype != dtype
        or y_train.dtype != dtype
    ):
        raise ValueError(
            "x_query, x_train and y_train must all be float32 or all float64, got "
            f"{dtype}"
        )
    xq = np.ascontiguousarray(x_query)
    # keys along the lanes
    xt, yt = (
        np.ascontiguousarray(x_train.T),
        np.ascontiguousarray(y_train.T),
    )
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
