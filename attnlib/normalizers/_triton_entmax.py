"""Triton kernels for the row maps sparsemax, 1.5-entmax and α-entmax (any α > 1).

One program normalises one row, held whole in registers (rows up to ``MAX_COLS``).

Forward: the threshold τ of ``p = [(α-1)(x - max x) - τ]₊^{1/(α-1)}`` is found by
sort-free bisection on τ ∈ [-1, -(1/n)^{α-1}] (where Σp crosses 1), ``N_BISECT``
halvings, then the output is divided by its sum. Why bisection rather than Newton or
Halley steps: it needs no sort, no branch per row and no safeguard, works for every
α > 1 (also α > 2, where Newton on τ is not safe) and for a per-row α; 40 halvings of
an interval of width ≤ 1 leave τ exact to fp32 rounding, and the final division
restores Σp = 1 exactly. The cost is 40 cheap passes over a row held in registers.

Backward: one pass, the entmax Jacobian-vector product through the support,
``s ⊙ g - s (sᵀg / 1ᵀs)`` with ``s = p^{2-α}`` on the support (Eq. (14) of the
sparse-continuous attention paper).

Inputs may be float32, bfloat16 or float16; everything is accumulated in float32 and
written back in the input's dtype. ``-inf`` entries get weight 0; a row that is entirely
``-inf`` gets an all-zero output and a zero gradient.

The kernels run only when asked (``ATTNLIB_TRITON=1``: no committed run on real
hardware has verified them yet), and on first use per specialisation (sparsemax,
1.5-entmax, any α), dtype and device, forward and backward are checked against the
torch engine on a probe (:func:`_probe`); where they disagree, the maps warn once and
use the torch engine (:func:`attnlib.utils.kernels.probed`).

Triton is optional: importing this module without it succeeds, and :func:`accepts`
returns False. Launches go through :func:`attnlib.utils.kernels.launch`: where Triton
refuses a kernel, the functions below return None and the maps use the torch engine.
"""

from __future__ import annotations

import torch

from ..utils import kernels
from ..utils.kernels import HAVE_TRITON
from . import _entmax as entmax_engine

__all__ = ["accepts", "entmax_forward", "entmax_backward"]

if HAVE_TRITON:
    import triton
    import triton.language as tl

    pow_pos = kernels.pow_pos

MAX_COLS = 1 << 15  # a row is held whole in one program
N_BISECT = 40


def accepts(x: torch.Tensor) -> bool:
    """Whether the kernels take the scores ``x`` (normalised along the last dim)."""
    return (
        x.is_cuda
        and kernels.runnable()
        and kernels.enabled("rows")
        and x.dtype in kernels.DTYPES
        and x.ndim >= 1
        and 0 < x.shape[-1] <= MAX_COLS
    )


if HAVE_TRITON:

    @triton.jit
    def _entmax_fwd_kernel(
        x_ptr, p_ptr, am1_ptr, n_cols, stride_x, stride_p,
        N_ITER: tl.constexpr, BLOCK: tl.constexpr, KIND: tl.constexpr,
    ):  # fmt: skip
        # KIND: 1 sparsemax (q = 1), 2 1.5-entmax (q = 2), 0 any α (q = 1/(α-1))
        row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 elements stay exact
        cols = tl.arange(0, BLOCK)
        inside = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=inside, other=float("-inf"))
        x = x.to(tl.float32)
        am1 = tl.load(am1_ptr + row).to(tl.float32)
        top = tl.max(x, axis=0)
        top = tl.where(top == float("-inf"), 0.0, top)  # not -inf - -inf = NaN
        z = (x - top) * am1  # max z = 0; masked entries -inf
        expo = 1.0 / am1
        # not n_cols.to(...): Triton passes an int argument equal to 1 as a constant
        nf = tl.zeros_like(top) + n_cols
        lo = tl.zeros_like(top) - 1.0  # Σp ≥ 1 here
        hi = -pow_pos(1.0 / nf, am1)  # Σp ≤ 1 here
        for _ in range(N_ITER):
            mid = 0.5 * (lo + hi)
            d = tl.maximum(z - mid, 0.0)
            if KIND == 1:
                p = d
            elif KIND == 2:
                p = d * d
            else:
                p = pow_pos(d, expo)
            total = tl.sum(p, axis=0)
            big = total >= 1.0
            lo = tl.where(big, mid, lo)
            hi = tl.where(big, hi, mid)
        d = tl.maximum(z - lo, 0.0)
        if KIND == 1:
            p = d
        elif KIND == 2:
            p = d * d
        else:
            p = pow_pos(d, expo)
        total = tl.sum(p, axis=0)  # 0 on a row of -inf only: its p is 0 already
        p = p / tl.where(total > 0, total, 1.0)
        tl.store(
            p_ptr + row * stride_p + cols, p.to(p_ptr.dtype.element_ty), mask=inside
        )

    @triton.jit
    def _entmax_bwd_kernel(
        p_ptr, g_ptr, gx_ptr, am1_ptr, n_cols, stride_p, stride_g, stride_gx,
        BLOCK: tl.constexpr, KIND: tl.constexpr,
    ):  # fmt: skip
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        inside = cols < n_cols
        p = tl.load(p_ptr + row * stride_p + cols, mask=inside, other=0.0).to(
            tl.float32
        )
        g = tl.load(g_ptr + row * stride_g + cols, mask=inside, other=0.0).to(
            tl.float32
        )
        am1 = tl.load(am1_ptr + row).to(tl.float32)
        if KIND == 1:
            s = tl.where(p > 0, 1.0, 0.0)
        elif KIND == 2:
            s = tl.sqrt(tl.maximum(p, 0.0))
        else:
            s = pow_pos(p, 1.0 - am1)  # p^(2-α) on the support
        ssum = tl.sum(s, axis=0)
        sg = s * g
        mean = tl.sum(sg, axis=0) / tl.where(ssum > 0, ssum, 1.0)
        gx = sg - s * mean
        tl.store(
            gx_ptr + row * stride_gx + cols, gx.to(gx_ptr.dtype.element_ty), mask=inside
        )


def _kind(alpha) -> int:
    if isinstance(alpha, torch.Tensor):
        return 0
    return 1 if alpha == 2 else 2 if alpha == 1.5 else 0


def _am1_rows(alpha, x2: torch.Tensor, lead) -> torch.Tensor:
    """α - 1 per row of the 2-D view ``x2``, float32, on x's device."""
    if isinstance(alpha, torch.Tensor):
        a = alpha.to(device=x2.device, dtype=torch.float32)
        a = a.expand(*lead, 1).reshape(-1)
        return (a - 1).contiguous()
    return torch.full((x2.shape[0],), float(alpha) - 1, device=x2.device,
                      dtype=torch.float32)  # fmt: skip


def _launch(n: int) -> dict:
    """The block holding a row of ``n`` and the warps sharing it (more for long rows,
    so that each thread holds at most 64 entries)."""
    block = max(16, triton.next_power_of_2(n))
    return {"BLOCK": block, "num_warps": min(16, max(4, block // 2048))}


def _checked(x: torch.Tensor, alpha) -> bool:
    """Whether the kernels of ``alpha``'s specialisation passed, on ``x``'s dtype and
    device, their first-use check (run here the first time)."""
    kind = _kind(alpha)
    key = ("entmax_rows", kind, x.dtype, str(x.device))
    return kernels.probed(key, lambda: _probe(kind, x.dtype, x.device))


#: The probe's tolerance on p (relative to each row's largest weight), by dtype.
PROBE_TOL = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
#: The probe's row lengths: one short row block, one long one (many warps).
PROBE_COLS = (7, 2500)


def _probe_scores(n: int) -> torch.Tensor:
    """Six float64 rows of ``n`` scores: random, masked to five keys, every third key
    masked, a four-way tie at the top, entirely -inf, and a large offset."""
    g = torch.Generator().manual_seed(50)
    x = 2 * torch.randn(6, n, generator=g, dtype=torch.float64)
    x[1, 5:] = float("-inf")
    x[2, ::3] = float("-inf")
    x[3, :4] = x[3].max() + 1
    x[4] = float("-inf")
    x[5] += 100
    return x


def _reference(x: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax of the float64 CPU rows ``x`` by the torch engine (sort or bisection);
    a row that is entirely -inf gets zeros, as in the maps."""
    top = x.amax(-1, keepdim=True)
    dead = torch.isneginf(top)
    x, top = x.masked_fill(dead, 0), top.masked_fill(dead, 0)
    p = entmax_engine.threshold_map(x, top, alpha, torch.float64)
    return p.masked_fill(dead, 0)


def _probe(kind: int, dtype: torch.dtype, device) -> str | bool | None:
    """The kernels of ``kind`` on ``dtype`` and ``device`` against the torch engine
    (on the CPU, float64) on :func:`_probe_scores`: None where they agree, False
    where Triton refused a kernel, else where they disagree."""
    alpha = {1: 2.0, 2: 1.5}.get(kind, torch.linspace(1.2, 2.8, 6).unsqueeze(-1))
    tol = PROBE_TOL[dtype]
    for n in PROBE_COLS:
        x = _probe_scores(n).to(dtype)
        g = torch.randn(6, n, generator=torch.Generator().manual_seed(51)).to(dtype)
        a = alpha.to(device) if isinstance(alpha, torch.Tensor) else alpha
        p = _forward(x.to(device), a)
        gx = None if p is None else _backward(p, g.to(device), a)
        if gx is None:
            return False
        p64, gx64 = p.double().cpu(), gx.double().cpu()
        a64 = alpha.double() if kind == 0 else alpha
        ref = _reference(x.double(), a64)
        ref_g = entmax_engine.entmax_vjp(p64, g.double(), a64)
        scale = ref.amax(-1, keepdim=True).clamp_min(1e-3)
        gscale = ref_g.abs().amax(-1, keepdim=True).clamp_min(1e-3)
        if not ((p64 - ref).abs() <= tol * scale).all():
            err = ((p64 - ref).abs() / scale).nan_to_num(float("inf")).max().item()
            return f"forward, rows of {n}: off by {err:.2g} of a row's top weight"
        if not ((gx64 - ref_g).abs() <= 4 * tol * gscale).all():
            err = ((gx64 - ref_g).abs() / gscale).nan_to_num(float("inf")).max().item()
            return f"backward, rows of {n}: off by {err:.2g} of a row's largest entry"
    return None


def entmax_forward(x: torch.Tensor, alpha) -> torch.Tensor | None:
    """α-entmax of ``x`` along its last dim by the Triton kernel (α float or tensor);
    None where Triton refuses the kernel or it failed its first-use check."""
    return _forward(x, alpha) if _checked(x, alpha) else None


def entmax_backward(p: torch.Tensor, g: torch.Tensor, alpha) -> torch.Tensor | None:
    """The gradient in the scores of α-entmax at ``p`` given ``g`` (Triton kernel);
    None where Triton refuses the kernel or it failed its first-use check."""
    return _backward(p, g, alpha) if _checked(p, alpha) else None


def _forward(x: torch.Tensor, alpha) -> torch.Tensor | None:
    """:func:`entmax_forward` without the check."""
    shape = x.shape
    x2 = x.contiguous().view(-1, shape[-1])
    p = torch.empty_like(x2)
    if x2.shape[0]:
        am1 = _am1_rows(alpha, x2, shape[:-1])
        if not kernels.launch(
            _entmax_fwd_kernel, (x2.shape[0],),
            x2, p, am1, x2.shape[1], x2.stride(0), p.stride(0),
            N_ITER=N_BISECT, KIND=_kind(alpha), **_launch(x2.shape[1]),
        ):  # fmt: skip
            return None
    return p.view(shape)


def _backward(p: torch.Tensor, g: torch.Tensor, alpha) -> torch.Tensor | None:
    """:func:`entmax_backward` without the check."""
    shape = p.shape
    p2 = p.contiguous().view(-1, shape[-1])
    g2 = g.contiguous().view(-1, shape[-1])  # read in its own dtype, as float32
    gx = torch.empty_like(p2)
    if p2.shape[0]:
        am1 = _am1_rows(alpha, p2, shape[:-1])
        if not kernels.launch(
            _entmax_bwd_kernel, (p2.shape[0],),
            p2, g2, gx, am1, p2.shape[1], p2.stride(0), g2.stride(0), gx.stride(0),
            KIND=_kind(alpha), **_launch(p2.shape[1]),
        ):  # fmt: skip
            return None
    return gx.view(shape)
