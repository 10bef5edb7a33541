"""Attention as a differentiable multiplexer, and why convolutions cannot route.

A convolution applies the same small kernel everywhere: it is translation-equivariant
and local, so an output can only read inputs inside its receptive field. A multiplexer
reads *one* input chosen by a control signal, wherever that input sits. Replacing the
hard choice (argmax) by a softmax makes the choice differentiable, and scoring every
input by a bilinear form ``x_iᵀ KᵀQ C_j`` gives attention; ``C_j = x_j`` gives
self-attention.

This module holds the tasks (routing, the weekday multiplexer, sequences for
equivariance checks), the multiplexers themselves, and the small models the chapter
trains. Tokens are rows: sequences are ``(batch, length, features)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .attention import AttentionResult, attention
from .utils import (
    _module_input,
    _names_input,
    as_tensor,
    check_int,
    check_positive,
)

__all__ = [
    "RoutingTask",
    "routing_task",
    "WeekdayTask",
    "weekday_task",
    "translation_sequences",
    "shift_tokens",
    "conv_matrix",
    "hard_mux",
    "soft_mux",
    "hardmax",
    "straight_through_hardmax",
    "ConvRouter",
    "AttentionRouter",
    "WeekdayMux",
    "routing_loss",
    "accuracy_by_distance",
    "NORMALIZERS",
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
    attention note (seed 004), as a supervised task.
    """
    n, length = check_int(n, "n"), check_int(length, "length", minimum=2)
    n_values = check_int(n_values, "n_values", minimum=2)
    g = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))
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
    The multiplexer example of the attention note (seed 004): one friend of seven
    decides where to eat, according to the weekday.
    """
    n = check_int(n, "n")
    n_friends, n_restaurants = (
        check_int(n_friends, "n_friends", minimum=2),
        check_int(n_restaurants, "n_restaurants", minimum=2),
    )
    seed = check_int(seed, "seed", minimum=0)
    g = torch.Generator().manual_seed(seed)
    if rota is None:
        rota = torch.randperm(n_friends, generator=torch.Generator().manual_seed(seed))
    try:
        rota = torch.as_tensor(rota, dtype=torch.long)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"rota must be a sequence of friend indices, got {rota!r}"
        ) from err
    if rota.shape != (n_friends,) or rota.min() < 0 or rota.max() >= n_friends:
        raise ValueError(
            f"rota must hold {n_friends} friends from range({n_friends}), got "
            f"{rota.tolist()}"
        )
    prefs = torch.randint(n_restaurants, (n, n_friends), generator=g)
    slots = torch.argsort(
        torch.rand(n, n_friends, generator=g), dim=1
    )  # slots[b, i]: friend in slot i
    day = torch.randint(n_friends, (n,), generator=g)
    dtype = torch.get_default_dtype()
    friends = torch.cat(
        [F.one_hot(slots, n_friends), F.one_hot(prefs.gather(1, slots), n_restaurants)],
        -1,
    ).to(dtype)
    target = prefs.gather(1, rota[day][:, None]).squeeze(1)
    return WeekdayTask(friends, F.one_hot(day, n_friends).to(dtype), target, rota)


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
    g = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))
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
    The translations of the attention note (seed 004), which a convolution commutes with
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
    output (seed 004): a banded Toeplitz matrix.
    """
    kernel = as_tensor(kernel, "kernel", ndim=1)
    length = check_int(length, "length")
    if kernel.numel() % 2 == 0:
        raise ValueError(f"kernel must have an odd length, got {kernel.numel()}")
    half = kernel.numel() // 2
    offsets = (
        torch.arange(length)[None, :] - torch.arange(length)[:, None]
    )  # key - query
    inside = offsets.abs() <= half
    return torch.where(
        inside,
        kernel[(offsets + half).clamp(0, 2 * half)],
        torch.zeros((), dtype=kernel.dtype),
    )


# ------------------------------------------------------------------------- multiplexers


def hard_mux(inputs, control) -> torch.Tensor:
    """A literal multiplexer: output ``inputs[..., control[...], :]``.

    Parameters
    ----------
    inputs : tensor, shape (..., n, d)
        The signals ``h_i``, one per row.
    control : int tensor, shape (...)
        Which input each multiplexer passes through.

    Returns
    -------
    torch.Tensor, shape (..., d)
        The selected rows.

    Implements
    ----------
    The multiplexer of the attention note (seed 004): a control signal lets exactly one
    of the inputs through.
    """
    inputs = as_tensor(inputs, "inputs", min_ndim=2)
    try:
        control = torch.as_tensor(control, device=inputs.device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"control must be integer indices, got {type(control).__name__}"
        ) from err
    if control.is_floating_point() or control.dtype == torch.bool:
        raise ValueError(
            f"control must hold integer indices, got dtype {control.dtype}"
        )
    if control.shape != inputs.shape[:-2]:
        raise ValueError(
            f"control must have shape {tuple(inputs.shape[:-2])}, got "
            f"{tuple(control.shape)}"
        )
    if control.numel() and (control.min() < 0 or control.max() >= inputs.shape[-2]):
        raise ValueError(
            f"control must lie in [0, {inputs.shape[-2]}), got values outside"
        )
    index = control[..., None, None].expand(*control.shape, 1, inputs.shape[-1])
    return inputs.gather(-2, index).squeeze(-2)


def hardmax(scores: torch.Tensor) -> torch.Tensor:
    """One-hot weights at each row's largest score (first on ties); no gradient flows.

    Parameters
    ----------
    scores : tensor or array-like, shape (..., n)
        Scores; ``-inf`` marks a masked key, never chosen. A row with every key masked,
        or a ``+inf`` score, raises ``ValueError``.

    Returns
    -------
    torch.Tensor, shape of ``scores``
        One-hot rows in ``scores``' dtype.

    Implements
    ----------
    The argmax that the attention note replaces by a softmax (seed 004):
    ``⟨argmax(a), h⟩`` picks the most important input.
    """
    scores = _check_scores(scores)
    return F.one_hot(scores.argmax(-1), scores.shape[-1]).to(scores.dtype)


def _check_scores(scores) -> torch.Tensor:
    """Scores, ``-inf`` allowed (masked keys), but no ``+inf``, no row all masked."""
    scores = as_tensor(scores, "scores", allow_inf=True)
    top = scores.amax(-1)
    if torch.isposinf(top).any():
        raise ValueError("scores contains +inf values")
    if torch.isneginf(top).any():
        raise ValueError("scores has a row that is entirely -inf (every key masked)")
    return scores


def straight_through_hardmax(scores: torch.Tensor) -> torch.Tensor:
    """Hard one-hot weights forward, the softmax's gradient backward (straight-through).

    Parameters
    ----------
    scores : tensor or array-like, shape (..., n)
        Scores, as in :func:`hardmax`.

    Returns
    -------
    torch.Tensor, shape of ``scores``
        The one-hot rows of :func:`hardmax`, with the softmax's gradient.

    Implements
    ----------
    The straight-through estimator of Bengio, Léonard and Courville (2013), applied to
    the argmax the attention note replaces by a softmax (seed 004).
    """
    soft = torch.softmax(_check_scores(scores), -1)
    return hardmax(scores) + soft - soft.detach()


#: The normalizers the routers accept, by name. The soft choice (softmax), the hard one
#: (no gradient), and the hard one with the softmax's gradient (straight-through).
NORMALIZERS = {
    "softmax": "softmax",
    "hardmax": hardmax,
    "straight_through": straight_through_hardmax,
}


def _normalizer(name: str):
    if name not in NORMALIZERS:
        raise ValueError(
            f"normalizer must be one of {sorted(NORMALIZERS)}, got {name!r}"
        )
    return NORMALIZERS[name]


def soft_mux(
    inputs, importance, *, temperature: float = 1.0, normalizer: str = "softmax"
):
    """The differentiable multiplexer: ``Σ_i softmax(a / T)_i h_i``.

    Parameters
    ----------
    inputs : tensor, shape (..., n, d)
        The signals ``h_i``, one per row.
    importance : tensor, shape (..., n)
        The importances ``a_i = a(h_i, C)`` (the control signal, scored).
    temperature : float
        Positive; as it goes to 0 the output tends to the input of largest importance.
    normalizer : {"softmax", "hardmax", "straight_through"}

    Returns
    -------
    AttentionResult
        ``output`` of shape ``(..., d)`` and ``weights`` of shape ``(..., n)``.

    Implements
    ----------
    The note's "most relevant input = ⟨softmax(a), h⟩" (seed 004), written as one query
    whose scores against the keys are the importances.
    """
    inputs = as_tensor(inputs, "inputs", min_ndim=2)
    importance = as_tensor(importance, "importance", device=inputs.device)
    dtype = torch.promote_types(inputs.dtype, importance.dtype)
    inputs, importance = inputs.to(dtype), importance.to(dtype)
    temperature = check_positive(temperature, "temperature")
    if importance.shape != inputs.shape[:-1]:
        raise ValueError(
            f"importance must have shape {tuple(inputs.shape[:-1])}, got "
            f"{tuple(importance.shape)}"
        )
    # One query equal to 1 against one-feature keys a_i: the "dot" score is a_i itself.
    query = torch.ones(
        *importance.shape[:-1], 1, 1, dtype=inputs.dtype, device=inputs.device
    )
    out, weights = attention(
        query,
        importance.unsqueeze(-1),
        inputs,
        score="dot",
        normalizer=_normalizer(normalizer),
        temperature=temperature,
    )
    return _squeeze_query(out, weights)


def _squeeze_query(out, weights) -> AttentionResult:
    # One query per multiplexer: drop its axis.
    return AttentionResult(out.squeeze(-2), weights.squeeze(-2))


# --------------------------------------------------------------------------- models


class ConvRouter(nn.Module):
    """A 1-D CNN: ``depth`` zero-padded convolutions with ReLUs, then a read-out.

    The convolutions have odd ``kernel_size``; residual connections after the first.

    Every layer is translation-equivariant and local, so output j sees only the inputs
    within ``receptive_field // 2`` positions of j.

    Parameters
    ----------
    n_in, n_out : int
        Input features per token and outputs (logits) per token.
    kernel_size : int
        Odd width of every convolution.
    depth : int
        Number of convolutions.
    width : int
        Channels of the hidden layers.

    Implements
    ----------
    The convolutions of the attention note (seed 004), stacked to grow the receptive
    field to ``1 + depth (kernel_size - 1)``.
    """

    def __init__(
        self,
        n_in: int,
        n_out: int,
        kernel_size: int = 3,
        depth: int = 1,
        width: int = 32,
    ):
        super().__init__()
        n_in, n_out, width = (
            check_int(n_in, "n_in"),
            check_int(n_out, "n_out"),
            check_int(width, "width"),
        )
        kernel_size, depth = (
            check_int(kernel_size, "kernel_size"),
            check_int(depth, "depth"),
        )
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        sizes = [n_in] + [width] * depth
        self.convs = nn.ModuleList(
            nn.Conv1d(a, b, kernel_size, padding=kernel_size // 2)
            for a, b in zip(sizes, sizes[1:])
        )
        self.readout = nn.Conv1d(width, n_out, 1)
        self.receptive_field = 1 + depth * (kernel_size - 1)

    def forward(self, x) -> torch.Tensor:
        """Logits for every token.

        Parameters
        ----------
        x : tensor or array-like, shape (batch, length, n_in)
            Tokens, one per row; a tensor must have the module's dtype.

        Returns
        -------
        torch.Tensor, shape (batch, length, n_out)
            The logits.
        """
        x = _module_input(x, "x", self.readout.weight, ndim=3)
        h = x.transpose(1, 2)  # Conv1d wants channels before positions
        h = torch.relu(self.convs[0](h))
        for conv in self.convs[1:]:
            h = h + torch.relu(
                conv(h)
            )  # residual, so that deep stacks still train in a few hundred steps
        return self.readout(h).transpose(1, 2)


class AttentionRouter(nn.Module):
    """One attention layer: each position reads the values of the positions it picks.

    Tokens are embedded linearly (plus a learned positional encoding if ``max_len`` is
    given), scored by ``q_jᵀ k_i / √d``, normalised by ``normalizer``, and the averaged
    values are read out linearly to logits.

    Parameters
    ----------
    n_in, n_out : int
        Input features per token and outputs per token.
    d_model : int
        Size of queries, keys and values.
    max_len : int, optional
        Longest sequence; adds a learned positional encoding. ``None`` keeps the layer
        permutation-equivariant.
    normalizer : {"softmax", "hardmax", "straight_through"}

    Implements
    ----------
    The note's multiplexer with linear maps, ``a(x_i, x_j) = x_iᵀKᵀQ x_j`` and
    ``C_j = x_j`` (seed 004): self-attention, Eq. (1) of Vaswani et al. (2017).
    """

    def __init__(
        self,
        n_in: int,
        n_out: int,
        d_model: int = 16,
        *,
        max_len: int | None = None,
        normalizer: str = "softmax",
    ):
        super().__init__()
        n_in, n_out, d_model = (
            check_int(n_in, "n_in"),
            check_int(n_out, "n_out"),
            check_int(d_model, "d_model"),
        )
        self.normalize = _normalizer(normalizer)
        self.q, self.k, self.v = (nn.Linear(n_in, d_model) for _ in range(3))
        self.pos = (
            None
            if max_len is None
            else nn.Parameter(0.1 * torch.randn(check_int(max_len, "max_len"), d_model))
        )
        self.readout = nn.Linear(d_model, n_out)

    def attend(self, x):
        """The attention result: averaged values and ``[query, key]`` weights.

        The values are ``(batch, length, d_model)``.
        """
        x = _module_input(x, "x", self.readout.weight, ndim=3)
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.pos is not None:
            if x.shape[1] > self.pos.shape[0]:
                raise ValueError(
                    f"x has {x.shape[1]} tokens, more than max_len = "
                    f"{self.pos.shape[0]}"
                )
            q, k = q + self.pos[: x.shape[1]], k + self.pos[: x.shape[1]]
        with _names_input("x"):
            return attention(q, k, v, normalizer=self.normalize)

    def forward(self, x) -> torch.Tensor:
        """Logits for every token.

        Parameters
        ----------
        x : tensor or array-like, shape (batch, length, n_in)
            Tokens, one per row; a tensor must have the module's dtype.

        Returns
        -------
        torch.Tensor, shape (batch, length, n_out)
            The logits.
        """
        return self.readout(self.attend(x).output)


class WeekdayMux(nn.Module):
    """The friends' multiplexer: the day (via ``Q``) scores each friend's token.

    Each friend's token is seen through ``K``.

    ``a(x_i, c) = x_iᵀ KᵀQ c``; the output is the chosen friend's token ``Σ α_i x_i``,
    read out linearly to restaurant logits.

    Parameters
    ----------
    n_friends, n_restaurants : int
        As in :func:`weekday_task`.
    d_key : int
        Size of the space where queries meet keys.
    normalizer : {"softmax", "hardmax", "straight_through"}

    Implements
    ----------
    The note's ``Σ_i x_i exp(x_iᵀKᵀQC) / Σ_k exp(x_kᵀKᵀQC)`` (seed 004) with the weekday
    as the context ``C``.
    """

    def __init__(
        self,
        n_friends: int = 7,
        n_restaurants: int = 5,
        d_key: int = 8,
        *,
        normalizer: str = "softmax",
    ):
        super().__init__()
        n_friends, n_restaurants = (
            check_int(n_friends, "n_friends"),
            check_int(n_restaurants, "n_restaurants"),
        )
        d_key = check_int(d_key, "d_key")
        self.normalize = _normalizer(normalizer)
        self.Q = nn.Linear(n_friends, d_key, bias=False)
        self.K = nn.Linear(n_friends + n_restaurants, d_key, bias=False)
        self.readout = nn.Linear(n_friends + n_restaurants, n_restaurants)

    def bilinear_form(self) -> torch.Tensor:
        """``(KᵀQ)ᵀ``, indexed ``[day feature, token feature]``.

        ``a(x, c) = c @ M @ x``.
        """
        return self.Q.weight.T @ self.K.weight

    def attend(self, friends, day):
        """The chosen tokens ``(batch, features)``, weights ``(batch, n_friends)``."""
        w = self.readout.weight
        friends = _module_input(friends, "friends", w, ndim=3)
        day = _module_input(day, "day", w, ndim=2)
        if day.shape[0] != friends.shape[0]:
            raise ValueError(
                f"day and friends must have the same batch size, got {day.shape[0]} "
                f"and {friends.shape[0]}"
            )
        for x, name, proj in ((friends, "friends", self.K), (day, "day", self.Q)):
            if x.shape[-1] != proj.in_features:
                raise ValueError(
                    f"{name} must have {proj.in_features} features, got {x.shape[-1]}"
                )
        out, weights = attention(
            self.Q(day)[:, None],
            self.K(friends),
            friends,
            score="dot",
            normalizer=self.normalize,
        )
        return _squeeze_query(out, weights)

    def forward(self, friends, day) -> torch.Tensor:
        """Restaurant logits for each example.

        Parameters
        ----------
        friends : tensor or array-like, shape (batch, n_friends, features)
            The friends' tokens (:func:`weekday_task`), ``features = n_friends +
            n_restaurants``; a tensor must have the module's dtype.
        day : tensor or array-like, shape (batch, n_friends)
            The one-hot weekday (the control signal).

        Returns
        -------
        torch.Tensor, shape (batch, n_restaurants)
            The logits.
        """
        return self.readout(self.attend(friends, day).output)


# --------------------------------------------------------------------- training helpers


def _check_model_task(model, task) -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(task, RoutingTask):
        raise ValueError(
            f"task must be a RoutingTask (see routing_task), got {type(task).__name__}"
        )


def routing_loss(model: nn.Module, task: RoutingTask) -> torch.Tensor:
    """Mean cross-entropy at every position (each must name the marked value).

    Parameters
    ----------
    model : nn.Module
        Maps ``task.x``, ``(n, length, n_values + 1)``, to logits
        ``(n, length, n_values)``.
    task : RoutingTask
        The sequences and their targets (:func:`routing_task`).

    Returns
    -------
    torch.Tensor, shape ()
        The loss, differentiable with respect to the model's parameters.
    """
    _check_model_task(model, task)
    logits = model(task.x)
    target = task.target[:, None].expand(logits.shape[:2])
    return F.cross_entropy(logits.flatten(0, 1), target.flatten())


@torch.no_grad()
def accuracy_by_distance(model: nn.Module, task: RoutingTask) -> np.ndarray:
    """Accuracy of the prediction at position j as a function of ``|j - marker|``.

    Parameters
    ----------
    model : nn.Module
        As in :func:`routing_loss`; evaluated in eval mode, its mode restored after.
    task : RoutingTask
        The sequences and their targets (:func:`routing_task`).

    Returns
    -------
    ndarray, shape (length,)
        Entry d is the accuracy over all (sequence, position) pairs at distance d from
        the marked position (NaN if there are none).
    """
    _check_model_task(model, task)
    was_training = model.training
    model.eval()
    pred = model(task.x).argmax(-1).cpu()
    model.train(was_training)
    length = task.x.shape[1]
    distance = (torch.arange(length)[None, :] - task.marker[:, None]).abs()
    correct = (pred == task.target[:, None]).double()
    hits = torch.zeros(length, dtype=torch.float64).index_add_(
        0, distance.flatten(), correct.flatten()
    )
    counts = torch.bincount(distance.flatten(), minlength=length).double()
    return (hits / counts).numpy()
