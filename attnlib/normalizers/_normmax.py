"""α-normmax and budget sparsemax: two more sparse maps of the ``entmax`` package.

Both are regularised prediction maps found by bisection on a threshold τ, and both
act on the rows of the last dimension of checked scores (no NaN, no ``+inf``, and no
row that is entirely ``-inf``: :mod:`attnlib.normalizers.packaged` sets those aside).

*α-normmax* maximises ``⟨p, x⟩ - ‖p‖_α`` over the simplex. Stationarity on the support
gives ``(p_i / ‖p‖_α)^{α-1} = x_i - τ``, so ``p ∝ u`` with ``u = [x - τ]₊^{1/(α-1)}``,
and ``‖u‖_α = 1`` fixes τ: ``Σ [x - τ]₊^{α/(α-1)} = 1``, decreasing in τ. Since the
largest ``u`` lies in ``[n^{-1/α}, 1]``, τ is in ``[max x - 1, max x - n^{-(α-1)/α}]``.
Differentiating ``‖u‖_α = 1`` gives ``dτ = Σ u dx / Σ u``, whence the vector-Jacobian
product ``‖p‖_α^{α-1} / (α-1) · (h ⊙ b - p Σ h ⊙ b)`` with ``h = g - ⟨g, p⟩`` and
``b = p^{2-α}`` on the support.

*Budget sparsemax* maximises ``⟨p, x⟩ - ½‖p‖²`` subject to ``0 ≤ p ≤ 1`` and
``Σ p = B``: ``p = clip(x - τ, 0, 1)``, τ bisected in ``[min x - B/n, max x - B/n]``
(``n`` the row's finite entries). On the entries strictly inside (0, 1), ``dτ`` is
their mean ``dx``, so the product is ``g - mean(g)`` there and 0 elsewhere.
"""

from __future__ import annotations

import torch

__all__ = ["normmax_rows", "budget_rows"]


def _halvings(dtype: torch.dtype) -> int:
    # the bracket's width halves each time: enough to reach the dtype's round-off
    return 80 if dtype == torch.float64 else 48


class _Normmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        z = x - x.amax(-1, keepdim=True)  # max z = 0; masked entries -inf
        r, e = 1 / (alpha - 1), alpha / (alpha - 1)
        n = torch.isfinite(z).sum(-1, keepdim=True).to(z.dtype)
        lo = torch.full_like(n, -1.0)  # Σ [z - τ]₊^e ≥ 1 here
        hi = -(n ** (-(alpha - 1) / alpha)) + torch.zeros_like(n)  # ≤ 1 here
        for _ in range(_halvings(z.dtype)):
            mid = (lo + hi) / 2
            big = (z - mid).clamp_min(0).pow(e).sum(-1, keepdim=True) >= 1
            lo, hi = torch.where(big, mid, lo), torch.where(big, hi, mid)
        u = (z - lo).clamp_min(0).pow(r)
        p = u / u.sum(-1, keepdim=True)
        ctx.alpha = alpha
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        alpha = ctx.alpha
        support = p > 0
        b = torch.where(support, torch.where(support, p, 1).pow(2 - alpha), 0)
        h = (g - (g * p).sum(-1, keepdim=True)) * b
        norm = p.pow(alpha).sum(-1, keepdim=True).pow((alpha - 1) / alpha)
        grad = (h - p * h.sum(-1, keepdim=True)) * norm / (alpha - 1)
        return grad, None


class _Budget(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, budget):
        finite = torch.isfinite(x)
        n = finite.sum(-1, keepdim=True).to(x.dtype)
        lo = torch.where(finite, x, torch.inf).amin(-1, keepdim=True) - budget / n
        hi = x.amax(-1, keepdim=True) - budget / n
        for _ in range(_halvings(x.dtype)):
            mid = (lo + hi) / 2
            big = (x - mid).clamp(0, 1).sum(-1, keepdim=True) >= budget
            lo, hi = torch.where(big, mid, lo), torch.where(big, hi, mid)
        p = (x - lo).clamp(0, 1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        inside = (p > 0) & (p < 1)
        g_in = torch.where(inside, g, 0)
        size = inside.sum(-1, keepdim=True).clamp_min(1)
        return torch.where(inside, g_in - g_in.sum(-1, keepdim=True) / size, 0), None


def normmax_rows(x: torch.Tensor, alpha) -> torch.Tensor:
    """α-normmax of the rows of ``x`` (last dim), ``alpha`` > 1 a number or a
    tensor broadcastable to (..., 1); the gradient flows to ``x`` only."""
    return _Normmax.apply(x, alpha)


def budget_rows(x: torch.Tensor, budget) -> torch.Tensor:
    """Budget sparsemax of the rows of ``x`` (last dim), summing to ``budget`` (a
    number or a tensor broadcastable to (..., 1)); the gradient flows to ``x`` only."""
    return _Budget.apply(x, budget)
