"""The scores of attention and the names :func:`~attnlib.functional.attention` accepts.

A score compares every query with every key: ``score(q, k)`` is ``(..., n_q, n_k)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..normalizers import NORMALIZERS

__all__ = ["SCORES", "resolve"]

Score = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Normalizer = str | Callable[[torch.Tensor], torch.Tensor]


def _dot(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.mT


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

#: The scores SDPA computes: q kᵀ / sqrt(d) and q kᵀ.
FUSED_SCORES = ("scaled_dot", "dot")


def resolve_normalizer(normalizer) -> Callable[[torch.Tensor], torch.Tensor]:
    """The map a normalizer name stands for (a callable is itself)."""
    if callable(normalizer):
        return normalizer
    if normalizer not in NORMALIZERS:
        known = sorted(NORMALIZERS)
        raise ValueError(
            f"normalizer must be a callable or one of {known}, got {normalizer!r}"
        )
    return NORMALIZERS[normalizer]


def resolve_score(score):
    """The function a score name stands for (a callable is itself)."""
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
    return resolve_score(score), resolve_normalizer(normalizer)


def default_temperature(temperature, score, d: int) -> float:
    """The temperature, checked by the public function, or its default.

    The default is ``sqrt(d)`` for the scaled dot, else 1.
    """
    if temperature is None:
        temperature = math.sqrt(d) if score == "scaled_dot" else 1.0
    return temperature
