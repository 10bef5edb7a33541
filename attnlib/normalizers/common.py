"""What the normalizers share: checked scores, their row maxima, a dimension moved last.

Each helper runs once per call: ``_check_scores`` at the public boundary,
``_along_last`` around the computation, ``_row_max`` inside it, where the one reduction
also rejects NaN, ``+inf`` and rows whose every key is masked.
"""

from __future__ import annotations

import math
import numbers

import torch

from ..utils import as_tensor, check_on_device

# Helpers of the package's modules: nothing here is public.
__all__: list[str] = []


def _check_scores(x, dim: int, name: str = "x") -> tuple[torch.Tensor, int]:
    """A floating tensor of scores and ``dim`` made non-negative; ``-inf`` allowed.

    ``-inf`` marks a masked entry. An empty batch (a zero-size dimension other than
    ``dim``) passes, as in ``torch.softmax``; an empty ``dim`` does not, as no
    distribution lives on an empty set.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        x = as_tensor(x, name, min_ndim=0, allow_inf=True, allow_empty=True)
    if x.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension, got a scalar")
    if (
        isinstance(dim, bool)
        or not isinstance(dim, numbers.Integral)
        or not -x.ndim <= dim < x.ndim
    ):
        raise ValueError(
            f"dim must be an integer in [{-x.ndim}, {x.ndim - 1}], got {dim!r}"
        )
    if x.shape[dim] == 0:
        raise ValueError(
            f"{name} must have at least one entry along dim {dim}, got shape "
            f"{tuple(x.shape)}"
        )
    return x, int(dim) % x.ndim


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    # Half precision has too few bits for the threshold search: work in float32.
    return x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32


def _row_max(z: torch.Tensor, name: str = "x") -> torch.Tensor:
    # max propagates NaN and shows +inf and all-masked rows: one reduction checks them.
    m = z.amax(-1, keepdim=True)
    if m.device.type != "cpu":  # checked on the device: no synchronisation
        check_on_device(
            ~torch.isfinite(m).all(),
            f"{name} contains NaN or +inf values, or a row that is entirely -inf "
            "(every key masked)",
        )
    elif not torch.isfinite(m).all():
        if torch.isnan(m).any():
            raise ValueError(f"{name} contains NaN values")
        if torch.isposinf(m).any():
            raise ValueError(f"{name} contains +inf values")
        raise ValueError(f"{name} has a row that is entirely -inf (every key masked)")
    return m


def _live_rows(x: torch.Tensor, name: str = "x"):
    """``x`` with its rows that are entirely ``-inf`` set to 0, those rows, and the
    row maxima (0 on those rows).

    A row with every key masked is an input of the maps, not an error: they give it
    zero weights and a zero gradient, as :func:`attnlib.functional.attention` does. The
    one reduction also refuses NaN and ``+inf`` (on an accelerator asserted on the
    device, without synchronisation). On the CPU the rows come back as None where
    there are none, so that the common case costs no copy.
    """
    m = x.amax(-1, keepdim=True)  # max propagates NaN
    dead = torch.isneginf(m)
    if m.device.type != "cpu":
        check_on_device(
            (torch.isnan(m) | torch.isposinf(m)).any(),
            f"{name} contains NaN or +inf values",
        )
        return x.masked_fill(dead, 0), dead, m.masked_fill(dead, 0)
    if torch.isnan(m).any():
        raise ValueError(f"{name} contains NaN values")
    if torch.isposinf(m).any():
        raise ValueError(f"{name} contains +inf values")
    if not dead.any():
        return x, None, m
    return x.masked_fill(dead, 0), dead, m.masked_fill(dead, 0)


def _along_last(fn, x: torch.Tensor, dim: int, *args):
    """Apply ``fn`` (which works on the last dimension) along ``dim``."""
    if dim == x.ndim - 1:
        return fn(x, *args)
    moved = [a.movedim(dim, -1) if isinstance(a, torch.Tensor) else a for a in args]
    # Contiguous rows keep the reductions along the last dimension fast.
    return fn(x.movedim(dim, -1).contiguous(), *moved).movedim(-1, dim)


def _check_index(value, name: str) -> float:
    """A finite Tsallis index ≥ 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not -math.inf < value < math.inf  # (math.isfinite refuses a traced float)
        or value < 1
    ):
        raise ValueError(f"{name} must be a finite number ≥ 1, got {value!r}")
    return float(value)


def _check_k(k):
    """The ``entmax`` package's partial-sort size: None or a positive integer."""
    if k is not None and (
        isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1
    ):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    return k


def _aligned(t: torch.Tensor, x: torch.Tensor, dim: int, name: str):
    """The tensor ``t`` (one value per slice of ``x`` along ``dim``) floating, on x's
    device, with x's number of dimensions and size 1 along ``dim``."""
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    if t.ndim > x.ndim or (t.ndim == x.ndim and t.shape[dim] != 1):
        raise ValueError(
            f"{name} must be a number or a tensor broadcastable to x with size 1 "
            f"along dim, got shape {tuple(t.shape)}"
        )
    t = t.to(x.device)
    if t.ndim < x.ndim:  # align with x so that it can be moved with dim
        t = t.reshape((1,) * (x.ndim - t.ndim) + tuple(t.shape))
    if t.shape[dim] != 1:
        raise ValueError(
            f"{name} must have size 1 along dim, got shape {tuple(t.shape)}"
        )
    return t
