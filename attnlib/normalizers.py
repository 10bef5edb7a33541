"""Normalizers: maps from a row of scores to a probability vector (softmax, sparsemax, entmax).

Each map is a *regularised prediction map* ``argmax_p <p, x> - Ω(p)`` over the probability
simplex (Def. 1 of the sparse-continuous attention paper): the Shannon negentropy gives
softmax, the 2-Tsallis negentropy sparsemax, and the α-Tsallis negentropy α-entmax, which
puts exactly zero weight on low scores when α > 1.

The threshold τ of sparsemax and entmax is found without sorting. Write ``z = (α-1) x`` and
``f(τ) = Σ [z - τ]₊^{1/(α-1)}``; the answer is the root of ``f(τ) = 1``. For α ≤ 2 the
function ``g(τ) = ‖[z - τ]₊‖_{1/(α-1)}`` is convex and decreasing, so Newton's method on
``g(τ) = 1`` started from a lower bound climbs monotonically to the root and never
overshoots; for α = 2 it is Michelot's algorithm, which stops exactly once the support is
found. The start is the threshold of a small subset of each row (a lower bound, since
dropping entries can only lower it), which usually holds the whole support, so that one
pass over the full row often suffices. This holds for a per-row tensor α too (learned α);
for α > 2, where g is not convex, the threshold is bracketed and bisected.

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


# ----------------------------------------------------------------------------- threshold search
# All the searches below work in x-space: p ∝ [x - t]₊^q with q = 1/(α-1). On a CPU the cost
# is memory traffic and per-operation overhead, not arithmetic. A pass over the data works
# through the rows in blocks of about _BLOCK elements, small enough for the L2 cache, so that
# its several operations (each a plain elementwise one or a sum/2-norm, the fast ones) find
# their data there; the per-row bookkeeping between passes is done once for all rows.
# Two facts keep the passes few: the threshold of any subset of a row is a lower bound on the
# row's threshold (dropping entries can only lower Σ [x - t]₊^q), so Newton can start from the
# threshold of a small candidate subset, the row's "slab maxima", which usually holds the
# whole support; and Newton from below never overshoots, so the pass that finds the step
# negligible already holds the gaps [x - t]₊ of the output.
_BLOCK = 1 << 17
_SLABS = 8  # candidates per row: the maxima of _SLABS column slabs, each at least _MIN_SLAB wide
_MIN_SLAB = 16


def _blocks(x: torch.Tensor):
    """Row slices ``(start, stop)`` of the 2-D ``x``, each about ``_BLOCK`` elements."""
    step = max(1, _BLOCK // x.shape[-1])
    return [(i, min(i + step, x.shape[0])) for i in range(0, x.shape[0], step)]


def _special_q(alpha) -> int:
    """q = 1/(α-1) where it has a faster code path (1, 2 or 4), else 0 (also for a tensor α)."""
    if isinstance(alpha, torch.Tensor):
        return 0
    q = 1 / (alpha - 1)
    return int(q) if q in (1, 2, 4) else 0


def _rows_of(alpha, rows):
    """The α of some rows: ``alpha`` itself if it is a number, else those rows of the per-row column."""
    return alpha[rows] if isinstance(alpha, torch.Tensor) else alpha


def _candidates(x: torch.Tensor) -> torch.Tensor:
    """A subset of each row of the 2-D ``x`` that holds its largest entries: the elementwise
    maximum of ``k`` column slabs, plus the columns left over."""
    n = x.shape[-1]
    k = min(_SLABS, n // _MIN_SLAB)
    if k < 2:
        return x
    w = n // k
    if n == k * w and w >= 64:  # one reduction; for narrow slabs the chain below is faster
        return x.view(len(x), k, w).amax(1)
    c = torch.maximum(x[:, :w], x[:, w : 2 * w])
    for j in range(2, k):
        torch.maximum(c, x[:, j * w : (j + 1) * w], out=c)
    return c if n == k * w else torch.cat((c, x[:, k * w :]), 1)


def _gap_sums(x, t, alpha, d, work, n, s, finish: bool) -> None:
    """The gaps ``d = [x - t]₊`` and their power sums, written into ``n`` and ``s``; with
    ``finish``, ``d`` is then normalised into the weights ``p ∝ d^q`` in place.

    The sums are kept in the form the pass gives them most cheaply (see :func:`_step`):
    ``(Σd, Σd⁰)`` at q = 1, ``(‖d‖₂, Σd)`` at q = 2, ``(‖d²‖₂, Σd³)`` at q = 4, and otherwise,
    for ``e = (α-1) d`` (scaled so that ``e^q`` cannot overflow), ``(Σe^q, Σe^(q-1))``.
    """
    am1 = alpha - 1
    q = 1 / am1
    k = _special_q(alpha)
    torch.sub(x, t, out=d).clamp_min_(0)
    if k == 1:
        torch.sum(d, -1, keepdim=True, out=n)
        torch.sum(torch.sign(d, out=work), -1, keepdim=True, out=s)
        if finish:
            d.div_(n)
    elif k == 2:
        torch.linalg.vector_norm(d, 2, -1, keepdim=True, out=n)
        torch.sum(d, -1, keepdim=True, out=s)
        if finish:
            d.div_(n).square_()
    elif k == 4:
        d2 = torch.square(d, out=work)
        torch.linalg.vector_norm(d2, 2, -1, keepdim=True, out=n)
        torch.sum(d2.mul_(d), -1, keepdim=True, out=s)
        if finish:  # d⁴ / Σd⁴, from the d³ left in work
            d.mul_(d2).div_(n.square())
    else:
        e = d.mul_(am1)
        e1 = torch.pow(e, q - 1, out=work)
        torch.sum(e1, -1, keepdim=True, out=s)
        torch.sum(e1.mul_(e), -1, keepdim=True, out=n)
        if finish:
            d.pow_(q).div_(n)


def _step(n: torch.Tensor, s: torch.Tensor, alpha) -> torch.Tensor:
    """The Newton step, in units of x, on ``‖(α-1)[x - t]₊‖_q = 1`` from the sums of :func:`_gap_sums`.

    With ``N = Σ d^q`` and ``S = Σ d^(q-1)`` it is ``(N - N^(1-1/q)/(α-1)) / S``; the function is
    convex and decreasing in t, so from below the step never overshoots the root.
    """
    am1 = alpha - 1
    k = _special_q(alpha)
    if k == 1:
        return (n - 1) / s
    if k == 2:
        return n * (n - 2) / s
    if k == 4:
        r = n.sqrt()
        return r * n * (r - 4) / s
    return (n - n.pow(1 - am1)) / (s * am1)


def _sum_s(n: torch.Tensor, s: torch.Tensor, alpha) -> torch.Tensor:
    """``Σ p^(2-α) = S / N^(1-1/q)`` per row from the sums of :func:`_gap_sums` (for the backward pass)."""
    k = _special_q(alpha)
    if k == 1:
        return s
    if k == 2:
        return s / n
    if k == 4:
        return s / n.pow(1.5)
    return s / n.pow(2 - alpha)


def _newton_threshold(x: torch.Tensor, t: torch.Tensor, alpha) -> torch.Tensor:
    """Newton from the per-row lower bound ``t`` to the threshold of each row of the 2-D ``x``
    (small ``x``: the candidates); the result is still a lower bound. Once at most half the
    rows still move, only those are iterated on, gathered."""
    q = 1 / (alpha - 1)
    tol = 4 * torch.finfo(x.dtype).eps
    d, work = torch.empty_like(x), None if _special_q(alpha) == 2 else torch.empty_like(x)
    n, s = torch.empty_like(t), torch.empty_like(t)
    for _ in range(_MAX_ITER):
        _gap_sums(x, t, alpha, d, work, n, s, False)
        step = _step(n, s, alpha)
        todo = step.abs() > tol * (q + t.abs())
        n_todo = int(todo.sum())
        if n_todo == 0:
            return t
        t = torch.where(todo, t + step, t)
        if 2 * n_todo <= len(x):
            idx = torch.nonzero(todo.squeeze(1)).squeeze(1)
            return t.index_copy_(0, idx, _newton_threshold(x[idx], t[idx], _rows_of(alpha, idx)))
    return t


def _solve_blocks(x: torch.Tensor, t: torch.Tensor, alpha, p: torch.Tensor) -> torch.Tensor:
    """α-entmax (1 < α ≤ 2) of the rows of the contiguous 2-D ``x`` into ``p``, by Newton from
    the lower bound ``t``; returns the row sums of ``p^(2-α)``.

    Each pass over a block computes the sums for the Newton step and, while the gaps are in
    cache, the output as if ``t`` were already the threshold. Rows whose step was not
    negligible take another pass: all rows while they are many, else only those, gathered.
    """
    q = 1 / (alpha - 1)
    blocks = _blocks(x)
    work = None if _special_q(alpha) == 2 else torch.empty_like(x[: blocks[0][1]])
    tol = 4 * torch.finfo(x.dtype).eps
    n, s = torch.empty_like(t), torch.empty_like(t)
    for _ in range(_MAX_ITER):
        for i, j in blocks:
            a = _rows_of(alpha, slice(i, j))
            _gap_sums(x[i:j], t[i:j], a, p[i:j], None if work is None else work[: j - i], n[i:j], s[i:j], True)
        step = _step(n, s, alpha)
        todo = step > tol * (q + t.abs())
        n_todo = int(todo.sum())
        if n_todo == 0:
            return _sum_s(n, s, alpha)
        t = torch.where(todo, t + step, t)
        if 4 * n_todo <= len(x):
            break
    else:  # not reached in practice: Newton converges quadratically
        return _sum_s(n, s, alpha)
    idx = torch.nonzero(todo.squeeze(1)).squeeze(1)
    p_i = torch.empty_like(x[:n_todo])
    sum_s = _sum_s(n, s, alpha).index_copy_(0, idx, _solve_blocks(x[idx], t[idx], _rows_of(alpha, idx), p_i))
    p.index_copy_(0, idx, p_i)
    return sum_s


def _lower_bound(x: torch.Tensor, alpha) -> torch.Tensor:
    """A lower bound on the threshold of each row of the 2-D ``x``: that of its candidates
    (found the same way, recursively), or ``max - q`` (the largest weight is at most 1)."""
    cand = _candidates(x)
    if cand is x:
        return _row_max(x) - 1 / (alpha - 1)
    return _newton_threshold(cand, _lower_bound(cand, alpha), alpha)


def _entmax_blocks(x: torch.Tensor, alpha):
    """α-entmax (1 < α ≤ 2) of the rows of the contiguous 2-D ``x``, and the row sums of ``p^(2-α)``.

    ``alpha`` is a number or a column of one α per row.
    """
    p = torch.empty_like(x)
    return p, _solve_blocks(x, _lower_bound(x, alpha), alpha, p)


def _jacobian_vector_blocks(p: torch.Tensor, sum_s: torch.Tensor, g: torch.Tensor, alpha: float) -> torch.Tensor:
    """``(Diag(s) - s sᵀ/1ᵀs) g`` per row with ``s = p^(2-α)``, block by block.

    ``s`` is made in cache without ``sqrt``/``pow`` of zeros, which are an order of magnitude
    slower than of positive numbers: the support indicator at α = 2, ``√(p + tiny) - √tiny``
    at α = 1.5 (√tiny is a power of two, so zeros stay exactly zero), ``p·(p + tiny)^(-1/4)``
    at α = 1.25.
    """
    q = 1 / (alpha - 1)
    grad = torch.empty_like(g)
    blocks = _blocks(g)
    work = torch.empty_like(g[: blocks[0][1]])
    tiny = torch.finfo(p.dtype).tiny
    for i, j in blocks:
        pb, gb, ob, sb = p[i:j], g[i:j], grad[i:j], work[: j - i]
        if q == 1:
            torch.sign(pb, out=sb)
        elif q == 2:
            torch.add(pb, tiny, out=sb).sqrt_().sub_(tiny**0.5)
        elif q == 4:
            torch.add(pb, tiny, out=sb).sqrt_().rsqrt_().mul_(pb)
        else:
            sb = torch.where(pb > 0, pb.pow(2 - alpha), 0)
        mean = torch.mul(gb, sb, out=ob).sum(-1, keepdim=True).div_(sum_s[i:j])
        ob.addcmul_(sb, mean, value=-1)
    return grad


def _bisect_entmax(x: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax for any α > 1 (``alpha`` may be a per-row tensor) by bisection on τ in Σ [(α-1)x - τ]₊^q = 1."""
    z = x * (alpha - 1)
    q = 1 / (alpha - 1)
    m = _row_max(z)
    n = torch.isfinite(z).sum(-1, keepdim=True).to(z.dtype)
    lo, hi = m - 1, m - n ** (-(alpha - 1))  # the largest weight lies in [1/n, 1]
    for _ in range(64 if z.dtype == torch.float64 else 36):
        mid = (lo + hi) / 2
        too_low = torch.where(z > mid, (z - mid).clamp_min(0).pow(q), 0).sum(-1, keepdim=True) >= 1
        lo, hi = torch.where(too_low, mid, lo), torch.where(too_low, hi, mid)
    p = torch.where(z > lo, (z - lo).clamp_min(0).pow(q), 0)
    return p / p.sum(-1, keepdim=True)


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous().view(-1, x.shape[-1])


# ----------------------------------------------------------------------------- sparsemax
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
    return _along_last(_Entmax.apply, x, dim, 2.0)


# ----------------------------------------------------------------------------- entmax
class _Entmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        cd = _compute_dtype(x)
        alpha = alpha.to(cd) if isinstance(alpha, torch.Tensor) else alpha
        ctx.alpha, ctx.in_dtype = alpha, x.dtype
        rows = _rows(x.to(cd))
        if not isinstance(alpha, torch.Tensor) and alpha <= 2:
            p, sum_s = _entmax_blocks(rows, alpha)
            ctx.save_for_backward(p, sum_s)
            return p.view(x.shape).to(x.dtype)
        if isinstance(alpha, torch.Tensor) and (alpha <= 2).all():  # Newton, one α per row
            p = _entmax_blocks(rows, alpha.expand(*x.shape[:-1], 1).reshape(-1, 1))[0].view(x.shape)
        else:
            p = _bisect_entmax(x.to(cd), alpha)
        ctx.save_for_backward(p)
        return p.to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        alpha = ctx.alpha
        if not isinstance(alpha, torch.Tensor) and alpha <= 2:
            p, sum_s = ctx.saved_tensors
            return _jacobian_vector_blocks(p, sum_s, _rows(g.to(p.dtype)), alpha).view(g.shape).to(ctx.in_dtype), None
        (p,) = ctx.saved_tensors
        g = g.to(p.dtype)
        s = torch.where(p > 0, p.pow(2 - alpha), 0)
        sg = s * g
        grad_x = sg - s * (sg.sum(-1, keepdim=True) / s.sum(-1, keepdim=True))
        grad_alpha = None
        if ctx.needs_input_grad[1]:
            # dp/dα = q² (p - s̃) - q (p log p - s̃ Σ p log p), with q = 1/(α-1) and s̃ = s/Σs.
            q = 1 / (alpha - 1)
            skew = s / s.sum(-1, keepdim=True)
            plogp = torch.special.xlogy(p, p)
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
