"""Sparsemax and entmax on accelerators: sort-based thresholds in tensor operations.

On a GPU a row is cheapest to search by sorting it once: the threshold τ then has a
closed form on every prefix of the sorted row, and the support is the longest prefix
whose τ lies below its last entry (Held et al. 1974 for sparsemax; Peters et al. 2019,
Algorithm 2, for 1.5-entmax). For any other α the threshold is bisected a fixed number
of times. Every step is a tensor operation with a shape known in advance: no
``.item()``, no branch on a value, so neither pass synchronises the host with the
device. The maps are exact up to the round-off of the compute dtype (float32 for
half-precision inputs).

The functions work on the last dimension of scores already shifted by their row
maximum (every row's largest entry is 0; ``-inf`` marks a masked entry) and return
probabilities in the compute dtype. :func:`attnlib.normalizers.sparsemax` and
:func:`attnlib.normalizers.entmax` dispatch here for tensors that are not on the CPU,
and validate their input before.
"""

from __future__ import annotations

import torch

__all__ = ["sparsemax_sort", "entmax15_sort", "entmax_bisect", "entmax_vjp"]


def _positions(z: torch.Tensor) -> torch.Tensor:
    """1, 2, ..., n along the last dimension, in ``z``'s dtype and device."""
    n = z.shape[-1]
    return torch.arange(1, n + 1, dtype=z.dtype, device=z.device)


def sparsemax_sort(z: torch.Tensor) -> torch.Tensor:
    """Sparsemax of the rows of ``z`` (shifted scores, last dimension).

    Parameters
    ----------
    z : tensor, shape (..., n)
        Scores minus their row maximum; ``-inf`` entries get weight 0.

    Returns
    -------
    tensor, shape (..., n)
        ``[z - τ]₊`` summing to one along the last dimension.

    Implements
    ----------
    The sort-based threshold of Martins & Astudillo (2016), Algorithm 1.
    """
    zs = torch.sort(z, dim=-1, descending=True).values
    # -inf entries: their prefix sums are -inf too and never pass the test below.
    cums = zs.cumsum(-1) - 1
    support = (zs * _positions(z) > cums).sum(-1, keepdim=True)  # >= 1: the maximum
    tau = cums.gather(-1, support - 1) / support.to(z.dtype)
    return (z - tau).clamp_min(0)


def entmax15_sort(z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax of the rows of ``z`` (shifted scores, last dimension).

    Parameters
    ----------
    z : tensor, shape (..., n)
        Scores minus their row maximum; ``-inf`` entries get weight 0.

    Returns
    -------
    tensor, shape (..., n)
        ``[z/2 - τ]₊²`` summing to one along the last dimension.

    Implements
    ----------
    The exact sort-based threshold of Peters et al. (2019), Algorithm 2: on the
    prefix of the k largest halved scores, τ solves ``Σ (u_j - τ)² = 1``.
    """
    u = z / 2
    us = torch.sort(u, dim=-1, descending=True).values
    finite = torch.isfinite(us)
    us0 = torch.where(finite, us, 0)  # masked entries: no inf - inf in the sums
    k = _positions(u)
    mean = us0.cumsum(-1) / k
    mean_sq = (us0 * us0).cumsum(-1) / k
    ss = k * (mean_sq - mean * mean)
    tau = mean - ((1 - ss) / k).clamp_min(0).sqrt()
    support = ((tau <= us) & finite).sum(-1, keepdim=True).clamp_min(1)
    tau_star = tau.gather(-1, support - 1)
    return (u - tau_star).clamp_min(0).square()


def entmax_bisect(z: torch.Tensor, alpha, n_iter: int | None = None) -> torch.Tensor:
    """α-entmax of the rows of ``z`` for any α > 1, by a fixed number of bisections.

    Parameters
    ----------
    z : tensor, shape (..., n)
        Scores minus their row maximum; ``-inf`` entries get weight 0.
    alpha : float > 1 or tensor broadcastable to (..., 1)
        The Tsallis index, one per row if a tensor.
    n_iter : int, optional
        Bisections (default: 64 in float64, 36 otherwise, enough to pin τ to the
        dtype's round-off, since it starts in an interval of length below 1).

    Returns
    -------
    tensor, shape (..., n)
        ``[(α-1) z - τ]₊^{1/(α-1)}``, renormalised to sum to one.

    Implements
    ----------
    The bisection of Blondel et al. (2020) on τ in ``Σ [(α-1) z - τ]₊^{1/(α-1)} = 1``.
    """
    if n_iter is None:
        n_iter = 64 if z.dtype == torch.float64 else 36
    y = z * (alpha - 1)
    q = 1 / (alpha - 1)
    n = torch.isfinite(y).sum(-1, keepdim=True).to(y.dtype)
    # The largest weight lies in [1/n, 1], so τ lies in [-1, -n^-(α-1)].
    lo, hi = torch.full_like(n, -1.0), -(n ** (-(alpha - 1)))
    for _ in range(n_iter):
        mid = (lo + hi) / 2
        mass = torch.where(y > mid, (y - mid).clamp_min(0).pow(q), 0).sum(-1, True)
        too_low = mass >= 1
        lo, hi = torch.where(too_low, mid, lo), torch.where(too_low, hi, mid)
    p = torch.where(y > lo, (y - lo).clamp_min(0).pow(q), 0)
    return p / p.sum(-1, keepdim=True)


def entmax_vjp(p: torch.Tensor, g: torch.Tensor, alpha) -> torch.Tensor:
    """The gradient in the scores of α-entmax at ``p``, given the output's gradient.

    Parameters
    ----------
    p : tensor, shape (..., n)
        The map's output.
    g : tensor, shape (..., n)
        The gradient of the loss in ``p``.
    alpha : float > 1 or tensor broadcastable to (..., 1)
        The Tsallis index.

    Returns
    -------
    tensor, shape (..., n)
        ``s ⊙ g - s (sᵀg / 1ᵀs)`` with ``s = p^(2-α)`` on the support, 0 off it.

    Implements
    ----------
    Eq. (14) of the sparse-continuous attention paper in the finite case.
    """
    support = p > 0
    p_in = torch.where(support, p, 1)
    s = torch.where(support, p_in.pow(2 - alpha), 0)
    sg = s * g
    return sg - s * (sg.sum(-1, keepdim=True) / s.sum(-1, keepdim=True))
