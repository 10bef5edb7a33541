"""The arguments of attention, checked once: tensors, masks, SDPA's options.

Each check reads shapes, dtypes and devices (no pass over the data), and each refusal
names the caller's argument and the caller's shapes.
"""

from __future__ import annotations

import math
import sys

import torch

from ..errors import AttentionInputError
from ..utils import as_tensor, check_on_device, check_positive

__all__ = [
    "check_flag",
    "check_mask",
    "check_shapes",
    "checked_tensors",
    "sdpa_arguments",
    "split_additive",
    "repeat_heads",
]


def check_flag(value, name: str) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def _tensor(x, name: str, ref: torch.Tensor | None, of: str = "q") -> torch.Tensor:
    """``x`` as a floating tensor; tensors are refused, not cast or moved, when their
    dtype or device differs from ``ref``'s (SDPA's rule, with the fix named)."""
    if not isinstance(x, torch.Tensor):  # array-likes are built where ref lives
        return as_tensor(
            x, name, min_ndim=2, allow_empty=True,
            dtype=None if ref is None else ref.dtype,
            device=None if ref is None else ref.device,
        )  # fmt: skip
    if not x.is_floating_point():
        as_tensor(x, name, min_ndim=0, allow_empty=True, finite=False)  # bool, complex
        raise AttentionInputError(
            f"{name} must be a floating tensor, got dtype {x.dtype}: pass "
            f"{name}.float() (attention is not defined on integers)"
        )
    if ref is not None and x.dtype != ref.dtype:
        raise AttentionInputError(
            f"{name} has dtype {x.dtype} but {of} has {ref.dtype}: pass tensors "
            f"of one dtype (e.g. {name}.to({of}.dtype)); nothing is promoted"
        )
    if ref is not None and x.device != ref.device:
        raise AttentionInputError(
            f"{name} is on {x.device} but {of} is on {ref.device}: move them to "
            f"one device (e.g. {name}.to({of}.device)); nothing is moved for you"
        )
    # A floating tensor of one dtype and device: only its number of dimensions is left
    # to check (the shared check words the error); its values are checked once, on the
    # result.
    if x.ndim < 2:
        as_tensor(x, name, min_ndim=2, allow_empty=True, finite=False)
    return x


def checked_tensors(q, k, v, names=("q", "k", "v")):
    """``q``, ``k``, ``v`` as floating tensors of one dtype and device.

    Tensors keep theirs (another dtype or device is refused, never converted);
    array-likes take the dtype of ``q`` (``torch.get_default_dtype()`` for an array-like
    ``q``) and its device. No value is read here.
    """
    if (  # the common case, at the cost of a few comparisons
        isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor)
        and isinstance(v, torch.Tensor) and q.is_floating_point()
        and q.dtype == k.dtype == v.dtype and q.device == k.device == v.device
        and q.ndim >= 2 and k.ndim >= 2 and v.ndim >= 2
    ):  # fmt: skip
        return q, k, v
    q = _tensor(q, names[0], None)
    return q, _tensor(k, names[1], q, names[0]), _tensor(v, names[2], q, names[0])


def check_finite(t: torch.Tensor, name: str) -> None:
    """One pass over ``t``: refuse NaN or infinite values, naming ``name``."""
    check_on_device(~torch.isfinite(t).all(), f"{name} contains NaN or infinite values")


def _broadcasts(shape, target) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (tuples or torch.Size)."""
    shape, target = tuple(shape), tuple(target)
    if target[len(target) - len(shape) :] == shape:
        return True  # the common case: the trailing dimensions, equal
    return len(shape) <= len(target) and all(
        a == b or a == 1 for a, b in zip(reversed(shape), reversed(target))
    )


def check_mask(
    mask, shape, device, name: str = "mask", of: str = "q", floating: bool = False
) -> torch.Tensor:
    """``mask`` as a bool tensor on ``device`` that broadcasts to the scores' ``shape``.

    A tensor on another device is refused; an array-like is built on ``device``. With
    ``floating``, a float mask passes too (its values are not read).
    """
    if not isinstance(mask, torch.Tensor):
        mask = _mask_from(mask, name, device)
    elif mask.device != device:
        raise AttentionInputError(
            f"{name} is on {mask.device} but {of} is on {device}: move it "
            f"({name}.to({of}.device)); nothing is moved for you"
        )
    if mask.dtype != torch.bool and not (floating and mask.is_floating_point()):
        raise ValueError(
            f"{name} must be boolean (True = may attend) or floating (added to the "
            f"scores), got dtype {mask.dtype}"
        )
    if not _broadcasts(mask.shape, shape):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the scores' "
            f"shape (..., n_q, n_k) = {tuple(shape)}"
        )
    return mask


def _mask_from(mask, name: str, device) -> torch.Tensor:
    """An array-like mask as a tensor on ``device``, or a ValueError naming it (torch's
    own constructor names nothing for a string)."""
    try:
        return torch.as_tensor(mask, device=device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"{name} must be a boolean or floating tensor (or an array-like of them), "
            f"got a {type(mask).__name__} that is not numeric: {mask!r:.60}"
        ) from err


def check_shapes(q, k, v, score, names=("q", "k", "v")) -> tuple[tuple, bool]:
    """The scores' shape ``(*batch, n_q, n_k)`` and whether q, k, v have one batch
    shape (none to broadcast), or a ValueError naming the arguments and shapes."""
    qs, ks, vs = q.shape, k.shape, v.shape
    batch = qs[:-2]
    if (  # the common case, at the cost of a few comparisons
        ks[-2] and qs[-1] and ks[-1] and ks[-2] == vs[-2]
        and (qs[-1] == ks[-1] or callable(score))
        and batch == ks[:-2] == vs[:-2]
    ):  # fmt: skip
        return (*batch, qs[-2], ks[-2]), True
    return (*_batch(q, k, v, score, names), qs[-2], ks[-2]), False


def _batch(q, k, v, score, names) -> tuple:
    """The broadcast batch shape of q, k, v, or a ValueError naming the arguments."""
    nq, nk, nv = names[:3]

    def shapes():  # formatted only for a message
        return f"{nq} {tuple(q.shape)}, {nk} {tuple(k.shape)}, {nv} {tuple(v.shape)}"

    if k.shape[-2] == 0 or q.shape[-1] == 0 or k.shape[-1] == 0:
        raise ValueError(
            f"{nk} must hold at least one key and {nq}, {nk} at least one feature, "
            f"got {shapes()}"
        )
    if not callable(score) and q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{nq} and {nk} must have the same feature size (last dimension), got "
            f"{shapes()}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{nk} and {nv} must have the same number of tokens (dimension -2), got "
            f"{shapes()}"
        )
    qb, kb, vb = tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2])
    if qb == kb == vb:
        return qb
    n = max(len(qb), len(kb), len(vb))
    batch = []
    for dims in zip(*((1,) * (n - len(b)) + b for b in (qb, kb, vb))):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(
                f"{nq}, {nk} and {nv} must have broadcastable batch dimensions "
                f"(all but the last two), got {shapes()}"
            )
        batch.append(sizes.pop() if sizes else 1)
    return tuple(batch)


def repeat_heads(q, k, v, names=("query", "key", "value")):
    """``k`` and ``v`` with their heads (dimension -3) repeated to ``q``'s, as SDPA's
    ``enable_gqa=True``; refused when the head counts do not divide."""
    if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
        raise ValueError(
            f"enable_gqa=True needs heads at dimension -3 of {', '.join(names)}, got "
            f"shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
    if hk != hv or hq % hk:
        raise AttentionInputError(
            f"enable_gqa=True needs {names[1]} and {names[2]} to have one number of "
            f"heads (dimension -3) that divides {names[0]}'s, got {hq}, {hk} and {hv} "
            f"heads (shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)})"
        )
    if hq == hk:
        return k, v
    return k.repeat_interleave(hq // hk, -3), v.repeat_interleave(hq // hk, -3)


def sdpa_arguments(mask, attn_mask, is_causal, dropout_p, temperature, scale):
    """SDPA's arguments in attnlib's terms, checked: a bool mask, a float mask (the
    additive bias, its values not read), the temperature (``1 / scale``), dropout_p,
    and the mask's name."""
    name = "mask"
    if attn_mask is not None:
        if mask is not None:
            raise ValueError("give mask or attn_mask (the same argument), not both")
        mask, name = attn_mask, "attn_mask"
    check_flag(is_causal, "is_causal")
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
    if isinstance(mask, torch.Tensor) and mask.is_floating_point():
        return None, mask, temperature, float(dropout_p), name
    return mask, None, temperature, float(dropout_p), name


def split_additive(mask: torch.Tensor, name: str = "mask"):
    """A float mask (SDPA's, added to the scores) as the bool mask of the keys it keeps
    and their finite bias."""
    check_on_device(
        (torch.isnan(mask) | torch.isposinf(mask)).any(),
        f"{name}: a float mask (additive) must not hold NaN or +inf",
    )
    keep = ~torch.isneginf(mask)
    return keep, mask.masked_fill(~keep, 0.0)
