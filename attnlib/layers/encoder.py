"""The transformer encoder layer, with ``nn.TransformerEncoderLayer``'s arguments,
defaults and state dict, around :class:`MultiHeadAttention`."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from ..functional import AttentionResult, Normalizer, Score
from ..utils import check_int
from ..utils.validation import module_input
from .multihead import (
    MultiHeadAttention,
    check_dropout,
    check_flag,
    check_layer_norm_eps,
)

__all__ = ["TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(nn.Module):
    """One transformer encoder block: attention, residual, norm, MLP, residual, norm.

    Each "norm" is a layer norm (before each block instead, with ``norm_first``). The
    arguments, defaults and state dict are ``nn.TransformerEncoderLayer``'s; ``score``,
    ``normalizer`` and ``init`` are passed to the :class:`MultiHeadAttention`.

    Parameters
    ----------
    d_model : int
        Token size.
    nhead : int
        Heads of the self-attention (``num_heads``, attnlib's name, also accepted).
    dim_feedforward : int
        Hidden size of the two-layer MLP.
    dropout : float in [0, 1]
        Dropout in training mode: on the attention weights, after the MLP's
        non-linearity and on each block's output, as in torch.
    activation : callable or {"relu", "gelu"}
        The MLP's non-linearity.
    layer_norm_eps : float
        The layer norms' epsilon.
    batch_first : bool or None
        The token layout, as in :class:`MultiHeadAttention` (torch's default
        ``(L, N, E)``).
    norm_first : bool
        Pre-norm: normalise before each block instead of after its residual.
    bias : bool
        Biases in the projections, the MLP and the layer norms.
    device, dtype : optional
        Where and in which dtype the parameters are made.
    score, normalizer : str or callable
        How queries are compared with keys and how a row of scores becomes weights,
        see :func:`~attnlib.functional.attention`.
    num_heads : int, optional
        attnlib's name for ``nhead`` (give one of the two).
    init : {"torch", "linear"}
        The attention's initialisation, see :class:`MultiHeadAttention`.

    Notes
    -----
    ``self_attn`` is called as a module, so that its forward hooks fire (the way
    torch's users take attention maps out); ``forward(..., need_weights=True)`` also
    returns them. It stacks in ``nn.TransformerEncoder`` (torch turns nested tensors
    off for a layer that is not its own, with a warning unless
    ``enable_nested_tensor=False``).

    Implements
    ----------
    The encoder of §2.1 and Figure 1 of the self-expression paper (post-norm, as in
    Vaswani et al., 2017; pre-norm as in Xiong et al., 2020).
    """

    def __init__(
        self,
        d_model: int,
        nhead: int | None = None,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[torch.Tensor], torch.Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool | None = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
        *,
        score: Score = "scaled_dot",
        normalizer: Normalizer = "softmax",
        num_heads: int | None = None,
        init: str = "torch",
    ):
        super().__init__()
        d_model = check_int(d_model, "d_model")
        nhead = heads_of(nhead, num_heads)
        dim_feedforward = check_int(dim_feedforward, "dim_feedforward")
        activation = activation_of(activation)
        dropout = check_dropout(dropout)
        layer_norm_eps = check_layer_norm_eps(layer_norm_eps)
        made = dict(device=device, dtype=dtype)
        self.self_attn = MultiHeadAttention(
            d_model, nhead, dropout, bias, batch_first=batch_first,
            score=score, normalizer=normalizer, init=init, **made,
        )  # fmt: skip
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias, **made)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias, **made)
        self.norm_first = check_flag(norm_first, "norm_first")
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **made)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **made)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.activation = activation

    def extra_repr(self) -> str:
        return (
            f"d_model={self.linear1.in_features}, "
            f"dim_feedforward={self.linear1.out_features}, norm_first={self.norm_first}"
        )

    def forward(
        self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False,
        *, mask=None, need_weights: bool = False, average_attn_weights: bool = True,
    ):  # fmt: skip
        """Transform a sequence of tokens.

        Parameters
        ----------
        src : tensor or array-like, shape (L, N, E), (N, L, E) or (L, E)
            Tokens in the layout of ``batch_first``; a tensor must have the module's
            dtype.
        src_mask : bool or float tensor, shape (L, L) or (N * nhead, L, L)
            Optional; the attention's ``attn_mask``: True marks a pair that may *not*
            attend, a float mask is added to the scores.
        src_key_padding_mask : bool or float tensor, shape (N, L), optional
            True marks a padding token, as in torch.
        is_causal : bool
            Token ``i`` sees tokens ``0 … i`` only.
        mask : bool tensor, broadcastable to (..., nhead, L, L), optional
            attnlib's mask: True where a token may attend to another.
        need_weights : bool
            Also return the attention's weights (attnlib's opt-in; torch's layer
            returns the tokens only).
        average_attn_weights : bool
            With ``need_weights``: average them over the heads, else per head.

        Returns
        -------
        torch.Tensor, or AttentionResult with ``need_weights``
            The transformed tokens, in the layout of ``src``, and with
            ``need_weights`` the weights as :class:`MultiHeadAttention` returns them.
        """
        x = module_input(src, "src", self.linear1.weight, min_ndim=2, allow_empty=True)
        if x.shape[-1] != self.linear1.in_features:
            raise ValueError(
                f"src must have {self.linear1.in_features} features (d_model), got "
                f"shape {tuple(x.shape)}"
            )
        masks = dict(
            attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
            is_causal=is_causal, need_weights=need_weights,
        )  # fmt: skip
        if need_weights:
            masks["average_attn_weights"] = average_attn_weights
        if mask is not None:  # attnlib's own; torch's self_attn takes none
            masks["mask"] = mask
        if self.norm_first:
            h, weights = self._attend(self.norm1(x), masks)
            x = x + h
            x = x + self._feed_forward(self.norm2(x))
        else:
            h, weights = self._attend(x, masks)
            x = self.norm1(x + h)
            x = self.norm2(x + self._feed_forward(x))
        return AttentionResult(x, weights) if need_weights else x

    def _attend(self, x, masks):
        out, weights = attend_checked(self.self_attn, x, x, masks, "src or its masks")
        return self.dropout1(out), weights

    def _feed_forward(self, x) -> torch.Tensor:
        return self.dropout2(
            self.linear2(self.dropout(self.activation(self.linear1(x))))
        )


def heads_of(nhead, num_heads) -> int:
    """The number of heads, given by torch's name or attnlib's (exactly one)."""
    if (nhead is None) == (num_heads is None):
        raise ValueError(
            "give nhead or num_heads (the same argument, the number of heads), "
            f"one of the two, got nhead={nhead!r} and num_heads={num_heads!r}"
        )
    return check_int(nhead, "nhead") if num_heads is None else num_heads


def activation_of(activation) -> Callable[[torch.Tensor], torch.Tensor]:
    """``activation`` as a callable: torch's ``"relu"`` and ``"gelu"``, or itself."""
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    if isinstance(activation, str) or not callable(activation):
        raise ValueError(
            f"activation must be callable, 'relu' or 'gelu', got {activation!r}"
        )
    return activation


def attend_checked(attn, query, memory, masks, what: str):
    """``attn(query, memory, memory, **masks)`` as a module (its hooks fire), telling
    it that both tensors are checked; errors name ``what`` the caller passed."""
    attn._checked = (query, memory)
    try:
        return attn(query, memory, memory, **masks)
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from err
    finally:
        attn._checked = ()
