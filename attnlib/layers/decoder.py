"""The transformer decoder layer, with ``nn.TransformerDecoderLayer``'s arguments,
defaults and state dict, around two :class:`MultiHeadAttention`."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from ..functional import Normalizer, Score
from ..utils import check_int
from ..utils.validation import check_on_device, module_input
from .encoder import activation_of, attend_checked, heads_of
from .multihead import (
    MultiHeadAttention,
    check_dropout,
    check_flag,
    check_layer_norm_eps,
)

__all__ = ["TransformerDecoderLayer"]


class TransformerDecoderLayer(nn.Module):
    """One transformer decoder block: self-attention, attention to the encoder's
    output (``memory``) and an MLP, each with its residual and layer norm.

    The arguments, defaults and state dict are ``nn.TransformerDecoderLayer``'s;
    ``score``, ``normalizer`` and ``init`` are passed to both attentions.

    Parameters
    ----------
    d_model : int
        Token size, of the targets and of the memory.
    nhead : int
        Heads of both attentions (``num_heads``, attnlib's name, also accepted).
    dim_feedforward, dropout, activation, layer_norm_eps : optional
        As in :class:`~attnlib.layers.TransformerEncoderLayer` (torch's defaults
        2048, 0.1, ReLU, 1e-5).
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
        See :func:`~attnlib.functional.attention`.
    num_heads : int, optional
        attnlib's name for ``nhead`` (give one of the two).
    init : {"torch", "linear"}
        The attentions' initialisation, see :class:`MultiHeadAttention`.

    Notes
    -----
    ``self_attn`` and ``multihead_attn`` are called as modules: forward hooks on
    them take the attention maps out, as with torch's layer.

    Implements
    ----------
    The decoder of Vaswani et al. (2017), §3.1 (post-norm; pre-norm as in Xiong et
    al., 2020).
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
        attention = dict(
            batch_first=batch_first, score=score, normalizer=normalizer, init=init,
            **made,
        )  # fmt: skip
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, bias, **attention)
        self.multihead_attn = MultiHeadAttention(
            d_model, nhead, dropout, bias, **attention
        )
        self.linear1 = nn.Linear(d_model, dim_feedforward, bias=bias, **made)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model, bias=bias, **made)
        self.norm_first = check_flag(norm_first, "norm_first")
        self.norm1, self.norm2, self.norm3 = (
            nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **made) for _ in "123"
        )
        self.dropout1, self.dropout2, self.dropout3 = (
            nn.Dropout(dropout) for _ in "123"
        )
        self.activation = activation

    def extra_repr(self) -> str:
        return (
            f"d_model={self.linear1.in_features}, "
            f"dim_feedforward={self.linear1.out_features}, norm_first={self.norm_first}"
        )

    def forward(
        self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
        memory_key_padding_mask=None, tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> torch.Tensor:  # fmt: skip
        """Transform the targets, attending to themselves and to ``memory``.

        Parameters
        ----------
        tgt : tensor or array-like, shape (T, N, E), (N, T, E) or (T, E)
            Target tokens in the layout of ``batch_first``.
        memory : tensor or array-like, shape (S, N, E), (N, S, E) or (S, E)
            The encoder's output.
        tgt_mask : bool or float tensor, shape (T, T) or (N * nhead, T, T), optional
            The self-attention's ``attn_mask``: True marks a pair that may not attend,
            a float mask is added to the scores.
        memory_mask : bool or float tensor, shape (T, S) or (N * nhead, T, S), optional
            The ``attn_mask`` of the attention to ``memory``.
        tgt_key_padding_mask : bool or float tensor, shape (N, T), optional
            True marks a padding target.
        memory_key_padding_mask : bool or float tensor, shape (N, S), optional
            True marks a padding token of ``memory``.
        tgt_is_causal, memory_is_causal : bool
            A causal mask on the self-attention, on the attention to ``memory``.

        Returns
        -------
        torch.Tensor
            The transformed targets, in the layout of ``tgt``.
        """
        check_flag(tgt_is_causal, "tgt_is_causal")  # named here, not as is_causal
        check_flag(memory_is_causal, "memory_is_causal")
        like = self.linear1.weight
        x = module_input(tgt, "tgt", like, min_ndim=2, allow_empty=True)
        memory = module_input(memory, "memory", like, min_ndim=2, allow_empty=True)
        own = dict(
            attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,
            is_causal=tgt_is_causal, need_weights=False,
        )  # fmt: skip
        cross = dict(
            attn_mask=memory_mask, key_padding_mask=memory_key_padding_mask,
            is_causal=memory_is_causal, need_weights=False,
        )  # fmt: skip
        if self.norm_first:
            x = x + self._self_block(self.norm1(x), own)
            x = x + self._cross_block(self.norm2(x), memory, cross)
            x = x + self._feed_forward(self.norm3(x))
        else:
            x = self.norm1(x + self._self_block(x, own))
            x = self.norm2(x + self._cross_block(x, memory, cross))
            x = self.norm3(x + self._feed_forward(x))
        check_on_device(  # huge memory passes the attention, not the layer norms
            ~torch.isfinite(x).all(),
            f"tgt or memory is too large: the layer norms overflow {x.dtype}; "
            "rescale them",
        )
        return x

    def _self_block(self, x, masks) -> torch.Tensor:
        out = attend_checked(self.self_attn, x, x, masks, "tgt or its masks")[0]
        return self.dropout1(out)

    def _cross_block(self, x, memory, masks) -> torch.Tensor:
        out = attend_checked(
            self.multihead_attn, x, memory, masks, "tgt, memory or memory's masks"
        )[0]
        return self.dropout2(out)

    def _feed_forward(self, x) -> torch.Tensor:
        return self.dropout3(
            self.linear2(self.dropout(self.activation(self.linear1(x))))
        )
