"""Sparse-coding attention: the unrolled ISTA of the sparse self-expression problem.

Coding each query as a sparse combination of the keys (the Lasso behind SSC, with
queries in place of the samples themselves) and unrolling ISTA gives an attention layer:
``Q Kᵀ`` is dot-product attention, ``K Kᵀ`` self-attention of the keys, the soft
threshold makes the weights sparse and signed, and the output is ``C V``. With learned
steps and thresholds per iteration it is LISTA (Gregor & LeCun 2010), a layer that
trains.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..functional import AttentionResult, attend
from ..utils import as_tensor, check_int, check_positive
from ..utils.boundary import checking, public
from ..utils.validation import module_input, names_input
from ._lasso.common import soft_threshold as _shrink

__all__ = ["sparse_coding_attention", "UnrolledISTAAttention"]


def _ista_codes(q, k, lam, n_iter, step, nonnegative, kk=None):
    """Unrolled ISTA on ``min_C ½‖Q − C K‖² + λ‖C‖₁`` (rows): C (..., n_q, n_k)."""
    qk = attend(q, k, k, score="dot", normalizer="none").weights  # Q Kᵀ: attention
    if kk is None:
        kk = attend(
            k, k, k, score="dot", normalizer="none"
        ).weights  # K Kᵀ: self-attention
    if step is None:
        step = (
            1.0
            / torch.linalg.matrix_norm(k, ord=2)
            .square()
            .clamp_min(1e-12)[..., None, None]
        )
    shrink = (lambda z, t: torch.relu(z - t)) if nonnegative else _shrink
    C = torch.zeros_like(qk)
    for t in range(n_iter):
        s_t = step[t] if isinstance(step, (list, tuple)) else step
        lam_t = lam[t] if isinstance(lam, (list, tuple)) else lam
        C = shrink(C - s_t * (C @ kk - qk), s_t * lam_t)
    return C


def sparse_coding_attention(
    q,
    k,
    v,
    lam: float,
    n_iter: int = 100,
    step: float | None = None,
    *,
    nonnegative: bool = False,
) -> AttentionResult:
    """Attention whose weights are sparse codes of the queries over the keys (ISTA).

    ``C_{t+1} = shrink_{ελ}(C_t (I − ε K Kᵀ) + ε Q Kᵀ)`` from ``C_0 = 0``: ``Q Kᵀ`` is
    dot-product attention and ``K Kᵀ`` dot-product self-attention of the keys; the
    output is ``C V``. With many iterations ``C`` solves the Lasso
    ``min ½‖Q − C K‖² + λ‖C‖₁`` row by row.

    Parameters
    ----------
    q : tensor, shape (..., n_q, d)
        Queries, one per row.
    k : tensor, shape (..., n_k, d)
        Keys (the dictionary).
    v : tensor, shape (..., n_k, d_v)
        Values.
    lam : float
        The ℓ1 weight λ.
    n_iter : int
        Unrolled iterations (layers).
    step : float, optional
        ε; default ``1 / ‖K‖₂²`` (per batch element), which guarantees convergence.
    nonnegative : bool
        Use the paper's one-sided ``ReLU_λ(x) = max(x − λ, 0)`` (a non-negative Lasso)
        instead of the two-sided soft threshold.

    Returns
    -------
    AttentionResult
        ``output`` (..., n_q, d_v) and the sparse, signed weights ``C`` (..., n_q, n_k).

    Implements
    ----------
    Eqs. (17)-(18) of the self-expression paper (rows as tokens, so its C is our Cᵀ).
    """
    q = as_tensor(q, "q", min_ndim=2)
    k = as_tensor(k, "k", min_ndim=2, device=q.device)
    v = as_tensor(v, "v", min_ndim=2, device=q.device)
    # The common dtype; half precisions iterate in float32 (no half spectral norm).
    dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    q, k, v = q.to(work), k.to(work), v.to(work)
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"q, k, v have incompatible shapes {tuple(q.shape)}, {tuple(k.shape)}, "
            f"{tuple(v.shape)}"
        )
    lam = check_positive(lam, "lam")
    n_iter = check_int(n_iter, "n_iter")
    step = None if step is None else check_positive(step, "step")
    C = _ista_codes(q, k, lam, n_iter, step, nonnegative)
    out = C @ v
    if not (torch.isfinite(C).all() and torch.isfinite(out).all()):
        raise ValueError(
            "step is too large for these keys (ISTA diverged; above 2 / ‖K‖₂² it "
            "need not converge), or q, k are too large for their dtype"
        )
    return AttentionResult(out.to(dtype), C.to(dtype))


class UnrolledISTAAttention(nn.Module):
    """A sparse attention layer: unrolled ISTA steps coding the queries over the keys.

    Queries, keys and values are learned projections of the tokens, as in
    :class:`attnlib.layers.MultiHeadAttention` (same four ``d×d`` maps); each of the
    ``n_iter`` layers has its own learned step ``ε_t`` (relative to ``1/‖K‖²``) and
    threshold ``λ_t`` (LISTA, Gregor & LeCun 2010). With ``lista=True`` the
    self-attention map ``I − ε K Kᵀ`` uses its own learned key projection, decoupled
    from the ``ε Q Kᵀ`` map.

    Parameters
    ----------
    embed_dim : int
        Token size.
    n_iter : int
        Unrolled iterations.
    lam : float
        Initial threshold λ.
    lista : bool
        Learn a separate key map for the ``K Kᵀ`` term (adds ``embed_dim²`` parameters).
    nonnegative : bool
        One-sided threshold as in the paper's Eq. (18).
    bias : bool
        Give the four projections a bias.

    Implements
    ----------
    Eq. (18) and Figure 4 of the self-expression paper, with learned (LISTA) maps.
    """

    def __init__(
        self,
        embed_dim: int,
        n_iter: int = 4,
        lam: float = 0.1,
        *,
        lista: bool = False,
        nonnegative: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        embed_dim, n_iter = (
            check_int(embed_dim, "embed_dim"),
            check_int(n_iter, "n_iter"),
        )
        lam = check_positive(lam, "lam")
        self.embed_dim, self.n_iter, self.nonnegative = embed_dim, n_iter, nonnegative
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(embed_dim, embed_dim, bias=bias) for _ in range(4)
        )
        self.s_proj = nn.Linear(embed_dim, embed_dim, bias=bias) if lista else None
        # softplus⁻¹ of the initial values: unit relative step, threshold λ.
        self.raw_step = nn.Parameter(torch.full((n_iter,), math.log(math.e - 1)))
        # softplus⁻¹(λ) = λ + log(1 - e^{-λ}): finite for every positive λ.
        self.raw_lam = nn.Parameter(
            torch.full((n_iter,), lam + math.log(-math.expm1(-lam)))
        )

    @public
    def forward(self, x, key=None, value=None) -> AttentionResult:
        """Attend from ``x`` to ``key``/``value`` (default ``x``).

        Parameters
        ----------
        x : tensor or array-like, shape (..., n_q, embed_dim)
            The queries' tokens; a tensor must have the module's dtype.
        key : tensor or array-like, shape (..., n_k, embed_dim), optional
            The keys' tokens (default ``x``).
        value : tensor or array-like, shape (..., n_k, embed_dim), optional
            The values' tokens (default ``key``).

        Returns
        -------
        AttentionResult
            ``output`` ``(..., n_q, embed_dim)``, the codes ``C`` ``(..., n_q, n_k)``.
        """
        if checking():
            like = self.q_proj.weight
            x = module_input(x, "x", like, min_ndim=2)
            if key is not None:
                key = module_input(key, "key", like, min_ndim=2)
            if value is not None:
                value = module_input(value, "value", like, min_ndim=2)
            if x.shape[-1] != self.embed_dim:
                raise ValueError(
                    f"x must have {self.embed_dim} features, got {x.shape[-1]}"
                )
        key = x if key is None else key
        value = key if value is None else value
        q, k, v = self.q_proj(x), self.k_proj(key), self.v_proj(value)
        s = k if self.s_proj is None else self.s_proj(key)
        with names_input("x"):
            kk = attend(s, s, s, score="dot", normalizer="none").weights
        base = (
            1.0
            / torch.linalg.matrix_norm(s, ord=2)
            .square()
            .clamp_min(1e-12)[..., None, None]
        )
        steps = [base * torch.nn.functional.softplus(r) for r in self.raw_step]
        lams = list(torch.nn.functional.softplus(self.raw_lam))
        with names_input("x"):
            C = _ista_codes(q, k, lams, self.n_iter, steps, self.nonnegative, kk=kk)
        if not torch.isfinite(C).all():
            raise ValueError(f"x is too large for {x.dtype}: the codes overflow")
        return AttentionResult(self.out_proj(C @ v), C)
