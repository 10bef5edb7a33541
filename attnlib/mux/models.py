"""The models chapter 08 trains: two routers (convolution, attention) and WeekdayMux.

Each maps tokens (rows) to logits. The loss and the accuracy that train and read the
routers serve the chapter's experiment and live in
``attnlib.mux.experiments.scores``.
"""

from __future__ import annotations

import torch
from torch import nn

from ..functional import attention
from ..utils import check_int
from ..utils.boundary import checking, public
from ..utils.validation import module_input, names_input
from .maps import _normalizer, _squeeze_query

__all__ = [
    "AttentionRouter",
    "ConvRouter",
    "WeekdayMux",
]


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
    The convolutions of the attention note, stacked to grow the receptive
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

    @public
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
        if checking():
            x = module_input(x, "x", self.readout.weight, ndim=3)
        h = x.transpose(1, 2)  # Conv1d wants channels before positions
        h = torch.relu(self.convs[0](h))
        for conv in self.convs[1:]:
            # residual, so that deep stacks still train in a few hundred steps
            h = h + torch.relu(conv(h))
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
    ``C_j = x_j`` (the note): self-attention, Eq. (1) of Vaswani et al. (2017).
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

    @public
    def attend(self, x):
        """The attention result: averaged values and ``[query, key]`` weights.

        The values are ``(batch, length, d_model)``.
        """
        if checking():
            x = module_input(x, "x", self.readout.weight, ndim=3)
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.pos is not None:
            if x.shape[1] > self.pos.shape[0]:
                raise ValueError(
                    f"x has {x.shape[1]} tokens, more than max_len = "
                    f"{self.pos.shape[0]}"
                )
            q, k = q + self.pos[: x.shape[1]], k + self.pos[: x.shape[1]]
        with names_input("x"):
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
    """The friends' multiplexer: the day, through ``Q``, scores each friend's token.

    The tokens are seen through ``K``:
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
    The note's ``Σ_i x_i exp(x_iᵀKᵀQC) / Σ_k exp(x_kᵀKᵀQC)`` with the weekday
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

    @public
    def attend(self, friends, day):
        """The chosen tokens ``(batch, features)``, weights ``(batch, n_friends)``."""
        if checking():
            friends, day = self._checked(friends, day)
        out, weights = attention(
            self.Q(day)[:, None],
            self.K(friends),
            friends,
            score="dot",
            normalizer=self.normalize,
        )
        return _squeeze_query(out, weights)

    def _checked(self, friends, day):
        """``friends`` and ``day`` as tensors of the module's, of matching sizes."""
        w = self.readout.weight
        friends = module_input(friends, "friends", w, ndim=3)
        day = module_input(day, "day", w, ndim=2)
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
        return friends, day

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
