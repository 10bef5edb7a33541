"""Softmax, sparsemax and α-entmax: a row of scores to a probability vector.

Each map checks its scores once, moves ``dim`` last and hands the rows to a
``torch.autograd.Function`` whose forward pass finds the threshold and whose backward
pass is the map's Jacobian-vector product in closed form.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from types import MappingProxyType

import torch

from ..utils import check_on_device
from ..utils.validation import traced
from . import _entmax as entmax_engine
from . import _entmax_loops as entmax_loops
from . import _traced
from . import _triton_entmax as triton_entmax
from .common import (
    _aligned,
    _along_last,
    _check_index,
    _check_k,
    _check_scores,
    _compute_dtype,
    _live_rows,
)
from .hard import hardmax, straight_through_hardmax

__all__ = [
    "softmax",
    "sparsemax",
    "entmax15",
    "entmax",
    "NORMALIZERS",
    "SHIFT_INVARIANT",
]


# ----------------------------------------------------------------------------- softmax
class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x, dead, _ = _live_rows(x)
        p = torch.softmax(x, dim=-1)
        if dead is not None:  # a row with every entry masked: zero weights
            p = p.masked_fill_(dead, 0)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        pg = p * g
        return pg - p * pg.sum(-1, keepdim=True)


def softmax(x, dim: int = -1) -> torch.Tensor:
    """Softmax along ``dim``: ``exp(x) / Σ exp(x)``; ``-inf`` entries get weight 0.

    A slice that is entirely ``-inf`` (every key masked) gets zeros and a zero
    gradient, as in :func:`attnlib.functional.attention` (``torch.softmax`` gives NaN).

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
    return _along_last(_softmax_last, x, dim)


def _softmax_last(x: torch.Tensor) -> torch.Tensor:
    # While a graph is traced (compile, export, vmap) no engine may read values.
    return _traced.softmax_rows(x) if traced(x) else _Softmax.apply(x)


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
# (normalizers._entmax_loops, compiled from C once per machine): a row is read from
# memory once, and every Newton pass over it then runs in cache, vectorised. Everywhere
# else (α > 2, where g is not convex; a CPU without a C compiler; CUDA) the maps come
# from the torch engine, attnlib.normalizers._entmax: sparsemax and 1.5-entmax sort each
# row once and take the threshold in closed form on every prefix; any other α is
# bisected a fixed number of times; no step reads a value back to the host. Where
# Triton is installed, CUDA rows of float32, float16 or bfloat16 go to the fused kernels
# of attnlib.normalizers._triton_entmax instead (one program per row, forward and
# backward).


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


def _entmax_cpu(x: torch.Tensor, top: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax (1 < α ≤ 2) of the rows of the contiguous 2-D CPU tensor ``x``, whose
    row maxima are ``top``."""
    p = torch.empty_like(x)
    top = top.to(x.dtype).reshape(-1).contiguous()
    entmax_loops.forward(x, top, _alpha_rows(alpha, x), p, _family(alpha))
    return p


def _entmax_vjp_cpu(p: torch.Tensor, g: torch.Tensor, alpha: float) -> torch.Tensor:
    """The gradient of α-entmax in its scores (2-D CPU rows ``p``), given ``g``."""
    grad = torch.empty_like(p)
    entmax_loops.backward(p, g, _alpha_rows(alpha, p), grad, _family(alpha))
    return grad


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous().view(-1, x.shape[-1])


# ---------------------------------------------------------------------------- sparsemax
def _with_support(p: torch.Tensor, dim: int, want: bool):
    """``p``, and if ``want`` also its nonzeros along ``dim`` (kept)."""
    if not want:
        return p
    return p, (p > 0).sum(dim, keepdim=True)


def sparsemax(x, dim: int = -1, k=None, return_support_size: bool = False):
    """Sparsemax along ``dim``: the Euclidean projection of ``x`` onto the simplex.

    ``sparsemax(x) = [x - τ]₊`` with τ chosen so that the result sums to one; entries
    far below the largest get exactly zero. ``-inf`` entries (masked keys) get weight 0;
    a slice that is entirely ``-inf`` gets zeros and a zero gradient.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry. float16, bfloat16, float32 or float64.
    dim : int
        The dimension that is normalised.
    k : int, optional
        The ``entmax`` package's partial-sort size; checked, and the result is the same
        whatever its value (the threshold is found without sorting).
    return_support_size : bool, default=False
        Also return the number of nonzeros of each slice, as the package does.

    Returns
    -------
    tensor, same shape, dtype and device as ``x``
        Sparse probabilities summing to one along ``dim``.
    support : int64 tensor, shape of ``x`` with size 1 along ``dim``
        Only with ``return_support_size``.

    Raises
    ------
    ValueError
        If ``x`` holds NaN or +inf.

    Implements
    ----------
    Eq. (9) of the sparse-continuous attention paper (Martins et al., 2020) in the
    finite case, i.e. sparsemax of Martins & Astudillo (2016); its Jacobian
    ``Diag(s) - s sᵀ / 1ᵀs`` is Eq. (14) with α = 2. The threshold is found by
    Michelot's (1986) algorithm.
    """
    x, dim = _check_scores(x, dim)
    _check_k(k)
    p = x.clone() if x.numel() == 0 else _along_last(_entmax_last, x, dim, 2.0)
    return _with_support(p, dim, return_support_size)


def entmax15(x, dim: int = -1, k=None, return_support_size: bool = False):
    """1.5-entmax along ``dim``: ``[x/2 - τ]₊²``, τ making it sum to one.

    The ``entmax`` package's ``entmax15``, with its signature: :func:`entmax` at
    α = 1.5. ``-inf`` entries get weight 0; a slice that is entirely ``-inf`` gets
    zeros and a zero gradient.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry.
    dim : int
        The dimension that is normalised.
    k : int, optional
        The package's partial-sort size; checked, and the result is the same whatever
        its value.
    return_support_size : bool, default=False
        Also return the number of nonzeros of each slice.

    Returns
    -------
    tensor, same shape, dtype and device as ``x``
        Probabilities summing to one along ``dim``.
    support : int64 tensor, shape of ``x`` with size 1 along ``dim``
        Only with ``return_support_size``.

    Implements
    ----------
    Eq. (7) of the sparse-continuous attention paper at α = 1.5 (1.5-entmax of Peters
    et al., 2019).
    """
    x, dim = _check_scores(x, dim)
    _check_k(k)
    p = x.clone() if x.numel() == 0 else _along_last(_entmax_last, x, dim, 1.5)
    return _with_support(p, dim, return_support_size)


# ----------------------------------------------------------------------------- entmax
class _Entmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha, low, name="x"):
        # low: alpha may hold values in (0, 1] (entmax_bisect's range): bisection only
        cd = _compute_dtype(x)
        alpha = alpha.to(cd) if isinstance(alpha, torch.Tensor) else alpha
        ctx.alpha = alpha
        x, dead, top = _live_rows(x, name)
        on_cpu = x.device.type == "cpu"
        newton = (
            on_cpu and not low and bool((alpha <= 2).all())  # no host read off the CPU
            if isinstance(alpha, torch.Tensor)
            else 1 < alpha <= 2
        )
        ctx.compiled = newton and on_cpu and entmax_loops.available()
        ctx.triton = False
        if not low and triton_entmax.accepts(x):  # after the torch engine's check
            p = triton_entmax.entmax_forward(x, alpha)
            ctx.triton = p is not None  # None: Triton refused the kernel
        if not ctx.triton:
            p = _torch_rows(x, top, alpha, cd, ctx.compiled)
        out = p.to(x.dtype)
        ctx.dead = dead
        if dead is not None:  # a row with every entry masked: zero weights
            out = out.masked_fill(dead, 0)
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
            grad = _entmax_vjp_cpu(_rows(p), _rows(g), alpha).view(g.shape)
            if ctx.dead is not None:  # 0/0 there
                grad = grad.masked_fill_(ctx.dead, 0)
            return grad.to(out.dtype), None, None, None
        grad_x = None
        if ctx.triton and not torch.is_grad_enabled():
            grad_x = triton_entmax.entmax_backward(out, g, alpha)  # None: refused
        if grad_x is None:
            grad_x = entmax_engine.entmax_vjp(
                p, g, alpha, differentiable=torch.is_grad_enabled()
            )
        grad_alpha = None
        if ctx.needs_input_grad[1]:
            grad_alpha = entmax_engine.entmax_alpha_vjp(p, g, alpha)
        return grad_x.to(out.dtype), grad_alpha, None, None


def _entmax_last(x: torch.Tensor, alpha, low: bool = False, name: str = "x"):
    # While a graph is traced (compile, export, vmap) no engine may read values.
    if traced(x):
        return _traced.entmax_rows(x, alpha)
    return _Entmax.apply(x, alpha, low, name)


def _torch_rows(x: torch.Tensor, top, alpha, cd: torch.dtype, compiled: bool):
    """α-entmax of the rows of ``x`` (row maxima ``top``) in the compute dtype ``cd``:
    the compiled loops where ``compiled``, else the sort or fixed bisection of the
    torch engine ``_entmax`` (no host-device synchronisation)."""
    if not compiled:
        return entmax_engine.threshold_map(x, top, alpha, cd)
    a = (
        alpha.expand(*x.shape[:-1], 1).reshape(-1, 1)
        if isinstance(alpha, torch.Tensor)
        else alpha
    )
    return _entmax_cpu(_rows(x.to(cd)), top, a).view(x.shape)


def _check_alpha(alpha, x: torch.Tensor, dim: int, low: bool = False):
    """``alpha`` checked against ``x``: a number ≥ 1 or a tensor > 1 (with ``low``,
    any number > 0, as the package's ``entmax_bisect`` takes), size 1 along ``dim``."""
    what = "greater than 0" if low else "greater than 1"
    if isinstance(alpha, torch.Tensor):
        alpha = _aligned(alpha, x, dim, "alpha")
        bad = (alpha <= 0) | (alpha == 1) if low else alpha <= 1
        check_on_device(
            (~torch.isfinite(alpha) | bad).any(),
            f"alpha as a tensor must hold finite values {what}"
            + (" other than 1 (alpha = 1, softmax, as a number)" if low else ""),
        )
        return alpha
    if not low:
        return _check_index(alpha, "alpha")
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, numbers.Real)
        or not 0 < alpha < math.inf  # (math.isfinite refuses a traced float)
    ):
        raise ValueError(f"alpha must be a finite number {what}, got {alpha!r}")
    return float(alpha)


def _entmax(x, alpha, dim: int, low: bool = False, name: str = "x") -> torch.Tensor:
    """:func:`entmax` (with ``low``, for any α > 0; ``name``: the scores' argument)."""
    x, dim = _check_scores(x, dim, name)
    alpha = _check_alpha(alpha, x, dim, low)
    if x.numel() == 0:
        return x.clone()
    if not isinstance(alpha, torch.Tensor):
        if alpha == 1:
            return _along_last(_softmax_last, x, dim)
    return _along_last(_entmax_last, x, dim, alpha, low, name)


def entmax(x, alpha=1.5, dim: int = -1) -> torch.Tensor:
    """α-entmax along ``dim``: ``[(α-1) x - τ]₊^{1/(α-1)}``, τ making it sum to one.

    α = 1 is softmax and α = 2 sparsemax; in between, the map is sparse (for α > 1) and
    smooth. ``-inf`` entries (masked keys) get weight 0; a slice that is entirely
    ``-inf`` gets zeros and a zero gradient.

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
        If ``alpha`` < 1, or if ``x`` holds NaN or +inf.

    Implements
    ----------
    Eq. (7) of the sparse-continuous attention paper (Martins et al., 2020), the
    Ω_α-RPM, in the finite case (α-entmax of Peters et al., 2019); backward pass by Eq.
    (14), whose finite form is ``Diag(s) - s sᵀ / 1ᵀs`` with ``s = p^(2-α)`` on the
    support, and the derivative in α of Correia et al. (2019).
    """
    return _entmax(x, alpha, dim)


# ------------------------------------------------------------------------ by name
def _softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Softmax along the last dimension of checked scores (-inf gets weight 0)."""
    return torch.softmax(scores, dim=-1)


def _unnormalized(scores: torch.Tensor) -> torch.Tensor:
    """Scores kept as weights; masked keys (-inf) get weight 0 instead."""
    return scores.masked_fill(torch.isneginf(scores), 0.0)


#: The maps :func:`attnlib.functional.attention` knows by name (``normalizer=``), each
#: along the last dimension of ``(..., n_q, n_k)`` scores with ``-inf`` at masked keys.
#: A new normaliser is named here, beside its function.
NORMALIZERS: Mapping[str, Callable[[torch.Tensor], torch.Tensor]] = MappingProxyType(
    {
        "softmax": _softmax_rows,
        "sparsemax": sparsemax,
        "entmax": entmax,
        "none": _unnormalized,
        "hardmax": hardmax,
        "straight_through": straight_through_hardmax,
    }
)
#: The names in :data:`NORMALIZERS` whose map ignores a constant added to a row:
#: attention subtracts the row maximum before dividing by the temperature, so that a
#: tiny temperature gives the limit (the arg-max) instead of ``inf - inf``.
SHIFT_INVARIANT = frozenset({"softmax", "sparsemax", "entmax"})
