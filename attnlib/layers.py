"""The transformer blocks built from :func:`attnlib.attention.attention`.

:class:`MultiHeadAttention` runs several heads of the one equation in learned subspaces;
:class:`TransformerEncoderLayer` wraps it with a feed-forward block, residuals and layer
norms. Both accept the same ``score`` and ``normalizer`` as
:func:`~attnlib.attention.attention`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .attention import (
    AttentionResult,
    Normalizer,
    Score,
    attention,
    resolve,
)
from .utils import as_tensor, check_int

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned query, key, value and output projections.

    Each of ``num_heads`` heads attends in its own
    ``embed_dim // num_heads``-dimensional subspace; the heads' outputs are concatenated
    and projected back.

    Parameters
    ----------
    embed_dim : int
        Size of the query tokens and of the output.
    num_heads : int
        Number of heads; must divide ``embed_dim``.
    kdim, vdim : int, optional
        Sizes of the key and value tokens (default ``embed_dim``).
    bias : bool
        Whether the four projections have biases.
    score : str or callable
        How queries are compared with keys, see :func:`~attnlib.attention.attention`.
    normalizer : str or callable
        How a row of scores becomes weights, see :func:`~attnlib.attention.attention`.

    Implements
    ----------
    Eqs. (3)-(4) of the self-expression paper with several heads (§2.1), as in
    Vaswani et al. (2017), §3.2.2.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int = 1,
        *,
        kdim: int | None = None,
        vdim: int | None = None,
        bias: bool = True,
        score: Score = "scaled_dot",
        normalizer: Normalizer = "softmax",
    ):
        super().__init__()
        embed_dim = check_int(embed_dim, "embed_dim")
        num_heads = check_int(num_heads, "num_heads")
        if embed_dim % num_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must divide embed_dim ({embed_dim})"
            )
        kdim = embed_dim if kdim is None else check_int(kdim, "kdim")
        vdim = embed_dim if vdim is None else check_int(vdim, "vdim")
        resolve(score, normalizer)  # fail now, not at the first call
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.score, self.normalizer = score, normalizer
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(kdim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(vdim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        # (..., n, embed_dim) -> (..., heads, n, head_dim)
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(-3, -2)

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
            f"score={self.score!r}, normalizer={self.normalizer!r}"
        )

    def _tokens(self, x, name: str, proj: nn.Linear) -> torch.Tensor:
        """``x`` as a checked tensor of the module's dtype.

        Its last axis has ``proj.in_features`` features.
        """
        dtype = proj.weight.dtype
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != dtype:
            raise ValueError(
                f"{name} must have the module's dtype {dtype} (call .to() on one of "
                f"them), got {x.dtype}"
            )
        x = as_tensor(
            x,
            name,
            min_ndim=2,
            dtype=dtype,
            device=proj.weight.device,
            allow_empty=True,
        )
        if x.shape[-1] != proj.in_features:
            raise ValueError(
                f"{name} must have {proj.in_features} features, got {x.shape[-1]}"
            )
        return x

    def forward(self, query, key=None, value=None, *, mask=None) -> AttentionResult:
        """Attend from ``query`` to ``key`` and ``value`` (by default ``query`` itself).

        Parameters
        ----------
        query : tensor or array-like, shape (..., n_q, embed_dim)
            Query tokens, one per row; a tensor must have the module's dtype.
        key : tensor or array-like, shape (..., n_k, kdim), optional
            Key tokens (default: ``query``).
        value : tensor or array-like, shape (..., n_k, vdim), optional
            Value tokens (default: ``key``).
        mask : bool tensor, broadcastable to (..., num_heads, n_q, n_k), optional
            True where a query may attend to a key.

        Returns
        -------
        AttentionResult
            ``output`` of shape ``(..., n_q, embed_dim)`` and the per-head ``weights``
            of shape ``(..., num_heads, n_q, n_k)``.
        """
        query = self._tokens(query, "query", self.q_proj)
        key = query if key is None else self._tokens(key, "key", self.k_proj)
        if key.shape[-1] != self.k_proj.in_features:
            raise ValueError(
                f"key (default: query) must have kdim={self.k_proj.in_features} "
                f"features, got {key.shape[-1]}"
            )
        value = key if value is None else self._tokens(value, "value", self.v_proj)
        if value.shape[-1] != self.v_proj.in_features:
            raise ValueError(
                f"value (default: key) must have vdim={self.v_proj.in_features} "
                f"features, got {value.shape[-1]}"
            )
        if key.shape[-2] != value.shape[-2]:
            raise ValueError(
                "key and value must have the same number of tokens, got "
                f"{key.shape[-2]} and {value.shape[-2]}"
            )
        q, k, v = (
            self._split_heads(p(x))
            for p, x in ((self.q_proj, query), (self.k_proj, key), (self.v_proj, value))
        )
        try:
            out, weights = attention(
                q, k, v, score=self.score, normalizer=self.normalizer, mask=mask
            )
        except ValueError as err:  # name what the caller passed, not the projections
            raise ValueError(f"query, key, value or mask: {err}") from err
        return AttentionResult(
            self.out_proj(out.transpose(-3, -2).flatten(-2)), weights
        )


class TransformerEncoderLayer(nn.Module):
    """One transformer encoder block: attention, residual, norm, MLP, residual, norm.

    Each "norm" is a layer norm.

    Parameters
    ----------
    d_model : int
        Token size.
    num_heads : int
        Heads of the self-attention.
    dim_feedforward : int
        Hidden size of the two-layer MLP.
    activation : callable
        The MLP's non-linearity (ReLU by default).
    score : str or callable
        How queries are compared with keys, see :func:`~attnlib.attention.attention`.
    normalizer : str or callable
        How a row of scores becomes weights, see :func:`~attnlib.attention.attention`.

    Implements
    ----------
    The encoder of §2.1 and Figure 1 of the self-expression paper (post-norm, as in
    Vaswani et al., 2017).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int = 1,
        dim_feedforward: int | None = None,
        *,
        activation: Callable[[torch.Tensor], torch.Tensor] = torch.relu,
        score: Score = "scaled_dot",
        normalizer: Normalizer = "softmax",
    ):
        super().__init__()
        d_model = check_int(d_model, "d_model")
        dim_feedforward = (
            4 * d_model
            if dim_feedforward is None
            else check_int(dim_feedforward, "dim_feedforward")
        )
        if not callable(activation):
            raise ValueError(f"activation must be callable, got {activation!r}")
        self.self_attn = MultiHeadAttention(
            d_model, num_heads, score=score, normalizer=normalizer
        )
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.activation = activation

    def extra_repr(self) -> str:
        return (
            f"d_model={self.linear1.in_features}, "
            f"dim_feedforward={self.linear1.out_features}"
        )

    def forward(self, x, *, mask=None) -> torch.Tensor:
        """Transform a sequence of tokens.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, d_model)
            Tokens, one per row; a tensor must have the module's dtype.
        mask : bool tensor, broadcastable to (..., num_heads, n, n), optional
            True where a token may attend to another, as in :class:`MultiHeadAttention`.

        Returns
        -------
        torch.Tensor, shape (..., n, d_model)
            The transformed tokens.
        """
        x = self.self_attn._tokens(x, "x", self.self_attn.q_proj)
        try:
            attended = self.self_attn(x, mask=mask).output
        except ValueError as err:
            raise ValueError(f"x or mask: {err}") from err
        x = self.norm1(x + attended)
        return self.norm2(x + self.linear2(self.activation(self.linear1(x))))
