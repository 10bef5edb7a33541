"""The weights path: attention that forms its weights (any score, any normalizer).

``weights = normalizer(score(q, k) / temperature + bias)`` with masked keys at
``-inf``, then ``output = weights @ v``. A valid call pays one check on the output (or
on the row maxima, where the normalizer needs them); what was wrong is found only
after a check fails, so that the good path costs what the hand-written expression
costs.
"""

from __future__ import annotations

import torch

from ..errors import ScoreError
from ..normalizers import SHIFT_INVARIANT
from ..utils import check_on_device
from ..utils.validation import finite_on_host, traced
from ._arguments import check_mask
from .scores import (
    FUSED_SCORES,
    default_temperature,
    resolve_normalizer,
    resolve_score,
)

__all__ = ["weights_path", "causal_mask"]

_CAUSAL: dict = {}


def causal_mask(n_q: int, n_k: int, device) -> torch.Tensor:
    """SDPA's causal mask, aligned at the top left: query ``i`` sees keys ``0 … i``.

    Kept per shape and device for eager calls (building it costs more than a tiny
    attention), built afresh where a graph is traced.
    """
    if torch.compiler.is_compiling():
        return _triangle(n_q, n_k, device)
    key = (n_q, n_k, device)
    mask = _CAUSAL.get(key)
    if mask is None:
        if len(_CAUSAL) > 64:
            _CAUSAL.clear()
        mask = _CAUSAL[key] = _triangle(n_q, n_k, device)
    return mask


def _triangle(n_q: int, n_k: int, device) -> torch.Tensor:
    return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril()


def _exact(temperature: float, dtype: torch.dtype) -> bool:
    """Whether ``dtype`` holds ``temperature`` as a nonzero finite number."""
    low, high = _RANGE.get(dtype) or _RANGE.setdefault(dtype, _range(dtype))
    return low < temperature <= high


def _range(dtype: torch.dtype) -> tuple[float, float]:
    """Half the smallest subnormal of ``dtype`` and its largest number."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps / 2, info.max


_RANGE: dict = {}  # dtype -> _range(dtype): torch.finfo costs a microsecond per call


def weights_path(
    q, k, v, score, normalizer, mask, temperature, bias, dropout_p, names,
    may_be_empty=True, additive=True,
):  # fmt: skip
    """The output and the weights, for ``attention`` (checked arguments).

    ``names`` are the caller's names of q, k, v and the mask, for messages;
    ``may_be_empty`` is False where the mask leaves every query a key (the causal
    triangle alone), which spares a reduction. With ``additive``, a broadcast bool
    mask of a large softmax call on the CPU is added as a bias of 0 and ``-inf`` (the
    same numbers as masking, at the cost of an addition); should the output not be
    finite, the call is redone masking, which hides a NaN of a masked key.
    """
    given = temperature
    score_fn, normalize = resolve_score(score), resolve_normalizer(normalizer)
    temperature = default_temperature(temperature, score, q.shape[-1])
    exact = _exact(temperature, q.dtype)
    if q.dtype == torch.float16 and score in FUSED_SCORES and exact and temperature > 1:
        # SDPA's order in float16: q·k may overflow where q·k / t does not, so q and k
        # are scaled first, by sqrt(1/t) each.
        root = temperature**-0.5
        scores, temperature = score_fn(q * root, k * root), 1.0
    else:
        scores = score_fn(q, k)
    if callable(score):
        _check_scores_shape(scores, q, k, names)
    at_once = normalizer == "softmax" and exact and temperature >= 1
    additive = (
        additive
        and at_once
        and mask is not None
        and scores.device.type == "cpu"
        and scores.numel() >= max(2**16, 4 * mask.numel())
    )
    scores, empty, bias = _masked(scores, mask, names, may_be_empty, additive, bias)
    if scores.numel() == 0:
        return normalize(scores) @ v, normalize(scores)
    if at_once:  # softmax shifts by the row maximum itself: one check, at the end
        if temperature != 1:
            scores = scores / temperature
    else:
        shift = isinstance(normalizer, str) and normalizer in SHIFT_INVARIANT
        top = _checked_tops(scores, q, k, names)
        scores = _tempered(scores, top, temperature, shift, exact)
    if bias is not None:
        scores = scores + bias.to(dtype=scores.dtype)
    weights = normalize(scores)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)
    if dropout_p:
        weights = torch.nn.functional.dropout(weights, dropout_p)
    out = weights @ v
    target = out if out.numel() else weights
    if additive and not traced(out) and not finite_on_host(target):
        return weights_path(
            q, k, v, score, normalizer, mask, given, bias, dropout_p, names,
            may_be_empty, additive=False,
        )  # fmt: skip
    return _checked_output(out, weights, scores, q, k, v, names), weights


def _check_scores_shape(scores, q, k, names) -> None:
    """A score callable's output must be (..., n_q, n_k)."""
    want = (q.shape[-2], k.shape[-2])
    if not isinstance(scores, torch.Tensor) or tuple(scores.shape[-2:]) != want:
        got = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores)
        raise ValueError(
            f"score(q, k) must return scores of shape (..., n_q, n_k) = (..., "
            f"{want[0]}, {want[1]}) for {names[0]} {tuple(q.shape)} and {names[1]} "
            f"{tuple(k.shape)}, got {got}"
        )


def _masked(scores, mask, names, may_be_empty=True, additive=False, bias=None):
    """Scores with masked keys at ``-inf``, and the rows with no key (or ``None``).

    With ``additive``, the mask is added as 0 / ``-inf``; where there is a ``bias`` (a
    float mask's finite part, added after the temperature), the mask is folded into it
    instead, so that one pass adds both. Returns the scores, the empty rows and the
    bias.
    """
    if mask is None:
        return scores, None, bias
    mask = check_mask(mask, scores.shape, scores.device, names[3], names[0])
    if additive:  # 0 or -inf, added: what a bias costs (see weights_path)
        seen = mask.any(-1, keepdim=True)
        empty = None if seen.all() else ~seen
        keep = mask if empty is None else mask | empty
        if bias is not None:
            return scores, empty, torch.where(keep, bias.to(scores.dtype), -torch.inf)
        add = torch.zeros(keep.shape, dtype=scores.dtype, device=scores.device)
        return scores + add.masked_fill_(~keep, float("-inf")), empty, None
    if may_be_empty:
        # A row whose every key is masked (causal masks with padding make them) gets
        # zero weights and zero output, as SDPA's: its scores stay unmasked (finite, so
        # no NaN and finite gradients) and its weights are zeroed at the end. Both are
        # found on the mask as given (broadcast, not expanded): no pass of the scores'
        # size.
        seen = mask.any(-1, keepdim=True)
        if traced(seen) or seen.device.type != "cpu" or not seen.all():
            empty = ~seen
            return torch.where(mask | empty, scores, float("-inf")), empty, bias
    return torch.where(mask, scores, float("-inf")), None, bias


def _checked_tops(scores, q, k, names):
    """The row maxima, checked: a row of NaN, ``+inf`` or no finite score is refused."""
    # Detached: the shift they serve changes no output (softmax, sparsemax, entmax are
    # shift-invariant), so it needs no gradient.
    top = scores.detach().amax(-1, keepdim=True)
    if traced(top):
        return top
    if top.device.type != "cpu":  # one check on the device: no synchronisation
        check_on_device(
            ~torch.isfinite(top).all(),
            "score(q, k) gave NaN, +inf or only -inf in a row (q and k too large for "
            f"{scores.dtype}, or a score callable's output)",
        )
    elif not finite_on_host(top):
        _refuse_scores(top, q, k, names)
    return top


def _refuse_scores(top, q, k, names):
    """Raise naming what made a row of scores undefined (after a check failed)."""
    for t, name in ((q, names[0]), (k, names[1])):
        if not torch.isfinite(t).all():
            raise ValueError(
                f"{name} contains NaN or infinite values (where the mask lets a query "
                f"see them; shape {tuple(t.shape)})"
            )
    what = (
        "NaN"
        if torch.isnan(top).any()
        else "+inf"
        if torch.isposinf(top).any()
        else "only -inf"
    )
    raise ScoreError(what, top.dtype)


def _checked_output(out, weights, scores, q, k, v, names):
    """``out``, checked once for NaN and infinities; on failure, the culprit named.

    A NaN or infinite value that the mask hides (a padded key or value) does not reach
    the output (pytorch#101967): the output is recomputed without it.
    """
    target = out if out.numel() else weights
    if traced(target):
        return out
    if target.device.type != "cpu":
        check_on_device(
            ~torch.isfinite(target).all(),
            f"{names[0]}, {names[1]} or {names[2]} contains NaN or infinite values, "
            f"or their scores or output overflow {out.dtype}",
        )
        return out
    if finite_on_host(target):
        return out
    _checked_tops(scores, q, k, names)  # raises when the scores are undefined
    bad_keys = ~torch.isfinite(v).all(-1)
    if bad_keys.any():
        if ((weights != 0) & bad_keys.unsqueeze(-2)).any():
            raise ValueError(
                f"{names[2]} contains NaN or infinite values at a key that a query "
                f"attends (shape {tuple(v.shape)})"
            )
        return weights @ v.masked_fill(bad_keys.unsqueeze(-1), 0.0)
    raise ValueError(
        f"the weights times {names[2]} overflow {out.dtype}: {names[2]} is too large "
        f"(shape {tuple(v.shape)}); rescale it or pass a wider dtype"
    )


def _tempered(scores, top, temperature, shift, exact):
    """Scores divided by the temperature, without overflow where ``shift`` allows."""
    # A temperature that the scores' dtype rounds to 0 or inf is applied in float64, so
    # that 0 / 0 and -inf / inf (masked keys) do not become NaN.
    if shift and not (exact and temperature >= 1):
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
