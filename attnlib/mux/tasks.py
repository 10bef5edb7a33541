"""The tasks of chapter 08: routing, the weekday multiplexer, shifted sequences.

Tokens are rows: sequences are ``(batch, length, features)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from ..utils import (
    as_tensor,
    check_int,
)
from ..utils.boundary import checking, public
from ..utils.validation import SEED_MAX

__all__ = [
    "FRIENDS",
    "WEEKDAYS",
    "RoutingTask",
    "WeekdayTask",
    "conv_matrix",
    "routing_task",
    "shift_tokens",
    "translation_sequences",
    "weekday_task",
]

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
FRIENDS = ("Ada", "Ben", "Cleo", "Dev", "Eve", "Finn", "Gus")


# --------------------------------------------------------------------------- tasks


class RoutingTask(NamedTuple):
    """Sequences where every position must output the value at one marked position.

    ``x[b, i]`` is the one-hot value of token i followed by a marker bit; ``marker[b]``
    is the marked position and ``target[b]`` its value, the answer at every position.
    """

    x: torch.Tensor  # (n, length, n_values + 1)
    target: torch.Tensor  # (n,)
    marker: torch.Tensor  # (n,)


@public
def routing_task(
    n: int, length: int = 32, n_values: int = 8, *, seed: int = 0
) -> RoutingTask:
    """Draw ``n`` routing sequences: random values, one marked position anywhere.

    Parameters
    ----------
    n : int
        Number of sequences.
    length : int
        Tokens per sequence.
    n_values : int
        Size of the value vocabulary (chance accuracy is ``1 / n_values``).
    seed : int
        The same seed gives the same task.

    Returns
    -------
    RoutingTask
        ``x`` of shape ``(n, length, n_values + 1)``, ``target`` and ``marker`` of shape
        ``(n,)``.

    Implements
    ----------
    The "important piece of data that every part of the output should care about" of the
    attention note, as a supervised task.
    """
    if checking():
        n, length = check_int(n, "n"), check_int(length, "length", minimum=2)
        n_values = check_int(n_values, "n_values", minimum=2)
        seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    g = torch.Generator().manual_seed(seed)
    values = torch.randint(n_values, (n, length), generator=g)
    marker = torch.randint(length, (n,), generator=g)
    x = torch.cat(
        [F.one_hot(values, n_values), F.one_hot(marker, length).unsqueeze(-1)], -1
    )
    target = values.gather(1, marker[:, None]).squeeze(1)
    return RoutingTask(x.to(torch.get_default_dtype()), target, marker)


class WeekdayTask(NamedTuple):
    """Seven friends with a favourite restaurant each; the day says whose choice counts.

    ``friends[b, i]`` is the one-hot identity of the friend in slot i (slots are
    shuffled) followed by the one-hot restaurant they prefer; ``day[b]`` is the one-hot
    weekday (the control signal); ``target[b]`` is the restaurant of the friend whose
    day it is, given by ``rota[day]``.
    """

    friends: torch.Tensor  # (n, n_friends, n_friends + n_restaurants)
    day: torch.Tensor  # (n, n_friends)
    target: torch.Tensor  # (n,)
    rota: torch.Tensor  # (n_friends,): rota[d] is the friend who decides on day d


@public
def weekday_task(
    n: int, n_friends: int = 7, n_restaurants: int = 5, *, seed: int = 0, rota=None
) -> WeekdayTask:
    """Draw ``n`` days of the friends' multiplexer.

    Parameters
    ----------
    n : int
        Number of examples.
    n_friends : int
        Friends, and days in the week (each day one friend decides).
    n_restaurants : int
        Restaurants to choose from.
    seed : int
        Seeds preferences, slot order, days, and the default rota.
    rota : sequence of int, optional
        ``rota[d]`` is the friend who decides on day d, any map from days to friends
        (two days may share a decider, and then some friend never decides). Default: a
        permutation drawn from ``seed``; pass the rota explicitly to share it between
        sets drawn with different seeds.

    Returns
    -------
    WeekdayTask

    Implements
    ----------
    The multiplexer example of the attention note: one friend of seven
    decides where to eat, according to the weekday.
    """
    if checking():
        n = check_int(n, "n")
        n_friends, n_restaurants = (
            check_int(n_friends, "n_friends", minimum=2),
            check_int(n_restaurants, "n_restaurants", minimum=2),
        )
        seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    g = torch.Generator().manual_seed(seed)
    if rota is None:
        rota = torch.randperm(n_friends, generator=torch.Generator().manual_seed(seed))
    elif checking():
        rota = _checked_rota(rota, n_friends)
    prefs = torch.randint(n_restaurants, (n, n_friends), generator=g)
    # slots[b, i]: friend in slot i
    slots = torch.argsort(torch.rand(n, n_friends, generator=g), dim=1)
    day = torch.randint(n_friends, (n,), generator=g)
    dtype = torch.get_default_dtype()
    friends = torch.cat(
        [F.one_hot(slots, n_friends), F.one_hot(prefs.gather(1, slots), n_restaurants)],
        -1,
    ).to(dtype)
    target = prefs.gather(1, rota[day][:, None]).squeeze(1)
    return WeekdayTask(friends, F.one_hot(day, n_friends).to(dtype), target, rota)


def _checked_rota(rota, n_friends: int) -> torch.Tensor:
    """``rota`` as ``n_friends`` integer friend indices, a long tensor."""
    try:
        rota = torch.as_tensor(rota)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"rota must be a sequence of friend indices, got {rota!r}"
        ) from err
    if rota.is_floating_point() or rota.is_complex() or rota.dtype == torch.bool:
        raise ValueError(f"rota must hold integer friend indices, got {rota.dtype}")
    rota = rota.long()
    if rota.shape != (n_friends,) or rota.min() < 0 or rota.max() >= n_friends:
        raise ValueError(
            f"rota must hold {n_friends} friends from range({n_friends}), got "
            f"{rota.tolist()}"
        )
    return rota


def translation_sequences(
    n: int, length: int = 32, dim: int = 4, *, margin: int = 8, seed: int = 0
) -> torch.Tensor:
    """Random sequences that are zero on their first and last ``margin`` tokens.

    With zero margins, shifting by fewer than ``margin`` tokens loses nothing, so a
    zero-padded convolution commutes with the shift exactly (see :func:`shift_tokens`).

    Parameters
    ----------
    n : int
        Number of sequences.
    length : int
        Tokens per sequence, more than ``2 * margin``.
    dim : int
        Features per token.
    margin : int
        Zero tokens at each end.
    seed : int
        The same seed gives the same sequences.

    Returns
    -------
    torch.Tensor, shape (n, length, dim)
        Standard normal tokens between the zero margins.

    Implements
    ----------
    No equation: test inputs of chapter 08's equivariance checks.
    """
    n, length, dim = (
        check_int(n, "n"),
        check_int(length, "length"),
        check_int(dim, "dim"),
    )
    margin = check_int(margin, "margin", minimum=0)
    if 2 * margin >= length:
        raise ValueError(
            f"margin must be less than length / 2 = {length / 2}, got {margin}"
        )
    g = torch.Generator().manual_seed(
        check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )
    x = torch.randn(n, length, dim, generator=g)
    x[:, :margin] = 0
    x[:, length - margin :] = 0
    return x


def shift_tokens(x, shift: int) -> torch.Tensor:
    """Move every token ``shift`` places right (left if negative), filling with zeros.

    Parameters
    ----------
    x : tensor or array-like, shape (..., length, features)
        Sequences, one token per row.
    shift : int
        Places to move, smaller than ``length`` in absolute value.

    Returns
    -------
    torch.Tensor, shape of ``x``
        The shifted sequences.

    Implements
    ----------
    The translations of the attention note, which a convolution commutes with
    (translation equivariance).
    """
    x = as_tensor(x, "x", min_ndim=2)
    if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)):
        raise ValueError(f"shift must be an integer, got {shift!r}")
    shift = int(shift)
    if abs(shift) >= x.shape[-2]:
        raise ValueError(
            f"shift must be smaller than the length {x.shape[-2]} in absolute value, "
            f"got {shift}"
        )
    out = torch.zeros_like(x)
    if shift >= 0:
        out[..., shift:, :] = x[..., : x.shape[-2] - shift, :]
    else:
        out[..., :shift, :] = x[..., -shift:, :]
    return out


def conv_matrix(kernel, length: int) -> torch.Tensor:
    """The ``(length, length)`` matrix of a zero-padded 1-D convolution.

    The ``kernel`` has odd length.

    Row j is the kernel, as a row vector, placed around position j: ``y = M @ x`` equals
    ``torch.nn.functional.conv1d`` (a cross-correlation) with
    ``padding=len(kernel) // 2``.

    Parameters
    ----------
    kernel : tensor or array-like, shape (2n + 1,)
        The convolution's weights, of odd length.
    length : int
        Tokens per sequence.

    Returns
    -------
    torch.Tensor, shape (length, length)
        The banded matrix ``M``, indexed ``[output, input]``.

    Implements
    ----------
    The note's picture of a convolution as a ``1 × (2n+1)`` row vector shared by every
    output (the attention note): a banded Toeplitz matrix.
    """
    kernel = as_tensor(kernel, "kernel", ndim=1)
    length = check_int(length, "length")
    if kernel.numel() % 2 == 0:
        raise ValueError(f"kernel must have an odd length, got {kernel.numel()}")
    half = kernel.numel() // 2
    # key - query
    offsets = (
        torch.arange(length, device=kernel.device)[None, :]
        - torch.arange(length, device=kernel.device)[:, None]
    )
    inside = offsets.abs() <= half
    return torch.where(
        inside,
        kernel[(offsets + half).clamp(0, 2 * half)],
        torch.zeros((), dtype=kernel.dtype),
    )
