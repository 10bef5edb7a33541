"""Normalizers: maps from a row of scores to a probability vector.

Softmax, sparsemax and entmax.

Each map is a *regularised prediction map* ``argmax_p <p, x> - Ω(p)`` over the
probability simplex (Def. 1 of the sparse-continuous attention paper): the Shannon
negentropy gives softmax, the 2-Tsallis negentropy sparsemax, and the α-Tsallis
negentropy α-entmax, which puts exactly zero weight on low scores when α > 1.

The threshold τ of sparsemax and entmax is found without sorting, by Newton's method
from below (Michelot's algorithm at α = 2); on a CPU it runs as compiled loops over the
rows, so that each row is read from memory once. See "threshold search" below.

Importing this module registers ``"sparsemax"`` and ``"entmax"`` (α = 1.5) as
normalizers of
:func:`attnlib.attention.attention`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from .engines import entmax as entmax_engine
from .engines import entmax_kernels
from .utils import as_tensor, check_on_device

__all__ = [
    "softmax",
    "sparsemax",
    "entmax",
    "tsallis_entropy",
    "exp_beta",
    "log_beta",
    "fenchel_young_loss",
]


# ----------------------------------------------------------------------------- helpers
def _check_scores(x, dim: int, name: str = "x") -> tuple[torch.Tensor, int]:
    """A floating tensor of scores and ``dim`` made non-negative; ``-inf`` allowed.

    ``-inf`` marks masked entries.

    An empty batch (a zero-size dimension other than ``dim``) passes, as in
    ``torch.softmax``; an empty ``dim`` does not, as no distribution lives on an empty
    set.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        x = as_tensor(x, name, min_ndim=0, allow_inf=True, allow_empty=True)
    if x.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension, got a scalar")
    if (
        isinstance(dim, bool)
        or not isinstance(dim, numbers.Integral)
        or not -x.ndim <= dim < x.ndim
    ):
        raise ValueError(
            f"dim must be an integer in [{-x.ndim}, {x.ndim - 1}], got {dim!r}"
        )
    if x.shape[dim] == 0:
        raise ValueError(
            f"{name} must have at least one entry along dim {dim}, got shape "
            f"{tuple(x.shape)}"
        )
    return x, int(dim) % x.ndim


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    # Half precision has too few bits for the threshold search; work in float32 and cast
    # back.
    return x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32


def _row_max(z: torch.Tensor, name: str = "x") -> torch.Tensor:
    # max propagates NaN and shows +inf and all-masked rows, so one reduction checks the
    # input.
    m = z.amax(-1, keepdim=True)
    if m.device.type != "cpu":  # checked on the device: no synchronisation
        check_on_device(
            ~torch.isfinite(m).all(),
            f"{name} contains NaN or +inf values, or a row that is entirely -inf "
            "(every key masked)",
        )
    elif not torch.isfinite(m).all():
        if torch.isnan(m).any():
            raise ValueError(f"{name} contains NaN values")
        if torch.isposinf(m).any():
            raise ValueError(f"{name} contains +inf values")
        raise ValueError(f"{name} has a row that is entirely -inf (every key masked)")
    return m


def _along_last(fn, x: torch.Tensor, dim: int, *args):
    """Apply ``fn`` (which works on the last dimension) along ``dim``."""
    if dim == x.ndim - 1:
        return fn(x, *args)
    moved = [a.movedim(dim, -1) if isinstance(a, torch.Tensor) else a for a in args]
    # Contiguous rows keep the reductions along the last dimension fast.
    return fn(x.movedim(dim, -1).contiguous(), *moved).movedim(-1, dim)


# ----------------------------------------------------------------------------- softmax
class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _row_max(x)
        p = torch.softmax(x, dim=-1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        pg = p * g
        return pg - p * pg.sum(-1, keepdim=True)


def softmax(x, dim: int = -1) -> torch.Tensor:
    """Softmax along ``dim``: ``exp(x) / Σ exp(x)``; ``-inf`` entries get weight 0.

    ``-inf`` entries are masked keys.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry.
    dim : int
        The dimension that is normalised.

    Returns
    -------
    tensor, same shape, dtype and device as ``x``
        Probabilities summing to one along ``dim``.

    Implements
    ----------
    Eqs. (2)-(3) of the sparse-continuous attention paper (Martins et al., 2020): the
    Ω-RPM of the Shannon negentropy.
    """
    x, dim = _check_scores(x, dim)
    if x.numel() == 0:
        return x.clone()
    return _along_last(_Softmax.apply, x, dim)


# --------------------------------------------------------------------- threshold search
# Write p ∝ [e]₊^q with e = (α-1)(x - t) and q = 1/(α-1). The weights sum to one at the
# threshold t*, the root of g(t) = ‖[e]₊‖_q = 1. For α ≤ 2 (q ≥ 1), g is convex and
# decreasing in t, so Newton's method started below t* climbs monotonically to it and
# never overshoots; for α = 2 it is Michelot's algorithm, exact once the support stops
# changing. The start ``max(x) - q`` is below t* because no weight exceeds one; it puts
# every e in [0, 1], so that e^q neither overflows nor, for the largest, underflows,
# however large q is. Both searches run on the scores minus their row maximum (as the
# entmax package does): at an offset of 1e9 in float32, ``max(x) - q`` itself would
# round to ``max(x)``.
#
# On a CPU the search runs as compiled loops over the rows
# (attnlib.engines.entmax_kernels, compiled from C once per machine, or by numba where
# no C compiler is present): a row is read from memory once, and every Newton pass over
# it then runs in cache, vectorised. For α > 2 (where g is not convex) the threshold is
# bisected with tensor operations. Off the CPU (CUDA) the maps come from
# attnlib.engines.entmax: sparsemax and 1.5-entmax sort each row once and take the
# threshold in closed form on every prefix; any other α is bisected a fixed number of
# times; no step reads a value back to the host.


def _family(alpha) -> int:
    """q = 1/(α-1) where the loops have a family without pow (1, 2, 4), else 0."""
    if isinstance(alpha, torch.Tensor):
        return 0
    q = 1 / (alpha - 1)
    return int(q) if q in (1, 2, 4) else 0


def _alpha_rows(alpha, x: torch.Tensor) -> torch.Tensor:
    """α - 1 for each row of the 2-D ``x`` (``alpha`` a number or a column), float64."""
    am1 = torch.as_tensor(alpha - 1, dtype=torch.float64)
    return am1.expand(len(x), 1).reshape(-1).contiguous()


def _entmax_cpu(x: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax (1 < α ≤ 2) of the rows of the contiguous 2-D CPU tensor ``x``."""
    p = torch.empty_like(x)
    top = _row_max(x).squeeze(1)
    entmax_kernels.forward(x, top, _alpha_rows(alpha, x), p, _family(alpha))
    return p


def _entmax_vjp_cpu(p: torch.Tensor, g: torch.Tensor, alpha: float) -> torch.Tensor:
    """The gradient of α-entmax in its scores (2-D CPU rows ``p``), given ``g``."""
    grad = torch.empty_like(p)
    entmax_kernels.backward(p, g, _alpha_rows(alpha, p), grad, _family(alpha))
    return grad


def _bisect_entmax(x: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax for any α > 1 by bisection on τ in Σ [(α-1)x - τ]₊^q = 1.

    ``alpha`` may be a per-row tensor.

    As in the compiled search, the scores are first shifted by their row maximum.
    """
    return entmax_engine.entmax_bisect(x - _row_max(x), alpha)


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous().view(-1, x.shape[-1])


# ---------------------------------------------------------------------------- sparsemax
def sparsemax(x, dim: int = -1) -> torch.Tensor:
    """Sparsemax along ``dim``: the Euclidean projection of ``x`` onto the simplex.

    The simplex of probability vectors.

    ``sparsemax(x) = [x - τ]₊`` with τ chosen so that the result sums to one; entries
    far below the largest get exactly zero. ``-inf`` entries (masked keys) get weight 0.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry. float16, bfloat16, float32 or float64.
    dim : int
        The dimension that is normalised.

    Returns
    -------
    tensor, same shape, dtype and device as ``x``
        Sparse probabilities summing to one along ``dim``.

    Raises
    ------
    ValueError
        If ``x`` holds NaN or +inf, or a slice along ``dim`` is entirely ``-inf``.

    Implements
    ----------
    Eq. (9) of the sparse-continuous attention paper (Martins et al., 2020) in the
    finite case, i.e. sparsemax of Martins & Astudillo (2016); its Jacobian
    ``Diag(s) - s sᵀ / 1ᵀs`` is Eq. (14) with α = 2. The threshold is found by
    Michelot's (1986) algorithm.
    """
    x, dim = _check_scores(x, dim)
    if x.numel() == 0:
        return x.clone()
    return _along_last(_Entmax.apply, x, dim, 2.0)


# ----------------------------------------------------------------------------- entmax
class _Entmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        cd = _compute_dtype(x)
        alpha = alpha.to(cd) if isinstance(alpha, torch.Tensor) else alpha
        ctx.alpha = alpha
        on_cpu = x.device.type == "cpu"
        newton = (
            on_cpu and bool((alpha <= 2).all())  # no host read off the CPU
            if isinstance(alpha, torch.Tensor)
            else alpha <= 2
        )
        ctx.compiled = newton and on_cpu
        if not on_cpu:  # sort-based or fixed bisection: no host-device synchronisation
            p = entmax_engine.threshold_map(x, _row_max(x), alpha, cd)
        elif ctx.compiled:
            a = (
                alpha.expand(*x.shape[:-1], 1).reshape(-1, 1)
                if isinstance(alpha, torch.Tensor)
                else alpha
            )
            p = _entmax_cpu(_rows(x.to(cd)), a).view(x.shape)
        else:
            p = _bisect_entmax(x.to(cd), alpha)
        out = p.to(x.dtype)
        # The output itself is saved (not a copy in the compute dtype), so that a
        # backward run with create_graph=True differentiates through it: double backward
        # is exact.
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        alpha = ctx.alpha
        (out,) = ctx.saved_tensors
        cd = _compute_dtype(out)
        p, g = out.to(cd), g.to(cd)
        # Under create_graph=True (grad mode on here) the compiled loops would return a
        # gradient without a graph; the tensor formula below is differentiable.
        if (
            ctx.compiled
            and not isinstance(alpha, torch.Tensor)
            and not torch.is_grad_enabled()
        ):
            return _entmax_vjp_cpu(_rows(p), _rows(g), alpha).view(g.shape).to(
                out.dtype
            ), None
        grad_x = entmax_engine.entmax_vjp(
            p, g, alpha, differentiable=torch.is_grad_enabled()
        )
        grad_alpha = None
        if ctx.needs_input_grad[1]:
            support = p > 0
            # p^(2-α) and p log p only on the support: their derivatives at p = 0 are
            # infinite (NaN once masked), and a second backward would differentiate
            # them.
            p_in = torch.where(support, p, 1)
            s = torch.where(support, p_in.pow(2 - alpha), 0)
            # dp/dα = q² (p - s̃) - q (p log p - s̃ Σ p log p), with q = 1/(α-1) and s̃
            # = s/Σs.
            q = 1 / (alpha - 1)
            skew = s / s.sum(-1, keepdim=True)
            plogp = torch.where(support, p_in * p_in.log(), 0)
            dp = q * q * (p - skew) - q * (plogp - skew * plogp.sum(-1, keepdim=True))
            grad_alpha = (g * dp).sum(-1, keepdim=True).sum_to_size(alpha.shape)
        return grad_x.to(out.dtype), grad_alpha


def _check_alpha(alpha, x: torch.Tensor, dim: int):
    if isinstance(alpha, torch.Tensor):
        if not alpha.is_floating_point():
            alpha = alpha.to(torch.get_default_dtype())
        if alpha.ndim > x.ndim or (alpha.ndim == x.ndim and alpha.shape[dim] != 1):
            raise ValueError(
                "alpha must be a number or a tensor broadcastable to x with size 1 "
                f"along dim, got shape {tuple(alpha.shape)}"
            )
        check_on_device(
            (~torch.isfinite(alpha) | (alpha <= 1)).any(),
            "alpha as a tensor must hold finite values greater than 1",
        )
        alpha = alpha.to(x.device)
        if alpha.ndim < x.ndim:  # align with x so that it can be moved with dim
            alpha = alpha.reshape((1,) * (x.ndim - alpha.ndim) + tuple(alpha.shape))
        if alpha.shape[dim] != 1:
            raise ValueError(
                f"alpha must have size 1 along dim, got shape {tuple(alpha.shape)}"
            )
        return alpha
    return _check_index(alpha, "alpha")


def _check_index(value, name: str) -> float:
    """A finite Tsallis index ≥ 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 1
    ):
        raise ValueError(f"{name} must be a finite number ≥ 1, got {value!r}")
    return float(value)


def _check_deformation(value, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def entmax(x, alpha=1.5, dim: int = -1) -> torch.Tensor:
    """α-entmax along ``dim``: ``[(α-1) x - τ]₊^{1/(α-1)}``, τ making it sum to one.

    α = 1 is softmax and α = 2 sparsemax; in between, the map is sparse (for α > 1) and
    smooth. ``-inf`` entries (masked keys) get weight 0.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry. float16, bfloat16, float32 or float64.
    alpha : float ≥ 1, or tensor > 1 of a shape broadcastable to x's, 1 along dim
        The Tsallis index. A tensor (e.g. a learned parameter) may have one value per
        slice: its shape must broadcast to ``x`` with size 1 along ``dim``; gradients
        flow to it.
    dim : int
        The dimension that is normalised.

    Returns
    -------
    tensor, same shape, dtype and device as ``x``
        Probabilities summing to one along ``dim``.

    Raises
    ------
    ValueError
        If ``alpha`` < 1, if ``x`` holds NaN or +inf, or a slice is entirely ``-inf``.

    Implements
    ----------
    Eq. (7) of the sparse-continuous attention paper (Martins et al., 2020), the
    Ω_α-RPM, in the finite case (α-entmax of Peters et al., 2019); backward pass by Eq.
    (14), whose finite form is ``Diag(s) - s sᵀ / 1ᵀs`` with ``s = p^(2-α)`` on the
    support, and the derivative in α of Correia et al. (2019).
    """
    x, dim = _check_scores(x, dim)
    alpha = _check_alpha(alpha, x, dim)
    if x.numel() == 0:
        return x.clone()
    if not isinstance(alpha, torch.Tensor):
        if alpha == 1:
            return _along_last(_Softmax.apply, x, dim)
    return _along_last(_Entmax.apply, x, dim, alpha)


# ----------------------------------------------------------------------------- Tsallis
def tsallis_entropy(p, alpha=1.5, dim: int = -1) -> torch.Tensor:
    """The α-Tsallis entropy ``(1 - Σ p^α) / (α(α-1))``.

    Shannon's ``-Σ p log p`` at α = 1.

    Parameters
    ----------
    p : tensor or array-like, shape (..., n, ...)
        Weights in [0, 1] (usually a probability vector along ``dim``).
    alpha : float ≥ 1
        The Tsallis index.
    dim : int
        The dimension that is summed over.

    Returns
    -------
    tensor, shape of ``p`` without ``dim``
        The entropy of each slice.

    Implements
    ----------
    Minus Eq. (6) of the sparse-continuous attention paper (Martins et al., 2020), with
    the 1/α scaling of Blondel et al. (2020).
    """
    p = as_tensor(p, "p")
    if ((p < 0) | (p > 1 + 4 * torch.finfo(p.dtype).eps)).any():
        raise ValueError("p must hold weights in [0, 1]")
    _, dim = _check_scores(p, dim, "p")
    alpha = _check_index(alpha, "alpha")
    if alpha == 1:
        return -torch.special.xlogy(p, p).sum(dim)
    return (1 - p.pow(alpha).sum(dim)) / (alpha * (alpha - 1))


def exp_beta(u, beta: float) -> torch.Tensor:
    """The β-exponential ``[1 + (1-β) u]₊^{1/(1-β)}`` (``exp u`` at β = 1).

    Parameters
    ----------
    u : tensor or array-like, any shape
        Any real values.
    beta : float
        The deformation; entmax with index α uses β = 2 - α.

    Returns
    -------
    tensor, shape of ``u``
        ``exp_β(u)``; ``inf`` where the result exceeds the dtype's range (as ``exp``
        does).

    Implements
    ----------
    Eq. (4) (right) of the sparse-continuous attention paper (Martins et al., 2020).
    """
    u = as_tensor(u, "u", min_ndim=0)
    beta = _check_deformation(beta, "beta")
    if beta == 1:
        return u.exp()
    return (1 + (1 - beta) * u).clamp_min(0).pow(1 / (1 - beta))


def log_beta(u, beta: float) -> torch.Tensor:
    """The β-logarithm ``(u^{1-β} - 1) / (1-β)`` (``log u`` at β = 1), for ``u ≥ 0``.

    Parameters
    ----------
    u : tensor or array-like, any shape
        Non-negative values.
    beta : float
        The deformation.

    Returns
    -------
    tensor, shape of ``u``
        ``log_β(u)``; ``-inf`` at ``u = 0`` for β ≥ 1, as ``log`` gives.

    Implements
    ----------
    Eq. (4) (left) of the sparse-continuous attention paper (Martins et al., 2020).
    """
    u = as_tensor(u, "u", min_ndim=0)
    if (u < 0).any():
        raise ValueError("u must be non-negative")
    beta = _check_deformation(beta, "beta")
    if beta == 1:
        return u.log()
    return (u.pow(1 - beta) - 1) / (1 - beta)


def fenchel_young_loss(
    scores, target, alpha=1.5, reduction: str = "mean"
) -> torch.Tensor:
    """The Fenchel–Young loss of α-entmax: ``⟨p̂ - y, θ⟩ + H_α(p̂) - H_α(y)``.

    With ``p̂ = entmax(θ)``.

    It is non-negative, zero iff ``entmax(scores) = target``, and its gradient in the
    scores is ``p̂ - y``. α = 1 gives the cross-entropy (softmax) loss, α = 2 the
    sparsemax loss.

    Parameters
    ----------
    scores : tensor, shape (..., n)
        Scores θ along the last dimension.
    target : tensor, shape (...) of class indices, or (..., n) of probabilities
        The desired distribution y.
    alpha : float ≥ 1
        The Tsallis index.
    reduction : {"mean", "sum", "none"}
        How the per-row losses are combined.

    Returns
    -------
    tensor
        A scalar, or the per-row losses of shape (...) when ``reduction="none"``.

    Implements
    ----------
    The Fenchel–Young loss of Blondel et al. (2020), Def. 2, with the Tsallis
    regulariser of Eq. (6) of the sparse-continuous attention paper.
    """
    scores, _ = _check_scores(scores, -1, "scores")
    if scores.numel() == 0:
        raise ValueError(
            f"scores must hold at least one row, got shape {tuple(scores.shape)}"
        )
    _row_max(scores, "scores")
    alpha = _check_index(alpha, "alpha")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(
            f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
        )
    if isinstance(target, torch.Tensor) and not target.is_floating_point():
        if target.shape != scores.shape[:-1]:
            raise ValueError(
                f"target of class indices must have shape {tuple(scores.shape[:-1])}, "
                f"got {tuple(target.shape)}"
            )
        if (target < 0).any() or (target >= scores.shape[-1]).any():
            raise ValueError(f"target indices must lie in [0, {scores.shape[-1] - 1}]")
        target = torch.nn.functional.one_hot(target, scores.shape[-1]).to(scores.dtype)
    else:
        floating = isinstance(target, torch.Tensor) or (
            isinstance(target, np.ndarray) and target.dtype.kind == "f"
        )
        target = as_tensor(
            target,
            "target",
            min_ndim=0,
            device=scores.device,
            allow_empty=True,
            dtype=None if floating else scores.dtype,
        )
        if target.shape != scores.shape or (target < 0).any():
            raise ValueError(
                "target of probabilities must be non-negative with shape "
                f"{tuple(scores.shape)}"
            )
        dtype = torch.promote_types(
            scores.dtype, target.dtype
        )  # never cast a float64 target down
        scores, target = scores.to(dtype), target.to(dtype)
        total = target.sum(-1)
        tol = (
            1e-3
            if dtype in (torch.float16, torch.bfloat16)
            else 1e-5
            if dtype == torch.float32
            else 1e-10
        )
        if not torch.allclose(total, torch.ones_like(total), atol=tol, rtol=0):
            raise ValueError(
                "target of probabilities must sum to one along the last dimension "
                f"(within {tol})"
            )
    # p̂ is held fixed: by Danskin's theorem the loss's gradient in θ is then exactly p̂
    # - y.
    p_hat = entmax(scores.detach(), alpha)
    theta = scores.masked_fill(torch.isneginf(scores), 0.0)
    loss = (
        ((p_hat - target) * theta).sum(-1)
        + tsallis_entropy(p_hat, alpha)
        - tsallis_entropy(target, alpha)
    )
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
