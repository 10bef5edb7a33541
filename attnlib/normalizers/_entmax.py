"""Sparsemax and entmax on accelerators: sort-based thresholds in tensor operations.

On a GPU a row is cheapest to search by sorting it once: the threshold τ then has a
closed form on every prefix of the sorted row, and the support is the longest prefix
whose τ lies below its last entry (Held et al. 1974 for sparsemax; Peters et al. 2019,
Algorithm 2, for 1.5-entmax). For any other α the threshold is bisected a fixed number
of times. Every step is a tensor operation with a shape known in advance: no
``.item()``, no branch on a value, so neither pass synchronises the host with the
device. The maps are exact up to the round-off of the compute dtype (float32 for
half-precision inputs).

The maps take the scores as given (any floating dtype), their row maxima and the
compute dtype, and return probabilities in the compute dtype. A row is sorted in its
own dtype, half the bytes for half precision: shifting by the row maximum and widening
to the compute dtype keep the order, so the sorted, shifted row is the same as if the
scores had been widened first. :func:`attnlib.normalizers.sparsemax` and
:func:`attnlib.normalizers.entmax` dispatch here for tensors that are not on the CPU,
and validate their input before.
"""

from __future__ import annotations

import torch

__all__ = [
    "threshold_map",
    "sparsemax_sort",
    "entmax15_sort",
    "entmax_bisect",
    "entmax_vjp",
    "entmax_alpha_vjp",
]


def _positions(z: torch.Tensor) -> torch.Tensor:
    """1, 2, ..., n along the last dimension, in ``z``'s dtype and device."""
    n = z.shape[-1]
    return torch.arange(1, n + 1, dtype=z.dtype, device=z.device)


def threshold_map(x: torch.Tensor, top: torch.Tensor, alpha, dtype) -> torch.Tensor:
    """α-entmax of the rows of ``x`` by the cheapest exact route for ``alpha``.

    Parameters
    ----------
    x : tensor, shape (..., n)
        Scores, any floating dtype; ``-inf`` entries get weight 0.
    top : tensor, shape (..., 1)
        The row maxima of ``x`` (finite).
    alpha : float > 1 or tensor broadcastable to (..., 1)
        The Tsallis index: 2 sorts (sparsemax), 1.5 sorts (1.5-entmax), anything else,
        a tensor included, bisects.
    dtype : torch.dtype
        The compute dtype.

    Returns
    -------
    tensor, shape (..., n), of ``dtype``
        The probabilities.
    """
    if not isinstance(alpha, torch.Tensor) and alpha == 2:
        return sparsemax_sort(x, top, dtype)
    if not isinstance(alpha, torch.Tensor) and alpha == 1.5:
        return entmax15_sort(x, top, dtype)
    return entmax_bisect(x - top.to(dtype), alpha)


def _sorted_shifted(x: torch.Tensor, top: torch.Tensor, dtype) -> torch.Tensor:
    """The rows of ``x`` sorted in decreasing order minus their maxima, in ``dtype``."""
    # a tensor minus a wider one is computed (and stored) in the wider dtype
    return torch.sort(x, dim=-1, descending=True).values - top.to(dtype)


def sparsemax_sort(x: torch.Tensor, top: torch.Tensor, dtype) -> torch.Tensor:
    """Sparsemax of the rows of ``x`` (last dimension).

    Parameters
    ----------
    x : tensor, shape (..., n)
        Scores, any floating dtype; ``-inf`` entries get weight 0.
    top : tensor, shape (..., 1)
        The row maxima of ``x``.
    dtype : torch.dtype
        The compute dtype.

    Returns
    -------
    tensor, shape (..., n), of ``dtype``
        ``[z - τ]₊`` summing to one along the last dimension, ``z = x - max x``.

    Implements
    ----------
    The sort-based threshold of Martins & Astudillo (2016), Algorithm 1.
    """
    zs = _sorted_shifted(x, top, dtype)
    # -inf entries: their prefix sums are -inf too and never pass the test below.
    cums = zs.cumsum(-1) - 1
    support = (zs * _positions(zs) > cums).sum(-1, keepdim=True)  # >= 1: the maximum
    tau = cums.gather(-1, support - 1) / support.to(dtype)
    return (x - top.to(dtype)).sub_(tau).clamp_min_(0)


def entmax15_sort(x: torch.Tensor, top: torch.Tensor, dtype) -> torch.Tensor:
    """1.5-entmax of the rows of ``x`` (last dimension).

    Parameters
    ----------
    x : tensor, shape (..., n)
        Scores, any floating dtype; ``-inf`` entries get weight 0.
    top : tensor, shape (..., 1)
        The row maxima of ``x``.
    dtype : torch.dtype
        The compute dtype.

    Returns
    -------
    tensor, shape (..., n), of ``dtype``
        ``[u - τ]₊²`` summing to one along the last dimension, ``u = (x - max x) / 2``.

    Implements
    ----------
    The exact sort-based threshold of Peters et al. (2019), Algorithm 2: on the
    prefix of the k largest halved scores, τ solves ``Σ (u_j - τ)² = 1``.
    """
    us = _sorted_shifted(x, top, dtype).mul_(0.5)
    us0 = us.nan_to_num(neginf=0.0)  # masked entries: no inf - inf in the sums
    k = _positions(us)
    mean = us0.cumsum(-1).div_(k)
    # the variance of each prefix, then τ = mean - sqrt([1/k - variance]₊)
    var = us0.square_().cumsum(-1).div_(k).sub_(mean.square())
    tau = mean.sub_(var.neg_().add_(k.reciprocal()).clamp_min_(0).sqrt_())
    # a masked entry is -inf in us: τ <= -inf fails there, so the support stays finite
    support = (tau <= us).sum(-1, keepdim=True).clamp_min(1)
    tau_star = tau.gather(-1, support - 1)
    u = (x - top.to(dtype)).mul_(0.5)
    return u.sub_(tau_star).clamp_min_(0).square_()


def entmax_bisect(z: torch.Tensor, alpha, n_iter: int | None = None) -> torch.Tensor:
    """α-entmax of the rows of ``z`` for any α > 1, by a fixed number of bisections.

    Parameters
    ----------
    z : tensor, shape (..., n)
        Scores minus their row maximum; ``-inf`` entries get weight 0.
    alpha : float > 0, not 1, or tensor broadcastable to (..., 1)
        The Tsallis index, one per row if a tensor. Below 1 (the ``entmax`` package's
        ``entmax_bisect`` takes it) the map is dense and the bracket's ends swap; the
        mass still grows with τ, so the same halvings find it.
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


def entmax_vjp(
    p: torch.Tensor, g: torch.Tensor, alpha, differentiable: bool = True
) -> torch.Tensor:
    """The gradient in the scores of α-entmax at ``p``, given the output's gradient.

    Parameters
    ----------
    p : tensor, shape (..., n)
        The map's output.
    g : tensor, shape (..., n)
        The gradient of the loss in ``p``.
    alpha : float > 1 or tensor broadcastable to (..., 1)
        The Tsallis index.
    differentiable : bool, default=True
        Build the result from operations whose own derivatives are finite at ``p = 0``
        (for a second backward pass). If False, sparsemax (α = 2) and 1.5-entmax take
        shorter routes: the support's indicator and ``√p``.

    Returns
    -------
    tensor, shape (..., n)
        ``s ⊙ g - s (sᵀg / 1ᵀs)`` with ``s = p^(2-α)`` on the support, 0 off it.

    Implements
    ----------
    Eq. (14) of the sparse-continuous attention paper in the finite case.
    """
    plain = not differentiable and not isinstance(alpha, torch.Tensor)
    if plain and alpha == 2:  # s is the support's indicator
        support = p > 0
        g_in = torch.where(support, g, 0)
        mean = g_in.sum(-1, keepdim=True) / support.sum(-1, keepdim=True).clamp_min(1)
        return g_in.sub_(mean).masked_fill_(~support, 0)
    if plain and alpha == 1.5:  # √0 = 0 off the support
        s = p.sqrt()
    else:  # p^(2-α) only on the support: its derivative at 0 is infinite
        support = p > 0
        s = torch.where(support, torch.where(support, p, 1).pow(2 - alpha), 0)
    sg = s * g
    total = s.sum(-1, keepdim=True)  # 0 on a row with every entry masked (p = 0)
    total = torch.where(total > 0, total, 1)
    return torch.addcmul(sg, s, sg.sum(-1, keepdim=True) / total, value=-1)


def entmax_alpha_vjp(p: torch.Tensor, g: torch.Tensor, alpha: torch.Tensor):
    """The gradient in a tensor ``alpha`` of α-entmax at ``p``, given the output's
    gradient ``g``.

    Parameters
    ----------
    p : tensor, shape (..., n)
        The map's output.
    g : tensor, shape (..., n)
        The gradient of the loss in ``p``.
    alpha : tensor broadcastable to (..., 1)
        The Tsallis index.

    Returns
    -------
    tensor, the shape of ``alpha``
        ``Σ_j g_j ∂p_j/∂α``, summed over the rows that share an ``alpha``.

    Implements
    ----------
    The derivative in α of the entmax solution (Correia et al. 2019, Proposition 1):
    ``∂p/∂α = q² (p - s̃) - q (p log p - s̃ Σ p log p)`` with ``q = 1/(α-1)``,
    ``s = p^(2-α)`` on the support and ``s̃ = s / Σ s``.
    """
    support = p > 0
    # p^(2-α) and p log p only on the support: their derivatives at p = 0 are infinite
    # (NaN once masked), and a second backward would differentiate them.
    p_in = torch.where(support, p, 1)
    s = torch.where(support, p_in.pow(2 - alpha), 0)
    q = 1 / (alpha - 1)
    total = s.sum(-1, keepdim=True)
    skew = s / torch.where(total > 0, total, 1)  # 0 on a row with every entry masked
    plogp = torch.where(support, p_in * p_in.log(), 0)
    dp = q * q * (p - skew) - q * (plogp - skew * plogp.sum(-1, keepdim=True))
    return (g * dp).sum(-1, keepdim=True).sum_to_size(alpha.shape)
