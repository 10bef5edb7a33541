"""The weights path: attention that forms its weights (any score, any normalizer).

``weights = normalizer(score(q, k) / temperature + bias)`` with masked keys at
``-inf``, then ``output = weights @ v``. A valid call pays one check on the output (or
on the row maxima, where the normalizer needs them); what was wrong is found only
after a check fails, so that the good path costs what the hand-written expression
costs. :func:`softmax_path` is that expression itself, for softmax on the CPU: masks
and the causal triangle enter as one additive bias, and a failed check sends the call
to :func:`weights_path`, which finds why.
"""

from __future__ import annotations

import torch

from ..errors import ScoreError
from ..normalizers import SHIFT_INVARIANT
from ..utils import check_on_device
from ..utils.validation import finite_on_host, traced
from .scores import (
    FUSED_SCORES,
    default_temperature,
    resolve_normalizer,
    resolve_score,
)

__all__ = ["weights_path", "softmax_path", "additive", "causal_mask", "exact"]

_CAUSAL: dict = {}


def causal_mask(n_q: int, n_k: int, device, dtype=torch.bool) -> torch.Tensor:
    """SDPA's causal mask, aligned at the top left: query ``i`` sees keys ``0 … i``.

    Bool (True = may attend), or in a floating ``dtype`` the additive mask of 0 and
    ``-inf``. Kept per shape, device and dtype for eager calls (building it costs more
    than a tiny attention), built afresh where a graph is traced.
    """
    if torch.compiler.is_compiling():
        return _triangle(n_q, n_k, device, dtype)
    key = (n_q, n_k, device, dtype)
    mask = _CAUSAL.get(key)
    if mask is None:
        if len(_CAUSAL) > 64:
            _CAUSAL.clear()
        mask = _CAUSAL[key] = _triangle(n_q, n_k, device, dtype)
    return mask


def _triangle(n_q: int, n_k: int, device, dtype) -> torch.Tensor:
    tri = torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril()
    return tri if dtype == torch.bool else _zero_or_minus_inf(tri, dtype)


def _zero_or_minus_inf(mask: torch.Tensor, dtype) -> torch.Tensor:
    """A bool mask as the additive one: 0 where True, ``-inf`` where False."""
    key = (dtype, mask.device)
    ends = _ENDS.get(key)
    if ends is None or torch.compiler.is_compiling():
        ends = tuple(
            torch.full((), x, dtype=dtype, device=mask.device)
            for x in (0.0, -torch.inf)
        )
        if not torch.compiler.is_compiling():
            _ENDS[key] = ends
    return torch.where(mask, *ends)


_ENDS: dict = {}  # (dtype, device) -> 0 and -inf as 0-dim tensors: where's fast path


def exact(temperature: float, dtype: torch.dtype) -> bool:
    """Whether ``dtype`` holds ``temperature`` as a nonzero finite number."""
    low, high = _RANGE.get(dtype) or _RANGE.setdefault(dtype, _range(dtype))
    return low < temperature <= high


def _range(dtype: torch.dtype) -> tuple[float, float]:
    """Half the smallest subnormal of ``dtype`` and its largest number."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps / 2, info.max


_RANGE: dict = {}  # dtype -> _range(dtype): torch.finfo costs a microsecond per call


def additive(mask, bias, causal: bool, shape, dtype, device):
    """The bool mask, the float mask ``bias`` and the causal triangle as one additive
    mask of the scores' ``dtype`` (0 or ``-inf``, plus the bias), or None.

    Checked arguments: ``mask`` bool and ``bias`` floating, both broadcastable to the
    scores' ``shape``; the bias's values are not read (a NaN or ``+inf`` in it shows
    in the output, whose check sends the call to :func:`weights_path`).
    """
    if causal:
        if mask is None:
            tri = causal_mask(shape[-2], shape[-1], device, dtype)
            return tri if bias is None else bias.to(dtype) + tri
        mask = mask & causal_mask(shape[-2], shape[-1], device)
    if mask is None:
        return None if bias is None else bias.to(dtype)
    add = _zero_or_minus_inf(mask, dtype)
    return add if bias is None else add + bias.to(dtype)


def softmax_path(q, k, v, add, temperature: float, shape):
    """Softmax attention as the hand-written expression, checked once on its output.

    ``softmax(q kᵀ / temperature + add) @ v`` for checked tensors on the CPU, a
    ``temperature`` of at least 1 (so that nothing overflows that ``q kᵀ`` does not)
    and ``add`` from :func:`additive` (or None); ``shape`` is the scores' full shape.
    Returns the output and the weights, or None where the output is not finite: a NaN
    or infinity that reaches it, a NaN that a mask should hide, a query with no key
    (``-inf`` everywhere); :func:`weights_path` then computes or refuses, naming why.
    """
    scores = q @ k.mT  # a fresh product: scaled and masked in place
    if temperature != 1:
        scores = scores.div_(temperature)
    if add is not None:
        scores = scores.add_(add) if scores.shape == shape else scores + add
    weights = torch.softmax(scores, -1)
    out = weights @ v
    return (out, weights) if finite_on_host(out if out.numel() else weights) else None


def weights_path(
    q, k, v, score, normalizer, mask, temperature, bias, dropout_p, names,
    may_be_empty=True,
):  # fmt: skip
    """The output and the weights, for ``attention`` (checked arguments).

    ``mask`` is bool and ``bias`` finite (a float mask split). ``names`` are the
    caller's names of q, k, v and the mask, for messages; ``may_be_empty`` is False
    where the mask leaves every query a key (the causal triangle alone), which spares
    a reduction.
    """
    score_fn, normalize = resolve_score(score), resolve_normalizer(normalizer)
    temperature = default_temperature(temperature, score, q.shape[-1])
    held = exact(temperature, q.dtype)
    if q.dtype == torch.float16 and score in FUSED_SCORES and held and temperature > 1:
        # SDPA's order in float16: q·k may overflow where q·k / t does not, so q and k
        # are scaled first, by sqrt(1/t) each.
        root = temperature**-0.5
        scores, temperature = score_fn(q * root, k * root), 1.0
    else:
        scores = score_fn(q, k)
    if callable(score):
        _check_scores_shape(scores, q, k, names)
    at_once = normalizer == "softmax" and held and temperature >= 1
    scores, empty = _masked(scores, mask, may_be_empty)
    if scores.numel() == 0:
        return normalize(scores) @ v, normalize(scores)
    if at_once:  # softmax shifts by the row maximum itself: one check, at the end
        if temperature != 1:
            scores = scores / temperature
    else:
        shift = isinstance(normalizer, str) and normalizer in SHIFT_INVARIANT
        top = _checked_tops(scores, q, k, names)
        scores = _tempered(scores, top, temperature, shift, held)
    if bias is not None:
        scores = scores + bias.to(dtype=scores.dtype)
    weights = normalize(scores)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)
    if dropout_p:
        weights = torch.nn.functional.dropout(weights, dropout_p)
    out = weights @ v
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


def _masked(scores, mask, may_be_empty=True):
    """Scores with masked keys at ``-inf`` (``mask`` checked), and the rows with no
    key (or ``None``)."""
    if mask is None:
        return scores, None
    if may_be_empty:
        # A row whose every key is masked (causal masks with padding make them) gets
        # zero weights and zero output, as SDPA's: its scores stay unmasked (finite, so
        # no NaN and finite gradients) and its weights are zeroed at the end. Both are
        # found on the mask as given (broadcast, not expanded): no pass of the scores'
        # size.
        seen = mask.any(-1, keepdim=True)
        if traced(seen) or seen.device.type != "cpu" or not seen.all():
            empty = ~seen
            return torch.where(mask | empty, scores, float("-inf")), empty
    return torch.where(mask, scores, float("-inf")), None


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


def _tempered(scores, top, temperature, shift, held):
    """Scores divided by the temperature, without overflow where ``shift`` allows."""
    # A temperature that the scores' dtype rounds to 0 or inf is applied in float64, so
    # that 0 / 0 and -inf / inf (masked keys) do not become NaN.
    if shift and not (held and temperature >= 1):
        # A temperature below 1 could overflow the scores to +inf; their gaps to the row
        # maximum are finite, and can overflow only to -inf (weight 0). (At 1 or above
        # nothing overflows, and the normalizer shifts by the row maximum itself.)
        scores = scores - top
        return (
            scores.div_(temperature)
            if held
            else (scores.double() / temperature).to(scores.dtype)
        )
    divided = (
        scores / temperature
        if held
        else (scores.double() / temperature).to(scores.dtype)
    )
    if temperature < 1:
        check_on_device(
            (torch.isinf(divided) & torch.isfinite(scores)).any(),
            f"temperature={temperature!r} makes the scores overflow {scores.dtype}",
        )
    return divided
