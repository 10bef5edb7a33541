"""The transformer blocks built from :func:`attnlib.functional.attention`.

:class:`MultiHeadAttention` runs several heads of the one equation in learned subspaces;
:class:`TransformerEncoderLayer` wraps it with a feed-forward block, residuals and layer
norms. Both accept the same ``score`` and ``normalizer`` as
:func:`~attnlib.functional.attention`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from .functional import (
    AttentionResult,
    Normalizer,
    Score,
    attend,
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
    dropout : float in [0, 1]
        Dropout on the attention weights in training mode.
    bias : bool
        Whether the four projections have biases.
    kdim, vdim : int, optional
        Sizes of the key and value tokens (default ``embed_dim``).
    batch_first : bool, optional
        ``None`` (attnlib's layout): tokens are rows, ``(..., n, embed_dim)`` with any
        leading batch dimensions. ``True``: ``(batch, n, embed_dim)``; ``False``:
        ``(n, batch, embed_dim)``, as ``nn.MultiheadAttention`` reads them.
    device, dtype : optional
        Where and in which dtype the parameters are made.
    score : str or callable
        How queries are compared with keys, see :func:`~attnlib.functional.attention`.
    normalizer : str or callable
        How a row of scores becomes weights, see :func:`~attnlib.functional.attention`.

    Notes
    -----
    A drop-in for ``nn.MultiheadAttention``: the same arguments (but ``add_bias_kv``
    and ``add_zero_attn``, which it lacks), the same forward arguments with torch's
    mask polarity, and ``load_state_dict`` reads its state dict (``in_proj_weight`` or
    ``q_proj_weight``/``k_proj_weight``/``v_proj_weight``, ``in_proj_bias``,
    ``out_proj``). It departs where attnlib's default differs on purpose: the
    weights of every head are returned unless ``average_attn_weights=True``, and a
    query with every key masked gets zeros, not NaN.

    Implements
    ----------
    Eqs. (3)-(4) of the self-expression paper with several heads (§2.1), as in
    Vaswani et al. (2017), §3.2.2.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int = 1,
        dropout: float = 0.0,
        bias: bool = True,
        *,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool | None = None,
        device=None,
        dtype=None,
        score: Score = "scaled_dot",
        normalizer: Normalizer = "softmax",
    ):
        super().__init__()
        embed_dim = check_int(embed_dim, "embed_dim")
        self.dropout = _check_dropout(dropout)
        if batch_first not in (None, True, False):
            raise ValueError(
                f"batch_first must be None, True or False, got {batch_first!r}"
            )
        self.batch_first = batch_first
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
        made = dict(bias=bias, device=device, dtype=dtype)
        self.q_proj = nn.Linear(embed_dim, embed_dim, **made)
        self.k_proj = nn.Linear(kdim, embed_dim, **made)
        self.v_proj = nn.Linear(vdim, embed_dim, **made)
        self.out_proj = nn.Linear(embed_dim, embed_dim, **made)
        self.register_load_state_dict_pre_hook(_from_torch_state_dict)

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

    def forward(
        self,
        query,
        key=None,
        value=None,
        key_padding_mask=None,
        need_weights: bool = True,
        attn_mask=None,
        average_attn_weights: bool = False,
        is_causal: bool = False,
        *,
        mask=None,
    ) -> AttentionResult:
        """Attend from ``query`` to ``key`` and ``value`` (by default ``query`` itself).

        Parameters
        ----------
        query : tensor or array-like, shape (..., n_q, embed_dim)
            Query tokens, one per row (see ``batch_first``); a tensor must have the
            module's dtype.
        key : tensor or array-like, shape (..., n_k, kdim), optional
            Key tokens (default: ``query``).
        value : tensor or array-like, shape (..., n_k, vdim), optional
            Value tokens (default: ``key``).
        key_padding_mask : bool or float tensor, shape (batch, n_k), optional
            ``nn.MultiheadAttention``'s: True (or ``-inf``) marks a key to ignore; a
            float mask is added to the scores.
        need_weights : bool
            Return the weights (else ``weights`` is None).
        attn_mask : bool or float tensor, shape (n_q, n_k) or (batch*heads, n_q, n_k)
            Optional. ``nn.MultiheadAttention``'s: True marks a pair that may *not*
            attend (the opposite of ``mask``); a float mask is added to the scores.
        average_attn_weights : bool
            Average the weights over the heads (torch's default; ours keeps them).
        is_causal : bool
            Query ``i`` sees keys ``0 … i`` only.
        mask : bool tensor, broadcastable to (..., num_heads, n_q, n_k), optional
            attnlib's mask: True where a query may attend to a key.

        Returns
        -------
        AttentionResult
            ``output`` of shape ``(..., n_q, embed_dim)`` and the per-head ``weights``
            of shape ``(..., num_heads, n_q, n_k)`` (batch first; averaged over the
            heads if asked).
        """
        seq_first = self.batch_first is False  # (n, batch, features): torch's default
        if seq_first:
            query, key, value = (
                x.transpose(0, 1) if isinstance(x, torch.Tensor) and x.ndim == 3 else x
                for x in (query, key, value)
            )
        if not isinstance(need_weights, bool):
            raise ValueError(
                f"need_weights must be True or False, got {need_weights!r}"
            )
        out, weights = self._rows(
            query,
            key,
            value,
            key_padding_mask,
            attn_mask,
            is_causal,
            mask,
            need_weights,
        )
        if seq_first and out.ndim == 3:
            out = out.transpose(0, 1)
        if need_weights and average_attn_weights:
            weights = weights.mean(-3)
        return AttentionResult(out, weights)

    def _rows(
        self, query, key, value, key_padding_mask, attn_mask, is_causal, mask,
        need_weights,
    ):  # fmt: skip
        """:meth:`forward` in attnlib's layout, ``(..., n, features)``.

        Checks the tokens, then attends with :meth:`_attend_tokens`.
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
        return self._attend_tokens(
            query, key, value, key_padding_mask, attn_mask, is_causal, mask,
            need_weights,
        )  # fmt: skip

    def _attend_tokens(
        self, query, key, value, key_padding_mask, attn_mask, is_causal, mask,
        need_weights,
    ):  # fmt: skip
        """:meth:`_rows` on checked tokens: the heads attend by
        :func:`~attnlib.functional.attend` (their projections need no check).

        Without ``need_weights``, softmax heads run as PyTorch's fused attention.
        """
        q, k, v = (
            self._split_heads(p(x))
            for p, x in ((self.q_proj, query), (self.k_proj, key), (self.v_proj, value))
        )
        if key_padding_mask is not None or attn_mask is not None:
            mask = _additive_mask(mask, key_padding_mask, attn_mask, q, k)
        try:
            out, weights = attend(
                q, k, v, score=self.score, normalizer=self.normalizer, mask=mask,
                is_causal=is_causal, dropout_p=self.dropout if self.training else 0.0,
                need_weights=need_weights,
            )  # fmt: skip
        except ValueError as err:  # name what the caller passed, not the projections
            raise ValueError(f"query, key, value or mask: {err}") from err
        return AttentionResult(
            self.out_proj(out.transpose(-3, -2).flatten(-2)), weights
        )


def _check_dropout(p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"dropout must be a number in [0, 1], got {p!r}")
    return float(p)


def _additive_mask(mask, key_padding_mask, attn_mask, q, k) -> torch.Tensor:
    """attnlib's ``mask`` and torch's two masks as one float mask added to the scores.

    ``q``, ``k`` are the split heads ``(..., heads, n, head_dim)``; torch's bool masks
    mark what may *not* be attended, attnlib's what may.
    """
    heads, n_q, n_k = q.shape[-3], q.shape[-2], k.shape[-2]

    def additive(m, blocked_when, name):
        m = torch.as_tensor(m, device=q.device)
        if m.dtype == torch.bool:
            return torch.zeros(m.shape, dtype=q.dtype, device=q.device).masked_fill(
                m == blocked_when, float("-inf")
            )
        if not m.is_floating_point():
            raise ValueError(f"{name} must be boolean or floating, got {m.dtype}")
        return m.to(q.dtype)

    total = torch.zeros((), dtype=q.dtype, device=q.device)
    if mask is not None:
        total = total + additive(mask, False, "mask")
    if key_padding_mask is not None:
        kpm = additive(key_padding_mask, True, "key_padding_mask")
        if kpm.shape[-1] != n_k:
            raise ValueError(
                f"key_padding_mask must have one entry per key ({n_k}), got shape "
                f"{tuple(kpm.shape)}"
            )
        total = total + kpm[..., None, None, :]  # (batch, 1, 1, n_k)
    if attn_mask is not None:
        am = additive(attn_mask, True, "attn_mask")
        if am.ndim == 3 and am.shape[0] == q.shape[:-3].numel() * heads:
            am = am.unflatten(0, (*q.shape[:-3], heads))  # (batch * heads, ...)
        if am.shape[-2:] != (n_q, n_k):
            raise ValueError(
                f"attn_mask must have shape ({n_q}, {n_k}) or (batch * num_heads, "
                f"{n_q}, {n_k}), got {tuple(am.shape)}"
            )
        total = total + am
    return total


def _from_torch_state_dict(module, state_dict, prefix, *args) -> None:
    """Rename an ``nn.MultiheadAttention`` state dict's entries to ours, in place."""
    if prefix + "bias_k" in state_dict or prefix + "bias_v" in state_dict:
        raise ValueError("add_bias_kv's bias_k and bias_v have no counterpart here")
    e = module.embed_dim
    packed = state_dict.pop(prefix + "in_proj_weight", None)
    if packed is not None:
        for name, w in zip("qkv", packed.split(e)):
            state_dict[f"{prefix}{name}_proj.weight"] = w
    for name in "qkv":
        w = state_dict.pop(f"{prefix}{name}_proj_weight", None)
        if w is not None:
            state_dict[f"{prefix}{name}_proj.weight"] = w
    packed = state_dict.pop(prefix + "in_proj_bias", None)
    if packed is not None:
        for name, b in zip("qkv", packed.split(e)):
            state_dict[f"{prefix}{name}_proj.bias"] = b


class TransformerEncoderLayer(nn.Module):
    """One transformer encoder block: attention, residual, norm, MLP, residual, norm.

    Each "norm" is a layer norm (before each block instead, with ``norm_first``).

    Parameters
    ----------
    d_model : int
        Token size.
    num_heads : int
        Heads of the self-attention (torch's ``nhead``, also accepted by that name).
    dim_feedforward : int, optional
        Hidden size of the two-layer MLP (default ``4 * d_model``).
    dropout : float in [0, 1]
        Dropout in training mode: on the attention weights, after the MLP's
        non-linearity and on each block's output, as in torch.
    activation : callable or {"relu", "gelu"}
        The MLP's non-linearity (ReLU by default).
    layer_norm_eps : float
        The layer norms' epsilon.
    batch_first : bool, optional
        The token layout, as in :class:`MultiHeadAttention`.
    norm_first : bool
        Pre-norm: normalise before each block instead of after its residual.
    bias : bool
        Biases in the projections, the MLP and the layer norms.
    device, dtype : optional
        Where and in which dtype the parameters are made.
    score : str or callable
        How queries are compared with keys, see :func:`~attnlib.functional.attention`.
    normalizer : str or callable
        How a row of scores becomes weights, see :func:`~attnlib.functional.attention`.
    nhead : int, optional
        torch's name for ``num_heads`` (give one of the two).

    Notes
    -----
    A drop-in for ``nn.TransformerEncoderLayer`` (it loads its state dict and stacks
    in ``nn.TransformerEncoder``; pass ``enable_nested_tensor=False`` there, as for
    any layer that is not torch's), departing in two defaults: ``dim_feedforward`` is
    ``4 * d_model`` (torch: 2048) and ``dropout`` 0 (torch: 0.1).

    Implements
    ----------
    The encoder of §2.1 and Figure 1 of the self-expression paper (post-norm, as in
    Vaswani et al., 2017; pre-norm as in Xiong et al., 2020).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int | None = None,
        dim_feedforward: int | None = None,
        dropout: float = 0.0,
        activation: str | Callable[[torch.Tensor], torch.Tensor] = torch.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool | None = None,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
        *,
        score: Score = "scaled_dot",
        normalizer: Normalizer = "softmax",
        nhead: int | None = None,
    ):
        super().__init__()
        d_model = check_int(d_model, "d_model")
        if nhead is not None and num_heads is not None:
            raise ValueError("give num_heads or nhead (the same argument), not both")
        num_heads = 1 if num_heads is None and nhead is None else (num_heads or nhead)
        dim_feedforward = (
            4 * d_model
            if dim_feedforward is None
            else check_int(dim_feedforward, "dim_feedforward")
        )
        activation = {"relu": torch.relu, "gelu": F.gelu}.get(activation, activation)
        if not callable(activation):
            raise ValueError(
                f"activation must be callable, 'relu' or 'gelu', got {activation!r}"
            )
        dropout = _check_dropout(dropout)
        made = dict(bias=bias, device=device, dtype=dtype)
        self.self_attn = MultiHeadAttention(
            d_model, num_heads, dropout, bias, batch_first=batch_first, device=device,
            dtype=dtype, score=score, normalizer=normalizer,
        )  # fmt: skip
        self.linear1 = nn.Linear(d_model, dim_feedforward, **made)
        self.linear2 = nn.Linear(dim_feedforward, d_model, **made)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, **made)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, **made)
        self.dropout, self.dropout1, self.dropout2 = (
            nn.Dropout(dropout) for _ in "123"
        )
        self.activation, self.norm_first = activation, bool(norm_first)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.linear1.in_features}, "
            f"dim_feedforward={self.linear1.out_features}, norm_first={self.norm_first}"
        )

    def forward(
        self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False,
        *, mask=None,
    ) -> torch.Tensor:  # fmt: skip
        """Transform a sequence of tokens.

        Parameters
        ----------
        src : tensor or array-like, shape (..., n, d_model)
            Tokens, one per row (see ``batch_first``); a tensor must have the module's
            dtype.
        src_mask : bool or float tensor, shape (n, n) or (batch * num_heads, n, n)
            Optional; torch's ``attn_mask``: True marks a pair that may *not* attend.
        src_key_padding_mask : bool or float tensor, shape (batch, n), optional
            True marks a padding token, as in torch.
        is_causal : bool
            Token ``i`` sees tokens ``0 … i`` only.
        mask : bool tensor, broadcastable to (..., num_heads, n, n), optional
            attnlib's mask: True where a token may attend to another, as in
            :class:`MultiHeadAttention`.

        Returns
        -------
        torch.Tensor, shape (..., n, d_model)
            The transformed tokens, in the layout of ``src``.
        """
        attn = self.self_attn
        seq_first = attn.batch_first is False
        if seq_first and isinstance(src, torch.Tensor) and src.ndim == 3:
            src = src.transpose(0, 1)  # the blocks below see (batch, n, d_model)
        x = attn._tokens(src, "src", attn.q_proj)  # the one check of src
        masks = (src_key_padding_mask, src_mask, is_causal, mask)
        if self.norm_first:
            x = x + self._attend(self.norm1(x), masks)
            x = x + self._feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + self._attend(x, masks))
            x = self.norm2(x + self._feed_forward(x))
        return x.transpose(0, 1) if seq_first and x.ndim == 3 else x

    def _attend(self, x, masks) -> torch.Tensor:
        try:
            return self.dropout1(
                self.self_attn._attend_tokens(x, x, x, *masks, False).output
            )
        except ValueError as err:
            raise ValueError(f"src or mask: {err}") from err

    def _feed_forward(self, x) -> torch.Tensor:
        return self.dropout2(
            self.linear2(self.dropout(self.activation(self.linear1(x))))
        )
