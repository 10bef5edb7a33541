"""Multi-head attention with ``nn.MultiheadAttention``'s arguments, defaults,
parameters and state dict, and attnlib's scores and normalizers."""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn
from torch.nn import functional as F

from ..functional import AttentionResult, Normalizer, Score, attend, resolve
from ..utils import as_tensor, check_int
from ..utils.boundary import checking
from . import _masks

__all__ = ["MultiHeadAttention"]

#: The layouts of ``batch_first``, for messages: the names of a batched input's axes.
_LAYOUTS = {False: "(L, N, E)", True: "(N, L, E)", None: "(..., L, E)"}


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned query, key, value and output projections.

    Each of ``num_heads`` heads attends in its own subspace of ``head_dim = embed_dim //
    num_heads`` dimensions; the heads' outputs are concatenated and projected back.
    The arguments, defaults, parameters and state dict are ``nn.MultiheadAttention``'s
    (a state dict loads into torch's module and back, ``strict=True``); ``score``,
    ``normalizer`` and ``init`` are attnlib's.

    Parameters
    ----------
    embed_dim : int
        Size of the query tokens and of the output (torch's ``E``).
    num_heads : int
        Number of heads; must divide ``embed_dim``.
    dropout : float in [0, 1]
        Dropout on the attention weights in training mode.
    bias : bool
        Whether the input and output projections have biases.
    add_bias_kv : bool
        Append a learned key ``bias_k`` and value ``bias_v`` to the keys and values.
    add_zero_attn : bool
        Append a zero key and a zero value to every head's keys and values.
    kdim, vdim : int, optional
        Sizes of the key and value tokens (default ``embed_dim``).
    batch_first : bool or None
        False (torch's default): batched input is ``(L, N, E)``; True: ``(N, L, E)``;
        unbatched input is ``(L, E)`` in both. None (attnlib's layout): tokens are
        rows, ``(..., L, E)`` with any leading batch dimensions.
    device, dtype : optional
        Where and in which dtype the parameters are made.
    score : str or callable
        How queries are compared with keys, see :func:`~attnlib.functional.attention`.
    normalizer : str or callable
        How a row of scores becomes weights, see :func:`~attnlib.functional.attention`.
    init : {"torch", "linear"}
        ``"torch"``: ``nn.MultiheadAttention``'s initialisation, draw for draw (the
        same seed gives the same parameters). ``"linear"``: each of the query, key,
        value and output projections drawn as an ``nn.Linear`` (attnlib's former
        default, which the book's experiments keep).

    Attributes
    ----------
    in_proj_weight : Parameter, shape (3 * embed_dim, embed_dim), or None
        The query, key and value projections stacked, when ``kdim == vdim ==
        embed_dim`` (``_qkv_same_embed_dim``); else ``q_proj_weight``,
        ``k_proj_weight`` (``embed_dim, kdim``) and ``v_proj_weight``
        (``embed_dim, vdim``).
    in_proj_bias : Parameter, shape (3 * embed_dim,), or None
        Their biases, in the order query, key, value.
    out_proj : nn.Linear
        The output projection.
    bias_k, bias_v : Parameter, shape (1, 1, embed_dim), or None
        With ``add_bias_kv``.

    Notes
    -----
    Where it departs from ``nn.MultiheadAttention``: a query whose every key is masked
    gets zero output and zero weights (torch: NaN); ``is_causal=True`` alone applies
    the causal mask (torch asks for ``attn_mask`` too and takes it as a hint);
    ``key`` and ``value`` default to ``query``. Inside torch's
    ``nn.TransformerEncoderLayer`` it makes torch take its general path (torch's
    fused path skips modules with forward hooks, so ours carries a no-op one): the
    fused kernel computes softmax attention with torch's masking, not this module's.

    Implements
    ----------
    Eqs. (3)-(4) of the self-expression paper with several heads (§2.1), as in
    Vaswani et al. (2017), §3.2.2.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool | None = False,
        device=None,
        dtype=None,
        *,
        score: Score = "scaled_dot",
        normalizer: Normalizer = "softmax",
        init: str = "torch",
    ):
        super().__init__()
        embed_dim = check_int(embed_dim, "embed_dim")
        num_heads = check_int(num_heads, "num_heads")
        if embed_dim % num_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must divide embed_dim ({embed_dim})"
            )
        self.dropout = check_dropout(dropout)
        if batch_first is not None and not isinstance(batch_first, bool):
            raise ValueError(
                f"batch_first must be None, True or False, got {batch_first!r}"
            )
        for flag, name in ((bias, "bias"), (add_bias_kv, "add_bias_kv"),
                           (add_zero_attn, "add_zero_attn")):  # fmt: skip
            check_flag(flag, name)
        if init not in ("torch", "linear"):
            raise ValueError(f"init must be 'torch' or 'linear', got {init!r}")
        resolve(score, normalizer)  # fail now, not at the first call
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else check_int(kdim, "kdim")
        self.vdim = embed_dim if vdim is None else check_int(vdim, "vdim")
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn
        self.score, self.normalizer, self.init = score, normalizer, init
        made = dict(device=device, dtype=dtype)
        e = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = nn.Parameter(torch.empty(3 * e, e, **made))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = nn.Parameter(torch.empty(e, e, **made))
            self.k_proj_weight = nn.Parameter(torch.empty(e, self.kdim, **made))
            self.v_proj_weight = nn.Parameter(torch.empty(e, self.vdim, **made))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(3 * e, **made))
        else:
            self.register_parameter("in_proj_bias", None)
        # made without drawing, so that _reset_parameters draws in torch's order
        self.out_proj = nn.utils.skip_init(
            nn.Linear, e, e, bias=bias, dtype=dtype,
            device=torch.get_default_device() if device is None else device,
        )  # fmt: skip
        if add_bias_kv:
            self.bias_k = nn.Parameter(torch.empty(1, 1, e, **made))
            self.bias_v = nn.Parameter(torch.empty(1, 1, e, **made))
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters()
        # torch's fused encoder path skips modules with hooks; ours must be called
        self.register_forward_pre_hook(_called_as_a_module)
        self._checked = ()  # inputs that the caller (our encoder layer) has checked

    def _projections(self):
        """The query, key and value weights and biases (biases None without bias)."""
        if self._qkv_same_embed_dim:
            weights = self.in_proj_weight.chunk(3)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        biases = (
            (None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        )
        return weights, biases

    def _reset_parameters(self) -> None:
        weights, biases = self._projections()
        with torch.no_grad():
            if self.init == "torch":  # nn.MultiheadAttention's draws, in its order
                self.out_proj.reset_parameters()
                if self._qkv_same_embed_dim:
                    nn.init.xavier_uniform_(self.in_proj_weight)
                else:
                    for w in weights:
                        nn.init.xavier_uniform_(w)
                if self.in_proj_bias is not None:
                    nn.init.zeros_(self.in_proj_bias)
                    nn.init.zeros_(self.out_proj.bias)
            else:  # each projection an nn.Linear's draws: q, k, v, then out
                for w, b in zip(weights, biases):
                    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
                    if b is not None:
                        bound = 1 / math.sqrt(w.shape[1])
                        nn.init.uniform_(b, -bound, bound)
                self.out_proj.reset_parameters()
            if self.bias_k is not None:
                nn.init.xavier_normal_(self.bias_k)
                nn.init.xavier_normal_(self.bias_v)

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
            f"batch_first={self.batch_first}, score={self.score!r}, "
            f"normalizer={self.normalizer!r}"
        )

    def _tokens(self, x, name: str, features: int, like: torch.Tensor) -> torch.Tensor:
        """``x`` as a checked tensor of the module's dtype, ``features`` wide.

        The module may run the caller's score or normalizer, so it is not public
        (boundary): its input is checked unless our layer checked it, or a public
        function of attnlib calls the module inside ``trusted()`` with its own tokens.
        """
        if checking() and not any(x is c for c in self._checked):
            floating = isinstance(x, torch.Tensor) and x.is_floating_point()
            if floating and x.dtype != like.dtype:
                raise ValueError(
                    f"{name} must have the module's dtype {like.dtype} (call .to() on "
                    f"one of them), got {x.dtype}"
                )
            x = as_tensor(
                x, name, min_ndim=2, dtype=like.dtype, device=like.device,
                allow_empty=True,
            )  # fmt: skip
        if self.batch_first is not None and x.ndim > 3:
            raise ValueError(
                f"{name} must be unbatched (L, E) or batched "
                f"{_LAYOUTS[self.batch_first]} (batch_first={self.batch_first}), got "
                f"shape {tuple(x.shape)}"
            )
        if x.shape[-1] != features:
            raise ValueError(
                f"{name} must have {features} features, got shape {tuple(x.shape)}"
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
        average_attn_weights: bool = True,
        is_causal: bool = False,
        *,
        mask=None,
    ) -> AttentionResult:
        """Attend from ``query`` to ``key`` and ``value`` (by default ``query`` itself).

        Parameters
        ----------
        query : tensor or array-like, shape (L, N, E), (N, L, E) or (L, E)
            Query tokens in the layout of ``batch_first`` (any ``(..., L, E)`` when it
            is None); a tensor must have the module's dtype.
        key : tensor or array-like, shape (S, N, kdim), (N, S, kdim) or (S, kdim)
            Key tokens (default: ``query``).
        value : tensor or array-like, shape (S, N, vdim), (N, S, vdim) or (S, vdim)
            Value tokens (default: ``key``).
        key_padding_mask : bool or float tensor, shape (N, S) or (S,), optional
            True (or ``-inf``) marks a key to ignore; a float mask is added to the
            scores.
        need_weights : bool
            Return the weights (else ``weights`` is None).
        attn_mask : bool or float tensor, shape (L, S) or (N * num_heads, L, S)
            Optional. True marks a pair that may *not* attend (the opposite of
            ``mask``); a float mask is added to the scores.
        average_attn_weights : bool
            Average the weights over the heads (torch's default), else per head.
        is_causal : bool
            Query ``i`` sees keys ``0 … i`` only (with or without ``attn_mask``).
        mask : bool or float tensor, broadcastable to (..., num_heads, L, S), optional
            attnlib's mask: True where a query may attend to a key.

        Returns
        -------
        AttentionResult
            ``output`` in the layout of ``query``, and the weights, batch first
            (torch's layout): ``(N, L, S)`` averaged or ``(N, num_heads, L, S)`` per
            head (``(L, S)`` or ``(num_heads, L, S)`` unbatched), or None.
        """
        for flag, name in ((need_weights, "need_weights"), (is_causal, "is_causal"),
                           (average_attn_weights, "average_attn_weights")):  # fmt: skip
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
        (w_q, w_k, w_v), (b_q, b_k, b_v) = self._projections()
        shapes = {}
        q_in = self._tokens(query, "query", self.embed_dim, w_q)
        k_in = q_in if key is None or key is query else None
        if k_in is None:
            k_in = self._tokens(key, "key", self.kdim, w_k)
        v_in = k_in if value is None or value is key else None
        if v_in is None:
            v_in = self._tokens(value, "value", self.vdim, w_v)
        for name, x in (("query", q_in), ("key", k_in), ("value", v_in)):
            shapes[name] = tuple(x.shape)
        q_in, k_in, v_in, batch = self._rows(q_in, k_in, v_in, shapes)
        q, k, v = (
            F.linear(q_in, w_q, b_q),
            F.linear(k_in, w_k, b_k),
            F.linear(v_in, w_v, b_v),
        )
        n_k = k.shape[-2]
        if self.bias_k is not None:  # one more key and value, learned
            k = torch.cat([k, self.bias_k.expand(*k.shape[:-2], 1, -1)], -2)
            v = torch.cat([v, self.bias_v.expand(*v.shape[:-2], 1, -1)], -2)
        q, k, v = (self._split_heads(t) for t in (q, k, v))
        if self.add_zero_attn:  # one more key and value per head, zero
            k = torch.cat([k, k.new_zeros(*k.shape[:-2], 1, k.shape[-1])], -2)
            v = torch.cat([v, v.new_zeros(*v.shape[:-2], 1, v.shape[-1])], -2)
        extra = k.shape[-2] - n_k
        merged = _masks.merge(
            key_padding_mask, attn_mask, mask, is_causal and extra > 0,
            batch=batch, heads=self.num_heads, n_q=q.shape[-2], n_k=n_k, extra=extra,
            like=q, layout="N" if self.batch_first is not None else "batch",
        )  # fmt: skip
        try:
            out, weights = attend(
                q, k, v, score=self.score, normalizer=self.normalizer, mask=merged,
                is_causal=is_causal and extra == 0, need_weights=need_weights,
                dropout_p=self.dropout if self.training else 0.0,
            )  # fmt: skip
        except ValueError as err:  # name what the caller passed, not the projections
            raise ValueError(f"query, key, value or mask: {err}") from err
        out = self.out_proj(out.transpose(-3, -2).flatten(-2))
        if self.batch_first is False and out.ndim == 3:
            out = out.transpose(0, 1)
        if need_weights and average_attn_weights:
            weights = weights.mean(-3)
        return AttentionResult(out, weights)

    def _rows(self, query, key, value, shapes):
        """The tokens in attnlib's layout ``(*batch, n, features)``, and ``batch``.

        Batch mismatches are reported in the caller's shapes and layout.
        """
        layout = self.batch_first
        if layout is not None:
            if not query.ndim == key.ndim == value.ndim:
                raise ValueError(
                    "query, key and value must all be unbatched (2-D) or all batched "
                    f"{_LAYOUTS[layout]} (3-D), got shapes {shapes['query']}, "
                    f"{shapes['key']}, {shapes['value']}"
                )
            if layout is False and query.ndim == 3:
                query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        where = f"({_LAYOUTS[layout]}, batch_first={layout})"
        if key.shape[-2] != value.shape[-2] or (
            layout is not None and key.shape[:-2] != value.shape[:-2]
        ):
            raise ValueError(
                f"key and value must have the same batch and number of tokens, got "
                f"shapes {shapes['key']} and {shapes['value']} {where}"
            )
        try:  # attnlib's layout broadcasts the batch dimensions, torch's does not
            batch = torch.broadcast_shapes(
                query.shape[:-2], key.shape[:-2], value.shape[:-2]
            )
        except RuntimeError:
            batch = None
        if batch is None or (layout is not None and query.shape[:-2] != key.shape[:-2]):
            raise ValueError(
                f"query, key and value must have the same batch size, got shapes "
                f"{shapes['query']}, {shapes['key']} and {shapes['value']} {where}"
            )
        return query, key, value, tuple(batch)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        # (..., n, embed_dim) -> (..., heads, n, head_dim)
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(-3, -2)


def _called_as_a_module(module, args) -> None:
    """A no-op forward pre-hook: torch's fused encoder path skips hooked modules."""


def check_layer_norm_eps(eps) -> float:
    """``eps`` as a float ≥ 0, or a ValueError naming ``layer_norm_eps``.

    torch's layers take any float and return NaN for a negative or NaN ε (and
    accept 0, which is exact for every row that is not constant): we refuse those
    two and infinity, and accept 0 as torch does.
    """
    if (
        isinstance(eps, bool)
        or not isinstance(eps, numbers.Real)
        or not 0 <= eps < math.inf
    ):
        raise ValueError(f"layer_norm_eps must be a finite number ≥ 0, got {eps!r}")
    return float(eps)


def check_flag(value, name: str) -> bool:
    """``value`` if it is True or False, else a ValueError naming ``name``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_dropout(p) -> float:
    """``p`` as a float in [0, 1], or a ValueError naming ``dropout``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"dropout must be a number in [0, 1], got {p!r}")
    return float(p)
