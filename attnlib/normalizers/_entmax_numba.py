"""The threshold search of sparsemax and entmax as numba-compiled loops: the fallback.

``attnlib.normalizers._entmax_loops`` runs the same loops compiled from C where the
machine has a C compiler; this module serves where it has none (or with
``ATTNLIB_LOOPS=numba``). It is imported only then, so that numba's start-up is paid
only where it is used. The algorithm is explained in ``attnlib.normalizers.maps``
("threshold search").
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["LOOPS"]

_MAX_ITER = 200

# not nnan/ninf: -inf marks masked keys
_FASTMATH = {"nsz", "arcp", "contract", "reassoc"}
# cache=True: the compiled loops are written next to this file (or to numba's user cache
# directory) and loaded by later processes instead of compiled anew; a new process still
# pays numba's own start-up (its typing and target registries) on its first call.
_JIT = dict(fastmath=_FASTMATH, error_model="numpy")
_inline = numba.njit(inline="always", **_JIT)
_compiled = numba.njit(nogil=True, cache=True, **_JIT)


# Three small functions for each q: the powers (e^q, e^(q-1)) of a gap e ≥ 0, with e^0
# read as [e > 0]; N^(1-1/q) for the Newton step; and the Jacobian's s = p^(2-α)
# (Eq. 14).
# q = 1, 2, 4 (α = 2, 1.5, 1.25) need no pow().
@_inline
def _powers_1(e, qm1, zero, one):
    return e, one if e > zero else zero


@_inline
def _root_1(n, am1):
    return 1.0


@_inline
def _slope_1(p, am1, zero, one):
    return one if p > zero else zero


@_inline
def _powers_2(e, qm1, zero, one):
    return e * e, e


@_inline
def _root_2(n, am1):
    return np.sqrt(n)


@_inline
def _slope_2(p, am1, zero, one):
    return np.sqrt(p)


@_inline
def _powers_4(e, qm1, zero, one):
    e2 = e * e
    return e2 * e2, e2 * e


@_inline
def _root_4(n, am1):
    r = np.sqrt(n)
    return r * np.sqrt(r)


@_inline
def _slope_4(p, am1, zero, one):
    r = np.sqrt(p)
    return r * np.sqrt(r)


@_inline
def _powers_any(e, qm1, zero, one):
    if e > zero:
        b = e**qm1
        return b * e, b
    return zero, zero


@_inline
def _root_any(n, am1):
    return n ** (1 - am1)


@_inline
def _slope_any(p, am1, zero, one):
    return p ** (1 - am1) if p > zero else zero


@_inline
def _forward_rows(x, top, am1, p, powers, root, keep):
    """α-entmax of each row of ``x`` into ``p``; ``top``: row maxima, ``am1``: α - 1.

    The search runs on the gaps to the row maximum, z = x - max x, which are exact
    (Sterbenz) for every score that can carry weight however large the offset, so that a
    row of ``-1e9`` or of ``finfo.min`` is as well-posed as a row of zeros. z is written
    into ``p`` once; the Newton passes read it (in cache), and the last pass turns it
    into weights: recomputed where the powers are cheap, kept from the last pass
    (``keep``) where they need ``pow``.
    """
    dtype = x.dtype.type
    zero, one = dtype(0), dtype(1)
    eps = np.finfo(x.dtype).eps
    buf = np.empty(x.shape[1] if keep else 0, x.dtype)
    for i in range(x.shape[0]):
        xr, pr, a, m = x[i], p[i], am1[i], top[i]
        for j in range(xr.shape[0]):
            pr[j] = xr[j] - m
        q = 1 / a
        c, qm1 = dtype(a), dtype(q - 1)  # α - 1 and q - 1 in the dtype of x
        t = -q  # below the threshold: no weight exceeds one
        tol = 8 * eps * q
        n = one
        for _ in range(_MAX_ITER):
            tt = dtype(t)
            sum_w = sum_v = 0.0  # in float64, as the C loops: no trace of the order
            for j in range(pr.shape[0]):
                w, v = powers(max(c * (pr[j] - tt), zero), qm1, zero, one)
                if keep:
                    buf[j] = w
                sum_w += w
                sum_v += v
            n, s = dtype(sum_w), dtype(sum_v)
            step = (n - root(n, a)) / (a * s)  # (g - 1) / -g'(t), in units of x
            if step <= tol:  # t is the threshold
                break
            t += step
        tt, scale = dtype(t), one / n
        for j in range(pr.shape[0]):
            if keep:
                pr[j] = buf[j] * scale
            else:
                pr[j] = powers(max(c * (pr[j] - tt), zero), qm1, zero, one)[0] * scale


@_inline
def _backward_rows(p, g, am1, out, slope):
    """The vector-Jacobian product ``(Diag(s) - s sᵀ/1ᵀs) g`` of rows, s = p^(2-α)."""
    zero, one = p.dtype.type(0), p.dtype.type(1)
    for i in range(p.shape[0]):
        pr, gr, o = p[i], g[i], out[i]
        s_sum = sg_sum = 0.0  # in float64, as the forward pass's sums
        for j in range(pr.shape[0]):
            s = slope(pr[j], am1[i], zero, one)
            o[j] = s
            s_sum += s
            sg_sum += s * gr[j]
        mean = p.dtype.type(sg_sum / s_sum)
        for j in range(pr.shape[0]):
            o[j] *= gr[j] - mean


# One compiled pair per power family, each written out at module level: numba caches
# only functions it can find again in this file (not closures), and the family as a
# compile-time constant keeps its loops specialised and vectorised.
@_compiled
def _forward_q1(x, top, am1, p):
    _forward_rows(x, top, am1, p, _powers_1, _root_1, False)


@_compiled
def _forward_q2(x, top, am1, p):
    _forward_rows(x, top, am1, p, _powers_2, _root_2, False)


@_compiled
def _forward_q4(x, top, am1, p):
    _forward_rows(x, top, am1, p, _powers_4, _root_4, False)


@_compiled
def _forward_any(x, top, am1, p):
    _forward_rows(x, top, am1, p, _powers_any, _root_any, True)


@_compiled
def _backward_q1(p, g, am1, out):
    _backward_rows(p, g, am1, out, _slope_1)


@_compiled
def _backward_q2(p, g, am1, out):
    _backward_rows(p, g, am1, out, _slope_2)


@_compiled
def _backward_q4(p, g, am1, out):
    _backward_rows(p, g, am1, out, _slope_4)


@_compiled
def _backward_any(p, g, am1, out):
    _backward_rows(p, g, am1, out, _slope_any)


#: The compiled (forward, backward) loops for q = 1/(α-1); 0 stands for any 1 < α ≤ 2.
LOOPS = {
    1: (_forward_q1, _backward_q1),
    2: (_forward_q2, _backward_q2),
    4: (_forward_q4, _backward_q4),
    0: (_forward_any, _backward_any),
}
