"""The face of attention: :func:`attention` and what it returns.

:func:`attention` checks its arguments once (``attnlib.functional._arguments``)
and hands them to :func:`_attention`, which picks the path: softmax as the
hand-written expression, checked once on its output; PyTorch's fused SDPA or the
flash kernels without weights (``attnlib.functional._fused``); else the weights path
(``attnlib.functional._dense``). ``attend`` is the same function under the name the
library's own modules call it by.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..utils.validation import traced
from ._arguments import (
    check_finite,
    check_flag,
    check_mask,
    check_shapes,
    checked_tensors,
    sdpa_arguments,
    split_additive,
)
from ._dense import additive, causal_mask, exact, softmax_path, weights_path
from ._fused import flash, flashable, fused, sdpa_once
from .scores import FUSED_SCORES, Normalizer, Score, default_temperature

__all__ = ["AttentionResult", "attention", "attend"]

_NAMES = ("q", "k", "v", "mask")


class AttentionResult(NamedTuple):
    """What :func:`attention` returns: the outputs and the weights.

    ``output`` is ``(..., n_q, d_v)``; ``weights`` is ``(..., n_q, n_k)``.
    """

    output: torch.Tensor
    weights: torch.Tensor


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
        How a query is compared with a key (see ``attnlib.functional.SCORES``). A
        callable maps ``(q, k)`` to scores of shape ``(..., n_q, n_k)``.
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
        ``(..., n_q, n_k)``, in the dtype of ``q``, ``k`` and ``v``.

    Raises
    ------
    AttentionInputError
        A ``ValueError`` and a ``RuntimeError`` (SDPA's type), naming the fix: integer
        tensors, tensors of different dtypes, or tensors (the mask included) on
        different devices. Nothing is cast, promoted or moved: array-likes take the
        dtype and device of ``q``.
    ValueError
        Naming the argument and the caller's shapes: bad shapes, a score callable's
        output of the wrong shape, NaN or infinite inputs where a query sees them (a
        NaN in a key or value that the mask hides does not reach the output), an
        unknown score or normalizer, a bad mask, a non-positive temperature or scale,
        a dropout_p outside [0, 1], both of mask and attn_mask or of temperature and
        scale, or scores that overflow (:class:`~attnlib.errors.ScoreError`, with a
        remedy). In float16 the scaled dot is scaled before the product, as SDPA does,
        so that ``q·k`` may exceed 65 504 where ``q·k / temperature`` does not.

    Implements
    ----------
    Eqs. (1)-(2) of the self-expression paper (Z = V C with C = softmax(KᵀQ/√d)),
    in rows;
    Eq. (1) of Vaswani et al. (2017).
    """
    mask, bias, temperature, dropout_p, mask_name = sdpa_arguments(
        mask, attn_mask, is_causal, dropout_p, temperature, scale
    )
    check_flag(need_weights, "need_weights")
    q, k, v = checked_tensors(q, k, v)
    if q.device.type != "cpu" and not traced(q):
        # On an accelerator the culprit cannot be found after a failed check (that
        # would synchronise): each input is asserted on the device, except the keys and
        # values a mask may hide. (On the CPU the one check is on the output.)
        check_finite(q, "q")
        if mask is None and bias is None and not is_causal:
            check_finite(k, "k")
            check_finite(v, "v")
    return _attention(
        q, k, v, score, normalizer, mask, bias, temperature, is_causal, dropout_p,
        need_weights, ("q", "k", "v", mask_name),
    )  # fmt: skip


#: The library's own modules call :func:`attention` by this name: the same function.
attend = attention


def _attention(
    q, k, v, score, normalizer, mask, bias, temperature, is_causal, dropout_p,
    need_weights, names=_NAMES,
) -> AttentionResult:  # fmt: skip
    """:func:`attention` on tensors of one dtype and device, checked arguments.

    ``mask`` is a bool mask and ``bias`` a float mask (SDPA's additive one, ``-inf``
    allowed, its values not yet read). The shapes are checked here (a shape costs no
    pass over the data); then the path is picked. On the CPU softmax runs first as a
    caller would write it: without weights as PyTorch's fused SDPA, with them (at a
    temperature of at least 1, where nothing overflows that ``q kᵀ`` does not, and
    without dropout) as the hand-written expression; one check, on the output. Should
    it fail (a NaN or infinity, a masked NaN, a query with no key, an overflow), the
    call is redone on the paths below, which find why or compute the limit. Off the
    CPU, softmax without weights runs as SDPA, sparsemax and entmax on CUDA as the
    flash kernels; else the weights path.
    """
    shape, same = check_shapes(q, k, v, score, names)
    if mask is not None:
        mask = check_mask(mask, shape, q.device, names[3], names[0])
    if bias is not None:
        check_mask(bias, shape, q.device, names[3], names[0], floating=True)
    t = default_temperature(temperature, score, q.shape[-1])
    # A default temperature (sqrt(d) or 1) is held by every dtype
    soft = normalizer == "softmax" and (temperature is None or exact(t, q.dtype))
    # float16 is scaled before the product (see weights_path)
    eager_cpu = q.device.type == "cpu" and q.dtype != torch.float16 and not traced(q)
    # Where an output cannot be redone as it was (off the CPU, in a graph, with dropout,
    # which would draw twice), SDPA runs only at a temperature of at least 1: nothing
    # overflows then that q kᵀ does not, so that SDPA's output is the weights path's,
    # whose limit at a tiny temperature it lacks.
    fuse = (
        soft
        and not need_weights
        and score in FUSED_SCORES
        and (t >= 1 or (eager_cpu and not dropout_p))
    )
    if soft and eager_cpu:
        if fuse:
            out = sdpa_once(
                q, k, v, mask, bias, is_causal, 1 / t, dropout_p, shape, same
            )
            if out is not None:
                return AttentionResult(out, None)
            fuse = False  # the weights path finds why, or the limit
        elif t >= 1 and not dropout_p and score in FUSED_SCORES:
            add = additive(mask, bias, is_causal, shape, q.dtype, q.device)
            found = softmax_path(q, k, v, add, t, shape)
            if found is not None:
                return AttentionResult(found[0], found[1] if need_weights else None)
    if bias is not None:  # its values read: NaN and +inf refused, -inf a masked key
        keep, bias = split_additive(bias, names[3])
        mask = keep if mask is None else mask & keep
    if fuse and is_causal and mask is None and bias is None:
        # SDPA's own causal path computes only the lower triangle
        out = fused(q, k, v, score, None, None, temperature, dropout_p, True, names)
        if out is not None:  # None: not finite, and the weights path says why
            return AttentionResult(out, None)
    if flashable(
        q, k, v, score, normalizer, need_weights, bias, dropout_p, temperature
    ):
        out = flash(q, k, v, score, normalizer, mask, temperature, is_causal, names[3])
        if out is not None:  # None: Triton refused the kernel
            return AttentionResult(out, None)
    may_be_empty = mask is not None  # the causal triangle alone leaves each query a key
    if is_causal:  # SDPA's causal mask: aligned at the top left
        causal = causal_mask(q.shape[-2], k.shape[-2], q.device)
        mask = causal if mask is None else mask & causal
    if fuse:
        out = fused(q, k, v, score, mask, bias, temperature, dropout_p, False, names)
        if out is not None:
            return AttentionResult(out, None)
    out, weights = weights_path(
        q, k, v, score, normalizer, mask, temperature, bias, dropout_p, names,
        may_be_empty,
    )  # fmt: skip
    return AttentionResult(out, weights if need_weights else None)


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
