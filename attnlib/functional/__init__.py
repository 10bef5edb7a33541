"""Attention in one equation.

Every chapter of the book is a call of :func:`attention`: choose how queries are
compared with keys (the *score*), how a row of scores becomes weights (the
*normalizer*), and which keys each query may see (the *mask*). Tokens are rows: ``q`` is
``(..., n_q, d)``, ``k`` is ``(..., n_k, d)``, ``v`` is ``(..., n_k, d_v)``, and the
weights are indexed ``[query, key]``. The papers put tokens in columns; their
coefficient matrix ``C`` is our ``weights.T``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import NamedTuple

import torch

from ..errors import ScoreError
from ..normalizers import NORMALIZERS, SHIFT_INVARIANT
from ..utils import as_tensor, check_on_device, check_positive
from . import _triton_flash as triton_flash

__all__ = [
    "AttentionResult",
    "attention",
    "attend",
    "resolve",
    "SCORES",
]


class AttentionResult(NamedTuple):
    """What :func:`attention` returns: the outputs and the weights.

    ``output`` is ``(..., n_q, d_v)``; ``weights`` is ``(..., n_q, n_k)``.
    """

    output: torch.Tensor
    weights: torch.Tensor


def _dot(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.transpose(-2, -1)


def _neg_sq_dist(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    # -||q - k||^2 / 2 expanded, so that memory stays O(n_q n_k) rather than
    # O(n_q n_k d).
    sq = (q * q).sum(-1, keepdim=True) - 2 * _dot(q, k) + (k * k).sum(-1).unsqueeze(-2)
    return -0.5 * sq.clamp_min(0)


def _neg_l1(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    q = q.expand(*batch, *q.shape[-2:])
    k = k.expand(*batch, *k.shape[-2:])
    return -torch.cdist(q, k, p=1)


#: The built-in scores, before division by the temperature. With ``temperature=t``:
#: ``dot`` is ``q·k / t``; ``scaled_dot`` the same with ``t = sqrt(d)`` by default
#: (Eq. 2 of the self-expression paper); ``neg_sq_dist`` is ``-||q-k||² / (2t)``, the
#: Gaussian kernel of Eq. (6) with ``t = σ²``; ``neg_l1`` is ``-||q-k||₁ / t``, the
#: Laplace kernel.
SCORES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "dot": _dot,
    "scaled_dot": _dot,
    "neg_sq_dist": _neg_sq_dist,
    "neg_l1": _neg_l1,
}


def _resolve_normalizer(normalizer) -> Callable[[torch.Tensor], torch.Tensor]:
    if callable(normalizer):
        return normalizer
    if normalizer not in NORMALIZERS:
        known = sorted(NORMALIZERS)
        raise ValueError(
            f"normalizer must be a callable or one of {known}, got {normalizer!r}"
        )
    return NORMALIZERS[normalizer]


def _resolve_score(score):
    if callable(score):
        return score
    if score not in SCORES:
        raise ValueError(
            f"score must be a callable or one of {sorted(SCORES)}, got {score!r}"
        )
    return SCORES[score]


def resolve(score: Score, normalizer: Normalizer) -> tuple[Callable, Callable]:
    """The score and normalizer functions that :func:`attention` would use.

    A module built on :func:`attention` calls it in its constructor, so that an unknown
    name fails there and not at the first forward pass.

    Parameters
    ----------
    score : str or callable
        See :func:`attention`.
    normalizer : str or callable
        See :func:`attention`.

    Returns
    -------
    (callable, callable)
        ``score(q, k)`` and ``normalizer(scores)``.

    Implements
    ----------
    No equation: it looks up the names :func:`attention` accepts (``SCORES`` and
    ``attnlib.normalizers.NORMALIZERS``).
    """
    return _resolve_score(score), _resolve_normalizer(normalizer)


def _check_mask(mask, shape, device) -> torch.Tensor:
    """``mask`` as a bool tensor on ``device``, expanded to the scores' ``shape``."""
    mask = torch.as_tensor(mask, device=device)
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be boolean (True = may attend) or floating (added to the "
            f"scores), got dtype {mask.dtype}"
        )
    try:
        mask = mask.expand(shape)
    except RuntimeError as err:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' "
            f"shape {tuple(shape)}"
        ) from err
    return mask


Score = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Normalizer = str | Callable[[torch.Tensor], torch.Tensor]


def attention(
    q,
    k,
    v,
    *,
    score: Score = "scaled_dot",
    normalizer: Normalizer = "softmax",
    mask=None,
    temperature: float | None = None,
    attn_mask=None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    need_weights: bool = True,
) -> AttentionResult:
    """Attention: compare queries with keys, normalise each row, average the values.

    ``weights = normalizer(score(q, k) / temperature + bias)`` with masked keys
    excluded, and ``output = weights @ v``. The last four arguments are those of
    ``torch.nn.functional.scaled_dot_product_attention`` with its meaning, so that a
    call of SDPA runs here unchanged (and gains the other scores and normalizers).

    Parameters
    ----------
    q : tensor or array-like, shape (..., n_q, d)
        Queries, one per row.
    k : tensor or array-like, shape (..., n_k, d)
        Keys, one per row.
    v : tensor or array-like, shape (..., n_k, d_v)
        Values, one per key.
    score : {"scaled_dot", "dot", "neg_sq_dist", "neg_l1"} or callable
        How a query is compared with a key (see :data:`SCORES`). A callable maps
        ``(q, k)`` to scores of shape ``(..., n_q, n_k)``.
    normalizer : str or callable
        How a row of scores becomes weights: a name in
        ``attnlib.normalizers.NORMALIZERS`` (``"softmax"``, ``"sparsemax"``,
        ``"entmax"``, or ``"none"``, which uses the scores themselves) or a map.
    mask : bool or float tensor, broadcastable to (..., n_q, n_k), optional
        A bool mask is True where the query may attend to the key: the polarity of
        ``F.scaled_dot_product_attention``'s ``attn_mask``, the opposite of
        ``nn.MultiheadAttention``'s ``key_padding_mask`` and bool ``attn_mask``, where
        True masks a key out. A float mask is added to the scaled scores (SDPA's
        additive mask; ``-inf`` masks a key). A query with no key gets zero weights and
        zero output, with finite gradients, as SDPA gives it.
    temperature : float, optional
        Positive divisor of the scores; ``sqrt(d)`` for ``"scaled_dot"`` and 1
        otherwise. For softmax, sparsemax and entmax the row maximum is subtracted
        first, so that a tiny temperature gives the limit (all weight on the highest
        score, shared on ties).
    attn_mask : bool or float tensor, broadcastable to (..., n_q, n_k), optional
        SDPA's name for ``mask`` (give one of the two).
    is_causal : bool
        Query ``i`` may attend to keys ``0 … i`` only (SDPA's top-left aligned causal
        mask), together with any ``mask``.
    dropout_p : float in [0, 1]
        Dropout on the weights, scaled by ``1 / (1 - dropout_p)``; applied whenever it
        is positive, as SDPA does (pass 0 at evaluation). The returned weights are the
        ones the output used.
    scale : float, optional
        SDPA's multiplier of the scores, ``1 / temperature`` (give one of the two).
    need_weights : bool
        Return the weights. Without them, ``weights`` is None and, with the
        ``"scaled_dot"`` or ``"dot"`` score, the weights are never formed: softmax
        attention runs as PyTorch's fused ``scaled_dot_product_attention``; on CUDA
        with Triton installed, ``"sparsemax"`` and ``"entmax"`` attention without
        dropout or a float mask run as flash kernels (memory linear in the number of
        keys) that find each query's threshold over blocks of keys, then skip the
        blocks whose weights are all zero. Their gradients are first-order only: to
        differentiate twice (``create_graph=True``), ask for the weights.

    Returns
    -------
    AttentionResult
        ``output`` of shape ``(..., n_q, d_v)`` and ``weights`` of shape
        ``(..., n_q, n_k)``, in the widest dtype of ``q``, ``k`` and ``v`` (array-likes
        take the dtype of ``q``).

    Raises
    ------
    ValueError
        Naming the argument: bad shapes, NaN or infinite inputs, an unknown score or
        normalizer, a bad mask, a non-positive temperature or scale, a dropout_p
        outside [0, 1], both of mask and attn_mask or of temperature and scale, or
        scores that overflow.

    Implements
    ----------
    Eqs. (1)-(2) of the self-expression paper (Z = V C with C = softmax(KᵀQ/√d)),
    in rows;
    Eq. (1) of Vaswani et al. (2017).
    """
    mask, bias, temperature, dropout_p = _sdpa_arguments(
        mask, attn_mask, is_causal, dropout_p, temperature, scale
    )
    _check_flag(need_weights, "need_weights")
    # SDPA's fused kernels: the output is checked for NaN instead of q, k and v.
    fused = _fusable(score, normalizer, need_weights)
    q = as_tensor(q, "q", min_ndim=2, allow_empty=True, finite=not fused)
    k = as_tensor(
        k, "k", min_ndim=2, dtype=_like(k, q), device=q.device, allow_empty=True,
        finite=not fused,
    )  # fmt: skip
    v = as_tensor(
        v, "v", min_ndim=2, dtype=_like(v, q), device=q.device, allow_empty=True,
        finite=not fused,
    )  # fmt: skip
    # Tensors of different floating dtypes are promoted to the widest (never cast down).
    dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    return _attention(
        q, k, v, score, normalizer, mask, bias, temperature, is_causal, dropout_p,
        need_weights,
    )  # fmt: skip


def _attention(
    q, k, v, score, normalizer, mask, bias, temperature, is_causal, dropout_p,
    need_weights,
) -> AttentionResult:  # fmt: skip
    """:func:`attention` on checked tensors of one dtype and device, checked arguments.

    The shapes are checked here (a shape costs no pass over the data); then the causal
    mask, and SDPA's fused kernels or the weights.
    """
    _check_shapes(q, k, v, score)
    fused = _fusable(score, normalizer, need_weights)
    if fused and is_causal and mask is None and bias is None:
        # SDPA's own causal path computes only the lower triangle
        return AttentionResult(
            _fused(q, k, v, score, None, None, temperature, dropout_p, causal=True),
            None,
        )
    if _flashable(
        q, k, v, score, normalizer, need_weights, bias, dropout_p, temperature
    ):
        out = _flash(q, k, v, score, normalizer, mask, temperature, is_causal)
        if out is not None:  # None: Triton refused the kernel
            return AttentionResult(out, None)
    if is_causal:  # SDPA's causal mask: aligned at the top left
        causal = torch.ones(
            q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device
        ).tril()
        if mask is None:
            mask = causal
        else:
            mask = torch.as_tensor(mask, device=q.device)
            if mask.dtype != torch.bool or mask.shape[-2:] not in (
                causal.shape,
                (1, causal.shape[1]),
                (causal.shape[0], 1),
                (1, 1),
            ):
                _check_mask(mask, causal.shape, q.device)  # raises, naming the problem
            mask = mask & causal
    if fused:
        return AttentionResult(
            _fused(q, k, v, score, mask, bias, temperature, dropout_p), None
        )
    result = _weights(q, k, v, score, normalizer, mask, temperature, bias, dropout_p)
    return result if need_weights else AttentionResult(result.output, None)


def _check_shapes(q, k, v, score) -> None:
    """Raise a ValueError naming the argument unless the shapes of q, k, v fit."""
    if k.shape[-2] == 0 or q.shape[-1] == 0 or k.shape[-1] == 0:
        raise ValueError(
            "k must hold at least one key and q, k at least one feature, got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}"
        )
    if not callable(score) and q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size, got {q.shape[-1]} and "
            f"{k.shape[-1]}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of tokens, got {k.shape[-2]} and "
            f"{v.shape[-2]}"
        )
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError as err:
        shapes = ", ".join(str(tuple(t.shape)) for t in (q, k, v))
        raise ValueError(
            f"q, k and v must have broadcastable batch dimensions, got shapes {shapes}"
        ) from err


def _temperature(temperature, score, d: int) -> float:
    """The temperature, checked by the public function, or its default.

    The default is ``sqrt(d)`` for the scaled dot, else 1.
    """
    if temperature is None:
        temperature = math.sqrt(d) if score == "scaled_dot" else 1.0
    return temperature


#: The scores SDPA computes: q kᵀ / sqrt(d) and q kᵀ.
_FUSED_SCORES = ("scaled_dot", "dot")


def _fusable(score, normalizer, need_weights: bool) -> bool:
    """Whether SDPA's fused kernels compute this attention (no weights are asked)."""
    return not need_weights and normalizer == "softmax" and score in _FUSED_SCORES


def _fused(
    q, k, v, score, mask, bias, temperature, dropout_p, causal: bool = False
) -> torch.Tensor:
    """Softmax attention's output by ``F.scaled_dot_product_attention`` (checked input).

    The same mathematics as :func:`attend` with the softmax: SDPA's fused kernels never
    form the weights. Masks become SDPA's one ``attn_mask``; a query with no key gets
    zeros, as in :func:`attend`.
    """
    scale = 1 / _temperature(temperature, score, q.shape[-1])
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    shape = (*batch, q.shape[-2], k.shape[-2])
    empty = None
    if mask is not None:
        mask = _check_mask(mask, shape, q.device)
        empty = ~mask.any(-1, keepdim=True)
    if bias is not None:
        bias = bias.to(device=q.device, dtype=q.dtype)
        mask = bias if mask is None else torch.where(mask, bias, float("-inf"))
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale, is_causal=causal
    )
    if empty is not None:
        out = out.masked_fill(empty, 0.0)
    check_on_device(  # NaN or inf in q, k, v reach the output, as overflow does
        ~torch.isfinite(out).all(),
        f"q, k or v contains NaN or infinite values, or q k^T / temperature overflows "
        f"{q.dtype} (q and k too large, or temperature too small)",
    )
    return out


#: The names whose attention the flash kernels compute, and their α ("entmax" is
#: ``normalizers.entmax`` at its default, 1.5-entmax).
_FLASH_ALPHAS = {"sparsemax": 2.0, "entmax": 1.5}


def _flashable(
    q, k, v, score, normalizer, need_weights, bias, dropout_p, temperature
) -> bool:
    """Whether the flash entmax kernels compute this attention: sparsemax or entmax
    with a dot score, no weights asked, no additive mask or dropout, a scale
    ``1 / temperature`` that float32 holds, on CUDA tensors that the kernels take."""
    return (
        not need_weights
        and isinstance(normalizer, str)
        and normalizer in _FLASH_ALPHAS
        and score in _FUSED_SCORES
        and bias is None
        and not dropout_p
        and 1 / _temperature(temperature, score, q.shape[-1]) <= _FLOAT32_MAX
        and triton_flash.accepts(q, k, v)
    )


_FLOAT32_MAX = torch.finfo(torch.float32).max


def _flash(
    q, k, v, score, normalizer, mask, temperature, causal
) -> torch.Tensor | None:
    """Sparsemax or 1.5-entmax attention's output by the flash kernels (checked input).

    The same mathematics as :func:`attend` with that normalizer, without the weights:
    each query's threshold is found over blocks of keys, then the blocks of keys whose
    weights are all zero are skipped (``attnlib.functional._triton_flash``). As in
    :func:`attend`, the row maximum is subtracted before the scores are divided by the
    temperature, and a query with no key gets zeros. None where Triton cannot build
    the kernel (the caller computes densely).
    """
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:  # checked, but passed unexpanded (its broadcast dims stay 0)
        mask = torch.as_tensor(mask, device=q.device)
        _check_mask(mask, (*batch, q.shape[-2], k.shape[-2]), q.device)
    out = triton_flash.flash_entmax_attention(
        q, k, v, alpha=_FLASH_ALPHAS[normalizer], mask=mask, causal=causal,
        scale=1 / _temperature(temperature, score, q.shape[-1]),
    )  # fmt: skip
    if out is None:  # Triton refused the kernel: attention's dense path computes
        return None
    check_on_device(  # the kernels write NaN in a row whose q·k is NaN or +inf
        ~torch.isfinite(out).all(),
        "score(q, k) gave NaN or +inf in a row (q and k too large for float32)",
    )
    return out


def _sdpa_arguments(mask, attn_mask, is_causal, dropout_p, temperature, scale):
    """SDPA's arguments in attnlib's terms, checked: a bool mask, an additive bias and
    the temperature (``1 / scale``)."""
    if attn_mask is not None:
        if mask is not None:
            raise ValueError("give mask or attn_mask (the same argument), not both")
        mask = attn_mask
    _check_flag(is_causal, "is_causal")
    if (
        isinstance(dropout_p, bool)
        or not isinstance(dropout_p, (int, float))
        or not (0 <= dropout_p <= 1)
    ):
        raise ValueError(f"dropout_p must be a number in [0, 1], got {dropout_p!r}")
    if scale is not None:
        if temperature is not None:
            raise ValueError("give temperature or scale (its inverse), not both")
        temperature = 1 / check_positive(scale, "scale")
        if math.isinf(temperature):  # a subnormal scale, whose inverse overflows
            raise ValueError(
                f"scale must be at least {1 / sys.float_info.max:g} (its inverse "
                f"overflows), got {scale!r}"
            )
    elif temperature is not None:
        temperature = check_positive(temperature, "temperature")
    bias = None
    if isinstance(mask, torch.Tensor) and mask.is_floating_point():
        mask, bias = _split_additive(mask)
    return mask, bias, temperature, float(dropout_p)


def _split_additive(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A float mask (SDPA's, added to the scores) as the bool mask of the keys it keeps
    and their finite bias."""
    if torch.isnan(mask).any() or torch.isposinf(mask).any():
        raise ValueError("a float mask (additive) must not hold NaN or +inf")
    keep = ~torch.isneginf(mask)
    return keep, mask.masked_fill(~keep, 0.0)


def _check_flag(value, name: str) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    score: Score = "scaled_dot",
    normalizer: Normalizer = "softmax",
    mask=None,
    temperature: float | None = None,
    bias: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    need_weights: bool = True,
) -> AttentionResult:
    """:func:`attention` on tensors that the caller has already checked.

    For callers inside attnlib that validated their own input once, at their public
    boundary: ``q``, ``k``, ``v`` are finite floating tensors of one dtype and device
    (as :func:`attention` makes them). Their shapes, the score, normalizer, mask and a
    given temperature are still checked here (none of these checks reads the data),
    and scores that overflow raise :class:`~attnlib.errors.ScoreError`.

    Parameters
    ----------
    q : tensor, shape (..., n_q, d)
        Checked queries.
    k : tensor, shape (..., n_k, d)
        Checked keys, in the dtype and on the device of ``q``.
    v : tensor, shape (..., n_k, d_v)
        Checked values, in the dtype and on the device of ``q``.
    score, normalizer, mask, temperature : object
        As in :func:`attention`.
    bias : float tensor, broadcastable to (..., n_q, n_k), optional
        Finite, added to the scores after the temperature (SDPA's additive mask); not
        with a float ``mask``, which is one.
    dropout_p : float in [0, 1]
        Dropout on the weights, as in :func:`attention`.
    is_causal, need_weights : bool
        As in :func:`attention`.

    Returns
    -------
    AttentionResult
        As :func:`attention`.

    Implements
    ----------
    Eq. (1) of Vaswani et al. (2017), as :func:`attention`.
    """
    if temperature is not None:
        temperature = check_positive(temperature, "temperature")
    _check_flag(is_causal, "is_causal")
    _check_flag(need_weights, "need_weights")
    if isinstance(mask, torch.Tensor) and mask.is_floating_point():
        if bias is not None:
            raise ValueError("give a float mask or bias (both are added), not both")
        mask, bias = _split_additive(mask)
    return _attention(
        q, k, v, score, normalizer, mask, bias, temperature, is_causal, dropout_p,
        need_weights,
    )  # fmt: skip


def _weights(
    q, k, v, score, normalizer, mask, temperature, bias, dropout_p
) -> AttentionResult:
    """The weights and the output, for :func:`_attention` (checked arguments)."""
    score_fn, normalize = _resolve_score(score), _resolve_normalizer(normalizer)
    temperature = _temperature(temperature, score, q.shape[-1])
    scores, empty = _masked(score_fn(q, k), mask)
    if scores.numel() == 0:
        return AttentionResult(normalize(scores) @ v, normalize(scores))
    shift = isinstance(normalizer, str) and normalizer in SHIFT_INVARIANT
    scores = _tempered(scores, _checked_tops(scores), temperature, shift)
    if bias is not None:
        scores = scores + bias.to(device=scores.device, dtype=scores.dtype)
    weights = normalize(scores)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)
    if dropout_p:
        weights = torch.nn.functional.dropout(weights, dropout_p)
    return AttentionResult(weights @ v, weights)


def _masked(scores, mask):
    """Scores with masked keys at ``-inf``, and the rows with no key (or ``None``)."""
    if mask is None:
        return scores, None
    mask = _check_mask(mask, scores.shape, scores.device)
    # A row whose every key is masked (causal masks with padding make them) gets zero
    # weights and zero output, as SDPA's: its scores stay unmasked (finite, so no NaN
    # and finite gradients) and its weights are zeroed at the end.
    empty = ~mask.any(-1, keepdim=True)
    return scores.masked_fill(~mask & ~empty, float("-inf")), empty


def _checked_tops(scores):
    """The row maxima, checked: a row of NaN, ``+inf`` or no finite score is refused."""
    # Detached: the shift they serve changes no output (softmax, sparsemax, entmax are
    # shift-invariant), so it needs no gradient.
    top = scores.detach().amax(-1, keepdim=True)
    if top.device.type != "cpu":  # one check on the device: no synchronisation
        check_on_device(
            ~torch.isfinite(top).all(),
            "score(q, k) gave NaN, +inf or only -inf in a row (q and k too large for "
            f"{scores.dtype}, or a score callable's output)",
        )
    elif not torch.isfinite(top).all():
        what = (
            "NaN"
            if torch.isnan(top).any()
            else "+inf"
            if torch.isposinf(top).any()
            else "only -inf"
        )
        raise ScoreError(what, scores.dtype)
    return top


def _tempered(scores, top, temperature, shift):
    """Scores divided by the temperature, without overflow where ``shift`` allows."""
    # A temperature that the scores' dtype rounds to 0 or inf is applied in float64, so
    # that 0 / 0 and -inf / inf (masked keys) do not become NaN.
    t_cast = float(torch.tensor(temperature, dtype=scores.dtype))
    exact = t_cast != 0 and math.isfinite(t_cast)
    if shift and not (exact and t_cast >= 1):
        # A temperature below 1 could overflow the scores to +inf; their gaps to the row
        # maximum are finite, and can overflow only to -inf (weight 0). (At 1 or above
        # nothing overflows, and the normalizer shifts by the row maximum itself.)
        scores = scores - top
        return (
            scores.div_(temperature)
            if exact
            else (scores.double() / temperature).to(scores.dtype)
        )
    divided = (
        scores / temperature
        if exact
        else (scores.double() / temperature).to(scores.dtype)
    )
    if temperature < 1:
        check_on_device(
            (torch.isinf(divided) & torch.isfinite(scores)).any(),
            f"temperature={temperature!r} makes the scores overflow {scores.dtype}",
        )
    return divided


def output_of(y) -> torch.Tensor:
    """The output of a model that returns an :class:`AttentionResult` or a tensor.

    Parameters
    ----------
    y : AttentionResult or tensor-like
        What a model returned.

    Returns
    -------
    torch.Tensor
        ``y.output`` for an :class:`AttentionResult`, else ``y`` as a tensor.
    """
    return y.output if isinstance(y, AttentionResult) else torch.as_tensor(y)


def _like(x, ref: torch.Tensor):
    """Array-likes take the dtype of ``ref``; tensors keep theirs.

    Tensors are checked, not cast.
    """
    return None if isinstance(x, torch.Tensor) and x.is_floating_point() else ref.dtype
