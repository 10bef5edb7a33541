"""Exact non-local means at the speed of the hardware (an internal fast path).

The engine of :func:`attnlib.denoise.nonlocal_means`: exact NLM with the conventions of
``skimage.restoration.denoise_nl_means(fast_mode=False)`` but organises the work by
offset: for each displacement ``δ`` in the search window it forms the image of squared
differences ``(y(x) - y(x + δ))²``, blurs it with the separable Gaussian patch kernel,
exponentiates, and accumulates, in compiled loops over row strips that stay in cache.
The weight of ``δ`` at ``x`` is also the weight of ``-δ`` at ``x + δ``, so only half of
the offsets are computed.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch

from ..utils.fastexp import JIT_OPTIONS as _JIT
from ..utils.fastexp import fast_exp

__all__ = ["nlm_offsets"]

# ----------------------------------------------------------------------- fast exact NLM
# The loops below are compiled by numba (cached on disk) and run over row strips: for a
# strip of ``strip_rows`` rows and one offset δ, the squared differences of the two
# shifted images are blurred by the separable patch kernel (a row pass, then a column
# pass), exponentiated with the vectorised exponential of ``fastexp``, and added to
# the sums at x (weight of +δ) and at x + δ (the same weight, for -δ). A strip's rows,
# buffers and sums stay in the L2 cache while all the offsets pass over them.


@numba.njit(**_JIT)
def _nlm_strip(pad, vals, g, offsets, y0, y1, factor, bias, floor, num, den, hz, e, w):
    """Add the weights of ``offsets`` (``(dy, dx)`` rows) to pixel rows ``[y0, y1)``."""
    # Every inner loop runs over slices indexed from 0: LLVM then vectorises it (offset
    # indices such as a[j0 + j] kept it scalar and cost a factor of two).
    c, hh, ww = vals.shape
    s = g.shape[0]
    zero = floor - floor  # in the image's dtype, so that float32 stays float32
    for o in range(offsets.shape[0]):
        dy, dx = offsets[o, 0], offsets[o, 1]
        stop = min(y1, hh - dy)
        if stop <= y0:
            continue
        j0, j1 = max(0, -dx), min(ww, ww - dx)
        n, m = j1 - j0, j1 - j0 + s - 1
        for t in range(
            stop - y0 + s - 1
        ):  # the row pass, on padded rows y0 .. stop + 2r
            for ch in range(c):
                a, b = (
                    pad[ch, y0 + t, j0 : j0 + m],
                    pad[ch, y0 + t + dy, j0 + dx : j0 + dx + m],
                )
                if ch == 0:
                    for j in range(m):
                        diff = a[j] - b[j]
                        e[j] = diff * diff
                else:
                    for j in range(m):
                        diff = a[j] - b[j]
                        e[j] += diff * diff
            row, first = hz[t, :n], e[:n]
            for j in range(n):
                row[j] = g[0] * first[j]
            for u in range(1, s):
                shifted = e[u : u + n]
                for j in range(n):
                    row[j] += g[u] * shifted[j]
        for i in range(stop - y0):  # the column pass, the weight, and both sums
            first = hz[i, :n]
            for j in range(n):
                w[j] = g[0] * first[j]
            for t in range(1, s):
                below = hz[i + t, :n]
                for j in range(n):
                    w[j] += g[t] * below[j]
            for j in range(n):
                w[j] = fast_exp(max(min(bias - factor * w[j], zero), floor))
            y = y0 + i
            fwd, bwd = den[y, j0:j1], den[y + dy, j0 + dx : j1 + dx]
            for j in range(n):
                fwd[j] += w[j]
            for j in range(n):
                bwd[j] += w[j]
            for ch in range(c):
                out, src = num[ch, y, j0:j1], vals[ch, y + dy, j0 + dx : j1 + dx]
                for j in range(n):
                    out[j] += w[j] * src[j]
                out, src = num[ch, y + dy, j0 + dx : j1 + dx], vals[ch, y, j0:j1]
                for j in range(n):
                    out[j] += w[j] * src[j]


@numba.njit(**_JIT)
def _nlm_rows(pad, vals, g, offsets, strips, factor, bias, floor, num, den):
    """:func:`_nlm_strip` for each ``(y0, y1)`` row of ``strips``, own buffers each."""
    ww, s = vals.shape[2], g.shape[0]
    height = int((strips[:, 1] - strips[:, 0]).max()) if strips.shape[0] else 0
    hz = np.empty((height + s - 1, ww), dtype=vals.dtype)
    e = np.empty(ww + s - 1, dtype=vals.dtype)
    w = np.empty(ww, dtype=vals.dtype)
    for k in range(strips.shape[0]):
        _nlm_strip(
            pad,
            vals,
            g,
            offsets,
            strips[k, 0],
            strips[k, 1],
            factor,
            bias,
            floor,
            num,
            den,
            hz,
            e,
            w,
        )


def _half_window(d_rows: int, d_cols: int) -> np.ndarray:
    """The offsets δ > 0 in row-major order as ``(dy, dx)`` rows: half the window."""
    offsets = [(0, dx) for dx in range(1, d_cols + 1)]
    offsets += [
        (dy, dx) for dy in range(1, d_rows + 1) for dx in range(-d_cols, d_cols + 1)
    ]
    return np.array(offsets, dtype=np.int64).reshape(-1, 2)


def nlm_offsets(
    vals: np.ndarray,
    pad: np.ndarray,
    g: np.ndarray,
    d_rows: int,
    d_cols: int,
    h: float,
    var: float,
    strip_rows: int,
) -> np.ndarray:
    """Exact NLM by offsets (see the comment above), on checked input.

    ``vals`` is the ``(C, H, W)`` image, float32 or float64; ``pad`` the same reflected
    by half a patch on each side; ``g`` the float64 1-D patch kernel; ``var`` = σ².
    """
    c, hh, ww = vals.shape
    vals, pad = np.ascontiguousarray(vals), np.ascontiguousarray(pad)
    dtype = vals.dtype
    # Fold the normalisation of the patch distance, 1 / (C h² (Σg)²), into one factor.
    factor = dtype.type(1 / (c * h * h * g.sum() ** 2))
    # Weights below the smallest normal float are flushed to it: a weight of 1e-38
    # (1e-307 in float64) beside the centre's 1 changes nothing, and denormals would be
    # slow.
    floor = dtype.type(math.log(np.finfo(dtype).tiny) + 0.5)
    offsets = _half_window(d_rows, d_cols)
    starts = np.arange(0, hh, strip_rows)
    strips = np.stack([starts, np.minimum(starts + strip_rows, hh)], 1).astype(np.int64)
    workers = max(1, min(torch.get_num_threads(), len(strips)))

    def work(share):
        num, den = np.zeros((c, hh, ww), dtype), np.zeros((hh, ww), dtype)
        _nlm_rows(
            pad,
            vals,
            g.astype(dtype),
            offsets,
            share,
            factor,
            dtype.type(2 * var / h**2),
            floor,
            num,
            den,
        )
        return num, den

    # Each worker takes a contiguous run of strips (the sums it adds below a strip are
    # those of its next strip, still in its cache) and keeps its own sums; the compiled
    # loops release the GIL, so Python threads run them side by side. PyTorch's thread
    # setting is read, never changed.
    shares = np.array_split(strips, workers)
    if workers == 1:
        sums = [work(shares[0])]
    else:
        with ThreadPoolExecutor(workers) as pool:
            sums = list(pool.map(work, shares))
    # The centre offset: distance max(-2σ²/h², 0) = 0, weight exactly one.
    num = vals + sum(n for n, _ in sums)
    den = 1 + sum(d for _, d in sums)
    return num / den
