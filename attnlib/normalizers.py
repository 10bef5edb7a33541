"""Normalizers: maps from a row of scores to a probability vector (softmax, sparsemax, entmax).

Each map is a *regularised prediction map* ``argmax_p <p, x> - Ω(p)`` over the probability
simplex (Def. 1 of the sparse-continuous attention paper): the Shannon negentropy gives
softmax, the 2-Tsallis negentropy sparsemax, and the α-Tsallis negentropy α-entmax, which
puts exactly zero weight on low scores when α > 1.

The threshold τ of sparsemax and entmax is found without sorting. Write ``z = (α-1) x`` and
``f(τ) = Σ [z - τ]₊^{1/(α-1)}``; the answer is the root of ``f(τ) = 1``. For α ≤ 2 the
function ``g(τ) = ‖[z - τ]₊‖_{1/(α-1)}`` is convex and decreasing, so Newton's method on
``g(τ) = 1`` started from the lower bound ``max(z) - 1`` climbs monotonically to the root and
never overshoots; for α = 2 it is Michelot's algorithm, which stops exactly once the support
is found. For α > 2 the threshold is bracketed and bisected.

Importing this module registers ``"sparsemax"`` and ``"entmax"`` (α = 1.5) as normalizers of
:func:`attnlib.attention.attention`.
"""

from __future__ import annotations

import numbers

import torch

from .attention import register_normalizer
from .utils import as_tensor, check_in_range

__all__ = [
    "softmax",
    "sparsemax",
    "entmax",
    "tsallis_entropy",
    "exp_beta",
    "log_beta",
    "fenchel_young_loss",
]

_MAX_ITER = 200


# ----------------------------------------------------------------------------- helpers
def _check_scores(x, dim: int, name: str = "x") -> tuple[torch.Tensor, int]:
    """A floating tensor of scores and ``dim`` made non-negative; ``-inf`` allowed (masked)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        x = as_tensor(x, name, allow_inf=True)
    if x.ndim == 0 or x.numel() == 0:
        raise ValueError(f"{name} must have at least one dimension and be non-empty, got shape {tuple(x.shape)}")
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim must be an integer in [{-x.ndim}, {x.ndim - 1}], got {dim!r}")
    return x, int(dim) % x.ndim


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    # Half precision has too few bits for the threshold search; work in float32 and cast back.
    return x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32


def _row_max(z: torch.Tensor, name: str = "x") -> torch.Tensor:
    # max propagates NaN and shows +inf and all-masked rows, so one reduction checks the input.
    m = z.amax(-1, keepdim=True)
    if not torch.isfinite(m).all():
        if torch.isnan(m).any():
            raise ValueError(f"{name} contains NaN values")
        if torch.isposinf(m).any():
            raise ValueError(f"{name} contains +inf values")
        raise ValueError(f"{name} has a row that is entirely -inf (every key masked)")
    return m


def _along_last(fn, x: torch.Tensor, dim: int, *args):
    """Apply ``fn`` (which works on the last dimension) along ``dim``."""
    last = x.ndim - 1
    if dim == last:
        return fn(x, *args)
    return fn(x.movedim(dim, -1), *[a.movedim(dim, -1) if isinstance(a, torch.Tensor) else a for a in args]).movedim(
        -1, dim
    )


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
    """Softmax along ``dim``: ``exp(x) / Σ exp(x)``; ``-inf`` entries (masked keys) get weight 0.

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
    return _along_last(_Softmax.apply, x, dim)


# ----------------------------------------------------------------------------- sparsemax
def _sparsemax_threshold(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Michelot's iteration: τ ← (Σ_{z>τ} z - 1) / |{z > τ}|, from τ = max z - 1 upwards."""
    tau = _row_max(z) - 1
    count = None
    for _ in range(_MAX_ITER):
        d = (z - tau).clamp_min_(0)
        new_count = torch.count_nonzero(d, dim=-1).unsqueeze(-1)
        tau = tau + (d.sum(-1, keepdim=True) - 1) / new_count
        if count is not None and torch.equal(new_count, count):
            break
        count = new_count
    return tau, count


class _Sparsemax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        z = x.to(_compute_dtype(x))
        tau, _ = _sparsemax_threshold(z)
        p = (z - tau).clamp_min_(0)
        ctx.save_for_backward(p)
        ctx.in_dtype = x.dtype
        return p.to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        support = p > 0
        g = torch.where(support, g.to(p.dtype), 0)
        mean = g.sum(-1, keepdim=True) / support.sum(-1, keepdim=True)
        return torch.where(support, g - mean, 0).to(ctx.in_dtype)


def sparsemax(x, dim: int = -1) -> torch.Tensor:
    """Sparsemax along ``dim``: the Euclidean projection of ``x`` onto the probability simplex.

    ``sparsemax(x) = [x - τ]₊`` with τ chosen so that the result sums to one; entries far
    below the largest get exactly zero. ``-inf`` entries (masked keys) get weight 0.

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
    Eq. (9) of the sparse-continuous attention paper (Martins et al., 2020) in the finite
    case, i.e. sparsemax of Martins & Astudillo (2016); its Jacobian ``Diag(s) - s sᵀ / 1ᵀs``
    is Eq. (14) with α = 2. The threshold is found by Michelot's (1986) algorithm.
    """
    x, dim = _check_scores(x, dim)
    return _along_last(_Sparsemax.apply, x, dim)


# ----------------------------------------------------------------------------- entmax
def _newton_threshold(z: torch.Tensor, p) -> torch.Tensor:
    """Root of Σ [z - τ]₊^p = 1 for p ≥ 1, by Newton's method on the convex ‖[z - τ]₊‖_p = 1.

    Started below the root, Newton's iterates on a convex decreasing function increase to
    it without overshooting; the update is ``τ += (f - f^{1-1/p}) / Σ [z - τ]₊^{p-1}``.
    """
    tau = _row_max(z) - 1
    tol = 4 * torch.finfo(z.dtype).eps
    for _ in range(_MAX_ITER):
        d = (z - tau).clamp_min_(0)
        dpm1 = _pow(d, p - 1)
        s = dpm1.sum(-1, keepdim=True)
        f = (dpm1 * d).sum(-1, keepdim=True)
        step = (f - f ** (1 - 1 / p)) / s
        tau = tau + step
        if (step <= tol * (1 + tau.abs())).all():
            break
    return tau


def _bisect_threshold(z: torch.Tensor, p) -> torch.Tensor:
    """Root of Σ [z - τ]₊^p = 1 by bisection, for any p > 0 (needed when p < 1, i.e. α > 2)."""
    m = _row_max(z)
    n = (z > -float("inf")).sum(-1, keepdim=True).to(z.dtype)
    lo, hi = m - 1, m - n ** (-1 / p)  # the largest weight lies in [1/n, 1]
    for _ in range(64 if z.dtype == torch.float64 else 36):
        mid = (lo + hi) / 2
        too_low = _pow((z - mid).clamp_min(0), p).sum(-1, keepdim=True) >= 1
        lo, hi = torch.where(too_low, mid, lo), torch.where(too_low, hi, mid)
    return lo


def _pow(d: torch.Tensor, e):
    """``d ** e`` for ``d ≥ 0``, with ``0 ** e = 0`` (also for e ≤ 0) and cheap small integer powers."""
    if isinstance(e, float) and e.is_integer() and 0 < e <= 4:
        out = d
        for _ in range(int(e) - 1):
            out = out * d
        return out
    if isinstance(e, float) and e == 0:
        return (d > 0).to(d.dtype)
    return torch.where(d > 0, d.pow(e), 0)


def _entmax_forward(z: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax of ``x = z`` along the last dimension (``alpha`` a float > 1 or a tensor)."""
    am1 = alpha - 1
    z = z * am1
    p_exp = 1 / am1
    if isinstance(alpha, torch.Tensor):
        tau = _bisect_threshold(z, p_exp) if (alpha > 2).any() else _newton_threshold(z, p_exp)
    else:
        tau = _bisect_threshold(z, p_exp) if alpha > 2 else _newton_threshold(z, p_exp)
    p = _pow((z - tau).clamp_min_(0), p_exp)
    return p / p.sum(-1, keepdim=True)


class _Entmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        cd = _compute_dtype(x)
        a = alpha.to(cd) if isinstance(alpha, torch.Tensor) else alpha
        p = _entmax_forward(x.to(cd), a)
        ctx.alpha, ctx.in_dtype = a, x.dtype
        ctx.save_for_backward(p)
        return p.to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        alpha = ctx.alpha
        g = g.to(p.dtype)
        # On the support, dp/dx = Diag(s) - s sᵀ / 1ᵀs with s = p^(2-α) (Eq. 14).
        s = _pow(p, 2 - alpha) if not isinstance(alpha, torch.Tensor) else torch.where(p > 0, p.pow(2 - alpha), 0)
        s_sum = s.sum(-1, keepdim=True)
        sg = s * g
        grad_x = sg - s * (sg.sum(-1, keepdim=True) / s_sum)
        grad_alpha = None
        if ctx.needs_input_grad[1]:
            # dp/dα = q² (p - s/Σs) - q (p log p - (s/Σs) Σ p log p), q = 1/(α-1).
            q = 1 / (alpha - 1)
            plogp = torch.special.xlogy(p, p)
            skew = s / s_sum
            dp = q * q * (p - skew) - q * (plogp - skew * plogp.sum(-1, keepdim=True))
            grad_alpha = (g * dp).sum(-1, keepdim=True).sum_to_size(alpha.shape)
        return grad_x.to(ctx.in_dtype), grad_alpha


def _check_alpha(alpha, x: torch.Tensor, dim: int):
    if isinstance(alpha, torch.Tensor):
        if not alpha.is_floating_point():
            alpha = alpha.to(torch.get_default_dtype())
        if alpha.ndim > x.ndim or (alpha.ndim == x.ndim and alpha.shape[dim] != 1):
            raise ValueError(
                f"alpha must be a number or a tensor broadcastable to x with size 1 along dim, got shape {tuple(alpha.shape)}"
            )
        if not torch.isfinite(alpha).all() or (alpha <= 1).any():
            raise ValueError("alpha as a tensor must hold finite values greater than 1")
        alpha = alpha.to(x.device)
        if alpha.ndim < x.ndim:  # align with x so that it can be moved with dim
            alpha = alpha.reshape((1,) * (x.ndim - alpha.ndim) + tuple(alpha.shape))
        if alpha.shape[dim] != 1:
            raise ValueError(f"alpha must have size 1 along dim, got shape {tuple(alpha.shape)}")
        return alpha
    return check_in_range(alpha, "alpha", 1.0, float("inf"))


def entmax(x, alpha=1.5, dim: int = -1) -> torch.Tensor:
    """α-entmax along ``dim``: ``[(α-1) x - τ]₊^{1/(α-1)}``, τ making it sum to one.

    α = 1 is softmax and α = 2 sparsemax; in between, the map is sparse (for α > 1) and
    smooth. ``-inf`` entries (masked keys) get weight 0.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry. float16, bfloat16, float32 or float64.
    alpha : float ≥ 1, or tensor > 1
        The Tsallis index. A tensor (e.g. a learned parameter) may have one value per slice:
        its shape must broadcast to ``x`` with size 1 along ``dim``; gradients flow to it.
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
    Eq. (7) of the sparse-continuous attention paper (Martins et al., 2020), the Ω_α-RPM,
    in the finite case (α-entmax of Peters et al., 2019); backward pass by Eq. (14), whose
    finite form is ``Diag(s) - s sᵀ / 1ᵀs`` with ``s = p^(2-α)`` on the support, and
    the derivative in α of Correia et al. (2019).
    """
    x, dim = _check_scores(x, dim)
    alpha = _check_alpha(alpha, x, dim)
    if not isinstance(alpha, torch.Tensor):
        if alpha == 1:
            return _along_last(_Softmax.apply, x, dim)
        if alpha == 2:
            return _along_last(_Sparsemax.apply, x, dim)
    return _along_last(_Entmax.apply, x, dim, alpha)


# ----------------------------------------------------------------------------- Tsallis
def tsallis_entropy(p, alpha=1.5, dim: int = -1) -> torch.Tensor:
    """The α-Tsallis entropy ``(1 - Σ p^α) / (α(α-1))`` (Shannon's ``-Σ p log p`` at α = 1).

    Parameters
    ----------
    p : tensor or array-like, shape (..., n, ...)
        Non-negative weights (usually a probability vector along ``dim``).
    alpha : float ≥ 1
        The Tsallis index.
    dim : int
        The dimension that is summed over.

    Returns
    -------
    tensor, shape of ``p`` without ``dim``

    Implements
    ----------
    Minus Eq. (6) of the sparse-continuous attention paper (Martins et al., 2020), with the
    1/α scaling of Blondel et al. (2020).
    """
    p = as_tensor(p, "p")
    if (p < 0).any():
        raise ValueError("p must be non-negative")
    _, dim = _check_scores(p, dim, "p")
    alpha = check_in_range(alpha, "alpha", 1.0, float("inf"))
    if alpha == 1:
        return -torch.special.xlogy(p, p).sum(dim)
    return (1 - p.pow(alpha).sum(dim)) / (alpha * (alpha - 1))


def exp_beta(u, beta: float) -> torch.Tensor:
    """The β-exponential ``[1 + (1-β) u]₊^{1/(1-β)}`` (``exp u`` at β = 1).

    Parameters
    ----------
    u : tensor or array-like
        Any real values.
    beta : float
        The deformation; entmax with index α uses β = 2 - α.

    Returns
    -------
    tensor, shape of ``u``

    Implements
    ----------
    Eq. (4) (right) of the sparse-continuous attention paper (Martins et al., 2020).
    """
    u = as_tensor(u, "u", min_ndim=0)
    beta = check_in_range(beta, "beta", -float("inf"), float("inf"))
    if beta == 1:
        return u.exp()
    return (1 + (1 - beta) * u).clamp_min(0).pow(1 / (1 - beta))


def log_beta(u, beta: float) -> torch.Tensor:
    """The β-logarithm ``(u^{1-β} - 1) / (1-β)`` (``log u`` at β = 1), for ``u ≥ 0``.

    Parameters
    ----------
    u : tensor or array-like
        Non-negative values.
    beta : float
        The deformation.

    Returns
    -------
    tensor, shape of ``u``

    Implements
    ----------
    Eq. (4) (left) of the sparse-continuous attention paper (Martins et al., 2020).
    """
    u = as_tensor(u, "u", min_ndim=0)
    if (u < 0).any():
        raise ValueError("u must be non-negative")
    beta = check_in_range(beta, "beta", -float("inf"), float("inf"))
    if beta == 1:
        return u.log()
    return (u.pow(1 - beta) - 1) / (1 - beta)


def fenchel_young_loss(scores, target, alpha=1.5, reduction: str = "mean") -> torch.Tensor:
    """The Fenchel–Young loss of α-entmax: ``⟨p̂ - y, θ⟩ + H_α(p̂) - H_α(y)``, ``p̂ = entmax(θ)``.

    It is non-negative, zero iff ``entmax(scores) = target``, and its gradient in the scores
    is ``p̂ - y``. α = 1 gives the cross-entropy (softmax) loss, α = 2 the sparsemax loss.

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
    The Fenchel–Young loss of Blondel et al. (2020), Def. 2, with the Tsallis regulariser
    of Eq. (6) of the sparse-continuous attention paper.
    """
    scores, _ = _check_scores(scores, -1, "scores")
    alpha = check_in_range(alpha, "alpha", 1.0, float("inf"))
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if isinstance(target, torch.Tensor) and not target.is_floating_point():
        if target.shape != scores.shape[:-1]:
            raise ValueError(f"target of class indices must have shape {tuple(scores.shape[:-1])}, got {tuple(target.shape)}")
        if (target < 0).any() or (target >= scores.shape[-1]).any():
            raise ValueError(f"target indices must lie in [0, {scores.shape[-1] - 1}]")
        target = torch.nn.functional.one_hot(target, scores.shape[-1]).to(scores.dtype)
    else:
        target = as_tensor(target, "target", dtype=scores.dtype, device=scores.device)
        if target.shape != scores.shape or (target < 0).any():
            raise ValueError(f"target of probabilities must be non-negative with shape {tuple(scores.shape)}")
    # p̂ is held fixed: by Danskin's theorem the loss's gradient in θ is then exactly p̂ - y.
    p_hat = entmax(scores.detach(), alpha)
    theta = scores.masked_fill(torch.isneginf(scores), 0.0)
    loss = ((p_hat - target) * theta).sum(-1) + tsallis_entropy(p_hat, alpha) - tsallis_entropy(target, alpha)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


register_normalizer("sparsemax", sparsemax)
register_normalizer("entmax", entmax)
