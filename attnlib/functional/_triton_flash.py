"""A flash entmax attention: sparsemax / α-entmax attention without the n × n weights.

For each block of queries the kernel walks the keys block by block, three times:

1. the row maximum ``m`` of the raw scores ``s = q·k`` (masked keys -inf);
2. the threshold τ of ``p = [(α-1) · scale · (s - m) - τ]₊^{1/(α-1)}`` by sort-free
   bisection on τ ∈ [-1, 0] (``N_BISECT`` halvings, each a blockwise sum of
   unnormalised weights): the maximum is subtracted before the scale, as in
   attention's dense path, so that a tiny temperature gives the limit;
3. the output ``Σ p v / Σ p``, skipping every key block whose weights are all zero.

Only ``m``, τ and ``Σ p`` per query are kept (memory linear in the length). The backward
recomputes the tiles: per query ``c = Σ s̃ g / Σ s̃`` with ``s̃ = p^{2-α}`` on the support
and ``g = dO vᵀ``; then ``dS = s̃ (g - c)``, ``dQ = dS K · scale`` (one program per query
block, one pass over the keys: ``dS K = (s̃ g) K - c (s̃ K)``) and ``dK = dSᵀ Q · scale``,
``dV = pᵀ dO`` (one program per key block), zero key or query blocks skipped.
Bisection rather than Halley steps: no per-row safeguard, any α > 1 (per head), at the
cost of ``N_BISECT`` extra passes over the keys in the forward; its speed against
AdaSplash's Halley + bisection is unmeasured until a GPU is at hand.

Inputs float32, float16 or bfloat16, accumulated in float32; boolean masks (True =
attend, broadcastable to ``(..., n_q, n_k)``), causal masking (key j ≤ query i), α a
number or a tensor with one value per batch-and-head. Queries with no key to attend get
a zero output and zero gradients.

The engine of :func:`attnlib.functional.attention` (its path without weights on CUDA):
it computes attention's output, so it lives in the attention package rather than in
``normalizers``. Launches go through :func:`attnlib.utils.kernels.launch`: where Triton
refuses a kernel, where the kernels are not asked for (``ATTNLIB_TRITON=1``) or fail
their first-use check (:func:`attnlib.utils.kernels.probe_flash`),
:func:`flash_entmax_attention` returns None and attention takes its dense path.
"""

from __future__ import annotations

import math

import torch

from ..normalizers import entmax
from ..utils import kernels
from ..utils.kernels import HAVE_TRITON

__all__ = ["BLOCK_M", "BLOCK_N", "accepts", "flash_entmax_attention"]

if HAVE_TRITON:
    import triton
    import triton.language as tl

    pow_pos = kernels.pow_pos

N_BISECT = 30
BLOCK_M = 64
BLOCK_N = 64
MAX_HEAD = 256  # q, k and v rows held whole in a tile


if HAVE_TRITON:

    @triton.jit
    def _tile(ptr, offs_a, stride_a, n_a, offs_b, stride_b, n_b):
        """The float32 tile ``ptr[a, b]`` at these offsets, zero outside the bounds."""
        return tl.load(
            ptr + offs_a[:, None] * stride_a + offs_b[None, :] * stride_b,
            mask=(offs_a[:, None] < n_a) & (offs_b[None, :] < n_b), other=0.0,
        ).to(tl.float32)  # fmt: skip

    @triton.jit
    def _put(ptr, offs_a, stride_a, n_a, offs_b, n_b, x):
        """Store ``x`` in ``ptr``'s dtype at rows ``offs_a``, columns ``offs_b``."""
        tl.store(
            ptr + offs_a[:, None] * stride_a + offs_b[None, :],
            x.to(ptr.dtype.element_ty),
            mask=(offs_a[:, None] < n_a) & (offs_b[None, :] < n_b),
        )  # fmt: skip

    @triton.jit
    def _row_stats(Mrow, Tau, Ssum, Am1, bh, n_q, offs_m, scale):
        """A query block's saved m, τ and Σ p, its α - 1, the scores' factor
        ``scale · (α - 1)`` and 1/(α - 1)."""
        row_ok = offs_m < n_q
        m = tl.load(Mrow + bh * n_q + offs_m, mask=row_ok, other=0.0)
        tau = tl.load(Tau + bh * n_q + offs_m, mask=row_ok, other=0.0)
        ssum = tl.load(Ssum + bh * n_q + offs_m, mask=row_ok, other=0.0)
        am1 = tl.load(Am1 + bh + offs_m * 0).to(tl.float32)
        return m, tau, ssum, am1, scale * am1, 1.0 / am1

    @triton.jit
    def _bases(Q, K, V, Mask, bh, MH, sqb, skb, svb, smb, smh):
        """This batch-and-head's q, k, v and mask (heads of the mask: ``MH``)."""
        m_at = Mask + (bh // MH) * smb + (bh % MH) * smh
        return Q + bh * sqb, K + bh * skb, V + bh * svb, m_at

    @triton.jit
    def _keep(
        m_at, start_n, offs_m, n_q, n_k, smq, smk,
        BN: tl.constexpr, HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr,
    ):  # fmt: skip
        """Which (query, key) pairs of a key block may attend: in bounds, the mask's,
        causal."""
        offs_n = start_n + tl.arange(0, BN)
        keep = (offs_m[:, None] < n_q) & (offs_n[None, :] < n_k)
        if HAS_MASK:
            mk = tl.load(
                m_at + offs_m[:, None].to(tl.int64) * smq + offs_n[None, :] * smk,
                mask=keep, other=0,
            )  # fmt: skip
            keep = keep & (mk != 0)
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        return keep

    @triton.jit
    def _scores(
        q, k_at, m_at, start_n, offs_m, n_q, n_k, d, skn, smq, smk,
        BN: tl.constexpr, BD: tl.constexpr, HAS_MASK: tl.constexpr,
        CAUSAL: tl.constexpr, DOT: tl.constexpr,
    ):  # fmt: skip
        """The raw scores q·k of a key block (not yet scaled), masked keys -inf."""
        offs_n = start_n + tl.arange(0, BN)
        kt = _tile(k_at, tl.arange(0, BD), 1, d, offs_n, skn, n_k)
        s = tl.dot(q, kt, input_precision=DOT)
        keep = _keep(m_at, start_n, offs_m, n_q, n_k, smq, smk, BN, HAS_MASK, CAUSAL)
        return tl.where(keep, s, float("-inf"))

    @triton.jit
    def _weights(d, expo, KIND: tl.constexpr):
        if KIND == 1:
            w = d
        elif KIND == 2:
            w = d * d
        else:
            w = pow_pos(d, expo[:, None])
        return w

    @triton.jit
    def _fwd_kernel(
        Q, K, V, Out, Mrow, Tau, Ssum, Am1, Mask,
        n_q, n_k, d, dv, scale, MH,
        sqb, sqm, skb, skn, svb, svn, sob, som, smb, smh, smq, smk,
        N_ITER: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
        BDV: tl.constexpr, KIND: tl.constexpr, HAS_MASK: tl.constexpr,
        CAUSAL: tl.constexpr, DOT: tl.constexpr,
    ):  # fmt: skip
        bh = tl.program_id(1).to(tl.int64)  # offsets past 2^31 elements stay exact
        q_at, k_at, v_at, m_at = _bases(Q, K, V, Mask, bh, MH, sqb, skb, svb, smb, smh)
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_d = tl.arange(0, BD)
        offs_v = tl.arange(0, BDV)
        row_ok = offs_m < n_q
        q = _tile(q_at, offs_m, sqm, n_q, offs_d, 1, d)
        am1 = tl.load(Am1 + bh + offs_m * 0).to(tl.float32)
        zs, expo = scale * am1, 1.0 / am1
        # the row maximum of the raw scores, subtracted before scaling (as attention's
        # dense path: a tiny temperature gives the limit, not inf - inf). A row with a
        # NaN or +inf score, or whose kept keys all score -inf (q·k overflowing
        # float32), is flagged; a row that keeps no key is empty.
        m = tl.full((BM,), float("-inf"), tl.float32)
        kept = tl.zeros((BM,), tl.int32)
        nan = tl.zeros((BM,), tl.int32)
        for start_n in range(0, n_k, BN):
            s = _scores(q, k_at, m_at, start_n, offs_m, n_q, n_k, d, skn, smq, smk,
                        BN, BD, HAS_MASK, CAUSAL, DOT)  # fmt: skip
            keep = _keep(m_at, start_n, offs_m, n_q, n_k, smq, smk, BN, HAS_MASK,
                         CAUSAL)  # fmt: skip
            m = tl.maximum(m, tl.max(s, axis=1))
            kept = tl.maximum(kept, tl.max(keep.to(tl.int32), axis=1))
            nan = tl.maximum(nan, tl.max((s != s).to(tl.int32), axis=1))
        empty = kept == 0
        bad = (nan > 0) | (m == float("inf")) | (~empty & (m == float("-inf")))
        m_safe = tl.where(empty | bad, 0.0, m)
        lo = tl.full((BM,), -1.0, tl.float32)
        hi = tl.zeros((BM,), tl.float32)
        for _ in range(N_ITER):
            mid = 0.5 * (lo + hi)
            total = tl.zeros((BM,), tl.float32)
            for start_n in range(0, n_k, BN):
                s = _scores(q, k_at, m_at, start_n, offs_m, n_q, n_k, d, skn, smq,
                            smk, BN, BD, HAS_MASK, CAUSAL, DOT)  # fmt: skip
                z = (s - m_safe[:, None]) * zs[:, None] - mid[:, None]
                total += tl.sum(_weights(tl.maximum(z, 0.0), expo, KIND), axis=1)
            big = total >= 1.0
            lo = tl.where(big, mid, lo)
            hi = tl.where(big, hi, mid)
        acc = tl.zeros((BM, BDV), tl.float32)
        ssum = tl.zeros((BM,), tl.float32)
        for start_n in range(0, n_k, BN):
            s = _scores(q, k_at, m_at, start_n, offs_m, n_q, n_k, d, skn, smq, smk,
                        BN, BD, HAS_MASK, CAUSAL, DOT)  # fmt: skip
            z = (s - m_safe[:, None]) * zs[:, None] - lo[:, None]
            if tl.max(tl.max(z, axis=1), axis=0) > 0:  # else the block's weights are 0
                w = _weights(tl.maximum(z, 0.0), expo, KIND)
                ssum += tl.sum(w, axis=1)
                offs_n = start_n + tl.arange(0, BN)
                vb = _tile(v_at, offs_n, svn, n_k, offs_v, 1, dv)
                acc += tl.dot(w, vb, input_precision=DOT)
        ssum = tl.where(empty, 0.0, ssum)
        out = acc / tl.where(ssum > 0, ssum, 1.0)[:, None]
        out = tl.where(bad[:, None], float("nan"), out)  # the caller's check raises
        _put(Out + bh * sob, offs_m, som, n_q, offs_v, dv, out)
        tl.store(Mrow + bh * n_q + offs_m, m_safe, mask=row_ok)
        tl.store(Tau + bh * n_q + offs_m, lo, mask=row_ok)
        tl.store(Ssum + bh * n_q + offs_m, ssum, mask=row_ok)

    @triton.jit
    def _probs(s, m, tau, ssum, am1, zs, expo, KIND: tl.constexpr):
        z = (s - m[:, None]) * zs[:, None] - tau[:, None]
        w = _weights(tl.maximum(z, 0.0), expo, KIND)
        p = w / tl.where(ssum > 0, ssum, 1.0)[:, None]
        if KIND == 1:
            st = tl.where(p > 0, 1.0, 0.0)
        elif KIND == 2:
            st = tl.sqrt(p)
        else:
            st = pow_pos(p, 1.0 - am1[:, None])
        return p, st, tl.max(tl.max(z, axis=1), axis=0) > 0

    @triton.jit
    def _bwd_q_kernel(
        Q, K, V, dO, dQ, C, Mrow, Tau, Ssum, Am1, Mask,
        n_q, n_k, d, dv, scale, MH,
        sqb, sqm, skb, skn, svb, svn, sob, som, smb, smh, smq, smk,
        BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr, BDV: tl.constexpr,
        KIND: tl.constexpr, HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr,
        DOT: tl.constexpr,
    ):  # fmt: skip
        bh = tl.program_id(1).to(tl.int64)
        q_at, k_at, v_at, m_at = _bases(Q, K, V, Mask, bh, MH, sqb, skb, svb, smb, smh)
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
        offs_d = tl.arange(0, BD)
        offs_v = tl.arange(0, BDV)
        row_ok = offs_m < n_q
        q = _tile(q_at, offs_m, sqm, n_q, offs_d, 1, d)
        do = _tile(dO + bh * sob, offs_m, som, n_q, offs_v, 1, dv)
        m, tau, ssum, am1, zs, expo = _row_stats(
            Mrow, Tau, Ssum, Am1, bh, n_q, offs_m, scale
        )  # fmt: skip
        # dQ = Σ_j s̃_j (g_j - c) k_j = A - c B, with A = Σ s̃ g k and B = Σ s̃ k: one
        # pass over the keys gathers c's two sums and both products
        sg = tl.zeros((BM,), tl.float32)
        st_sum = tl.zeros((BM,), tl.float32)
        a = tl.zeros((BM, BD), tl.float32)
        b = tl.zeros((BM, BD), tl.float32)
        for start_n in range(0, n_k, BN):
            s = _scores(q, k_at, m_at, start_n, offs_m, n_q, n_k, d, skn, smq, smk,
                        BN, BD, HAS_MASK, CAUSAL, DOT)  # fmt: skip
            p, st, live = _probs(s, m, tau, ssum, am1, zs, expo, KIND)
            if live:
                offs_n = start_n + tl.arange(0, BN)
                vt = _tile(v_at, offs_v, 1, dv, offs_n, svn, n_k)
                kb = _tile(k_at, offs_n, skn, n_k, offs_d, 1, d)
                stg = st * tl.dot(do, vt, input_precision=DOT)
                sg += tl.sum(stg, axis=1)
                st_sum += tl.sum(st, axis=1)
                a += tl.dot(stg, kb, input_precision=DOT)
                b += tl.dot(st, kb, input_precision=DOT)
        c = sg / tl.where(st_sum > 0, st_sum, 1.0)
        dq = a - c[:, None] * b
        tl.store(C + bh * n_q + offs_m, c, mask=row_ok)
        _put(dQ + bh * sqb, offs_m, sqm, n_q, offs_d, d, dq * scale)

    @triton.jit
    def _bwd_kv_kernel(
        Q, K, V, dO, dK, dV, C, Mrow, Tau, Ssum, Am1, Mask,
        n_q, n_k, d, dv, scale, MH,
        sqb, sqm, skb, skn, svb, svn, sob, som, smb, smh, smq, smk,
        BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr, BDV: tl.constexpr,
        KIND: tl.constexpr, HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr,
        DOT: tl.constexpr,
    ):  # fmt: skip
        bh = tl.program_id(1).to(tl.int64)
        q_at, k_at, v_at, m_at = _bases(Q, K, V, Mask, bh, MH, sqb, skb, svb, smb, smh)
        start_n = tl.program_id(0) * BN
        offs_n = start_n + tl.arange(0, BN)
        offs_d = tl.arange(0, BD)
        offs_v = tl.arange(0, BDV)
        vt = _tile(v_at, offs_v, 1, dv, offs_n, svn, n_k)
        dk = tl.zeros((BN, BD), tl.float32)
        dvacc = tl.zeros((BN, BDV), tl.float32)
        for start_m in range(0, n_q, BM):
            offs_m = start_m + tl.arange(0, BM)
            row_ok = offs_m < n_q
            q = _tile(q_at, offs_m, sqm, n_q, offs_d, 1, d)
            m, tau, ssum, am1, zs, expo = _row_stats(
                Mrow, Tau, Ssum, Am1, bh, n_q, offs_m, scale
            )  # fmt: skip
            s = _scores(q, k_at, m_at, start_n, offs_m, n_q, n_k, d, skn, smq, smk,
                        BN, BD, HAS_MASK, CAUSAL, DOT)  # fmt: skip
            p, st, live = _probs(s, m, tau, ssum, am1, zs, expo, KIND)
            if live:
                c = tl.load(C + bh * n_q + offs_m, mask=row_ok, other=0.0)
                do = _tile(dO + bh * sob, offs_m, som, n_q, offs_v, 1, dv)
                ds = st * (tl.dot(do, vt, input_precision=DOT) - c[:, None])
                dk += tl.dot(tl.trans(ds), q, input_precision=DOT)
                dvacc += tl.dot(tl.trans(p), do, input_precision=DOT)
        _put(dK + bh * skb, offs_n, skn, n_k, offs_d, d, dk * scale)
        _put(dV + bh * svb, offs_n, svn, n_k, offs_v, dv, dvacc)


def _pow2(n: int) -> int:
    return max(16, triton.next_power_of_2(n))


def _precision(q: torch.Tensor) -> str:
    """How ``tl.dot`` multiplies the float32 tiles: exactly for float32 input (TF32
    only where PyTorch's matmuls may use it too); TF32 for half-precision input, whose
    values TF32 holds exactly."""
    exact = q.dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32
    return "ieee" if exact else "tf32"


def accepts(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the flash kernels take ``q``, ``k``, ``v`` (checked tensors of one
    dtype and device): CUDA with Triton, a dtype they compute in, head sizes that fit
    a tile (at most ``MAX_HEAD``), and no empty tensor."""
    return (
        q.is_cuda
        and kernels.runnable()
        and kernels.enabled("flash")
        and q.dtype in kernels.DTYPES
        and max(q.shape[-1], v.shape[-1]) <= MAX_HEAD
        and min(q.numel(), k.numel(), v.numel()) > 0
    )


def _mask_args(mask: torch.Tensor | None, q: torch.Tensor) -> tuple:
    """The kernels' mask, its heads ``MH`` and strides (batch, head, query, key)."""
    if mask is None:
        return q.new_zeros(1, dtype=torch.int8), 1, (0, 0, 0, 0)
    return mask, mask.shape[1], mask.stride()


class _FlashEntmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, am1, mask, causal, scale, kind, launched):
        bh, n_q, d = q.shape
        n_k, dv = k.shape[1], v.shape[2]
        o = torch.empty(bh, n_q, dv, dtype=q.dtype, device=q.device)
        stats = torch.empty(3, bh, n_q, dtype=torch.float32, device=q.device)
        mk, mh, ms = _mask_args(mask, q)
        launched.append(kernels.launch(
            _fwd_kernel, (triton.cdiv(n_q, BLOCK_M), bh),
            q, k, v, o, stats[0], stats[1], stats[2], am1, mk,
            n_q, n_k, d, dv, scale, mh,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0),
            v.stride(1), o.stride(0), o.stride(1), *ms,
            N_ITER=N_BISECT, BM=BLOCK_M, BN=BLOCK_N, BD=_pow2(d), BDV=_pow2(dv),
            KIND=kind, HAS_MASK=mask is not None, CAUSAL=causal, DOT=_precision(q),
        ))  # fmt: skip
        ctx.save_for_backward(q, k, v, am1, mask, stats)
        ctx.meta = (causal, scale, kind)
        return o

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do):
        q, k, v, am1, mask, stats = ctx.saved_tensors
        causal, scale, kind = ctx.meta
        do = do.contiguous()
        bh, n_q, d = q.shape
        n_k, dv = k.shape[1], v.shape[2]
        dq, dk, dvv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        c = torch.empty(bh, n_q, dtype=torch.float32, device=q.device)
        mk, mh, ms = _mask_args(mask, q)
        common = dict(
            BM=BLOCK_M, BN=BLOCK_N, BD=_pow2(d), BDV=_pow2(dv), KIND=kind,
            HAS_MASK=mask is not None, CAUSAL=causal, DOT=_precision(q),
        )  # fmt: skip
        args = (
            n_q, n_k, d, dv, scale, mh, q.stride(0), q.stride(1), k.stride(0),
            k.stride(1), v.stride(0), v.stride(1), do.stride(0), do.stride(1), *ms,
        )  # fmt: skip
        stats = (stats[0], stats[1], stats[2], am1, mk)
        done = kernels.launch(
            _bwd_q_kernel, (triton.cdiv(n_q, BLOCK_M), bh),
            q, k, v, do, dq, c, *stats, *args, **common,
        ) and kernels.launch(
            _bwd_kv_kernel, (triton.cdiv(n_k, BLOCK_N), bh),
            q, k, v, do, dk, dvv, c, *stats, *args, **common,
        )  # fmt: skip
        if not done:  # the forward built, its backward did not: nothing to fall to
            raise RuntimeError(
                "Triton cannot build the flash attention's backward kernels here; "
                "call attention(..., need_weights=True) to differentiate"
            )
        return dq, dk, dvv, None, None, None, None, None, None


def flash_entmax_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    alpha=1.5,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """α-entmax attention output ``entmax(q kᵀ · scale) v`` without the n × n weights.

    Parameters
    ----------
    q, k, v : tensors (..., n_q, d), (..., n_k, d), (..., n_k, d_v)
        One floating dtype (float32, float16, bfloat16), one device.
    alpha : float > 1 or tensor
        2 is sparsemax; a tensor broadcastable to the batch shape ``(...)`` (one α per
        batch entry and head; a trailing ``(1, 1)`` is allowed).
    mask : bool tensor broadcastable to (..., n_q, n_k), optional
        True where a query may attend a key.
    causal : bool
        Query i attends keys j ≤ i only.
    scale : float, optional
        Multiplies the scores; ``1/√d`` by default.

    Returns
    -------
    tensor (..., n_q, d_v) or None
        The output, differentiable in q, k, v (not in α); None where Triton cannot
        build or fit the forward kernel, or the kernels failed their first-use check.
    """
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    n_q, n_k = q.shape[-2], k.shape[-2]
    q3 = q.expand(*batch, *q.shape[-2:]).reshape(-1, n_q, q.shape[-1]).contiguous()
    k3 = k.expand(*batch, *k.shape[-2:]).reshape(-1, n_k, k.shape[-1]).contiguous()
    v3 = v.expand(*batch, *v.shape[-2:]).reshape(-1, n_k, v.shape[-1]).contiguous()
    bh = q3.shape[0]
    if isinstance(alpha, torch.Tensor):
        a = alpha.detach().to(device=q.device, dtype=torch.float32)
        while a.ndim > len(batch) and a.shape[-1] == 1:
            a = a.squeeze(-1)
        am1 = (a.expand(batch).reshape(bh) - 1).contiguous()
        kind = 0
    else:
        am1 = torch.full((bh,), float(alpha) - 1, device=q.device, dtype=torch.float32)
        kind = 1 if alpha == 2 else 2 if alpha == 1.5 else 0
    if not kernels.flash_checked(flash_entmax_attention, kind, q, entmax, BLOCK_N + 6):
        return None  # it disagreed with the torch engine on its first use
    m4 = None
    if mask is not None:  # (batch, heads, n_q, n_k) with broadcast dims at stride 0
        m = mask.view(torch.int8) if mask.dtype == torch.bool else mask.to(torch.int8)
        b = batch or (1,)  # the last batch dim is the heads'
        m = m.reshape((1,) * (len(b) + 2 - m.ndim) + tuple(m.shape))
        m = m.expand(*b[:-1], *m.shape[-3:])  # the leading dims only
        m4 = m.reshape(-1, *m.shape[-3:]).expand(-1, b[-1], n_q, n_k)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    launched: list[bool] = []  # the forward says whether Triton built its kernel
    out = _FlashEntmax.apply(q3, k3, v3, am1, m4, bool(causal), scale, kind, launched)
    if not launched[0]:
        return None  # Triton refused the kernel: the caller's dense path computes
    return out.view(*batch, n_q, v.shape[-1])
