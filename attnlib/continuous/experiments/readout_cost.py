"""The whole cost of a continuous-attention read-out against discrete attention, on CPU.

Discrete attention scores every one of the L tokens for each query: ``O(Q L D)`` for Q
queries of size D. Continuous attention first fits the value function, ``B = G H`` with
the ``N × L`` ridge operator G of Eq. (16) computed once per length (``O(L N D)`` per
document), then needs, per query, ``r = E_p[ψ]`` (``O(N)``, closed form) and the context
``Bᵀr`` (``O(N D)``). It pays only when enough queries share one fitted B.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...normalizers import sparsemax
from ...utils import check_int
from ..attention import continuous_attention_1d
from ..basis import GaussianRBF, ridge_value_coefficients

__all__ = ["cpu_ms", "read_out_times"]


def cpu_ms(fn, repeats: int = 5) -> float:
    """Median CPU time of ``fn()`` in milliseconds.

    ``time.process_time`` is used, so other processes' load is not charged.

    Parameters
    ----------
    fn : callable
        Called with no arguments.
    repeats : int
        Timings; the median is kept.

    Returns
    -------
    float
        The median, in milliseconds.
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    repeats = check_int(repeats, "repeats")
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1e3 * float(np.median(times))


def read_out_times(
    lengths=(128, 512, 2048),
    n_queries=(1, None),
    *,
    batch: int = 16,
    n_basis: int = 64,
    dim: int = 32,
    alpha: int = 1,
    repeats: int = 5,
    seed: int = 0,
) -> list[dict]:
    """CPU time of a batch of read-outs by discrete and continuous attention, by cost.

    Documents' read-outs, timed cost by cost.

    Parameters
    ----------
    lengths : sequence of int
        Document lengths L.
    batch : int
        Documents per call (so that per-call overhead does not hide the arithmetic); the
        times are per batch.
    n_queries : sequence of int or None
        Queries Q per document; None stands for Q = L (one query per token, as in a
        translation model whose every output step attends).
    n_basis, dim : int
        RBFs N (the 1-D ``GaussianRBF.linspace`` basis) and token size D.
    alpha : {1, 2}
        Normaliser of both read-outs.
    repeats : int
        Timings per cost; the median is kept.
    seed : int
        Seeds the random tokens and densities.

    Returns
    -------
    list of dict
        One per (L, Q): ``L``, ``Q``, ``batch``, ``discrete_ms``, ``fit_ms``
        (``B = G H``), ``r_ms`` (the Q expectations), ``readout_ms`` (the Q contexts
        ``Bᵀr``), ``continuous_ms`` (their sum) and ``ratio`` (continuous over
        discrete).
    """
    g = torch.Generator().manual_seed(seed)
    basis = GaussianRBF.linspace(check_int(n_basis, "n_basis"))
    rows = []
    for L in lengths:
        L = check_int(L, "lengths")
        H = torch.randn(batch, L, dim, generator=g, dtype=torch.float32)
        # G depends on the positions only: fitted once per length, outside the timing.
        eye, pos = torch.eye(L, dtype=H.dtype), torch.linspace(0, 1, L, dtype=H.dtype)
        G = ridge_value_coefficients(eye, pos, basis)
        for Q in n_queries:
            Q = L if Q is None else check_int(Q, "n_queries")
            rows.append(_timed(H, G, Q, basis, alpha, repeats, g))
    return rows


def _timed(H, G, Q: int, basis, alpha, repeats, g) -> dict:
    """A row of :func:`read_out_times`: ``Q`` queries of each document of ``H``."""
    batch, L, dim = H.shape
    q = torch.randn(batch, Q, dim, generator=g, dtype=torch.float32)
    mu = torch.rand(batch * Q, generator=g, dtype=H.dtype)
    s2 = torch.full((batch * Q,), 0.01, dtype=H.dtype)
    B = G @ H
    r = continuous_attention_1d(mu, s2, basis, alpha).view(batch, Q, -1)
    # The bare read-out, without attnlib.attention's checks: discrete attention at its
    # cheapest.
    norm = torch.softmax if alpha == 1 else sparsemax
    row = {
        "L": L,
        "Q": Q,
        "batch": batch,
        "discrete_ms": cpu_ms(lambda: norm(q @ H.mT, -1) @ H, repeats),
        "fit_ms": cpu_ms(lambda: G @ H, repeats),
        "r_ms": cpu_ms(lambda: continuous_attention_1d(mu, s2, basis, alpha), repeats),
        "readout_ms": cpu_ms(lambda: r @ B, repeats),
    }
    row["continuous_ms"] = row["fit_ms"] + row["r_ms"] + row["readout_ms"]
    row["ratio"] = row["continuous_ms"] / row["discrete_ms"]
    return row
