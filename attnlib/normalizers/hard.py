"""The hard choice: one-hot weights at each row's largest score, and its
straight-through form, the limits that softmax, sparsemax and entmax relax.

Both are in :data:`attnlib.normalizers.NORMALIZERS` (``"hardmax"``,
``"straight_through"``), so ``attention(..., normalizer="hardmax")`` and chapter 08's
routers name them as they name the other maps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..utils import as_tensor
from ..utils.boundary import checking, public

__all__ = ["hardmax", "straight_through_hardmax"]


@public
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
    The argmax that the attention note replaces by a softmax:
    ``⟨argmax(a), h⟩`` picks the most important input.
    """
    if checking():
        scores = _check_scores(scores)
    return F.one_hot(scores.argmax(-1), scores.shape[-1]).to(scores.dtype)


@public
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
    the argmax the attention note replaces by a softmax.
    """
    if checking():
        scores = _check_scores(scores)
    soft = torch.softmax(scores, -1)
    return hardmax(scores) + soft - soft.detach()


def _check_scores(scores) -> torch.Tensor:
    """Scores, ``-inf`` allowed (masked keys), but no ``+inf``, no row all masked."""
    scores = as_tensor(scores, "scores", allow_inf=True)
    top = scores.amax(-1)
    if torch.isposinf(top).any():
        raise ValueError("scores contains +inf values")
    if torch.isneginf(top).any():
        raise ValueError("scores has a row that is entirely -inf (every key masked)")
    return scores
