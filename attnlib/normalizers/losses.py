"""The ``entmax`` package's loss functions, under its names and signatures.

Each takes scores ``X`` of shape (n, n_classes) and class indices ``target`` of shape
(n,) and returns the per-row losses, shape (n,), unreduced, as the package's do; their
gradient in ``X`` is ``p̂ - onehot(target)``. The modules with ``ignore_index`` and
``reduction`` are in :mod:`attnlib.normalizers.modules`. ``k`` and ``n_iter`` are
checked and change nothing (the maps are exact, see
:mod:`attnlib.normalizers.packaged`).
"""

from __future__ import annotations

import torch

from .common import _check_index, _check_k, _check_scores, _row_max
from .packaged import _check_n_iter, normmax_bisect
from .tsallis import _class_target, fenchel_young_loss, unreachable_target

__all__ = [
    "sparsemax_loss",
    "entmax15_loss",
    "sparsemax_bisect_loss",
    "entmax_bisect_loss",
    "normmax_bisect_loss",
]


def _class_indices(target) -> None:
    if not isinstance(target, torch.Tensor) or target.is_floating_point():
        raise ValueError(
            "target must be a tensor of class indices (an integer dtype); for "
            "target probabilities use attnlib.normalizers.fenchel_young_loss"
        )


def _tsallis(X, target, alpha) -> torch.Tensor:
    _class_indices(target)
    X, _ = _check_scores(X, -1, "X")  # the errors name the package's argument
    if X.numel() == 0:  # no row: no loss
        return X.sum(-1)
    _row_max(X, "X")
    return fenchel_young_loss(X, target, alpha, reduction="none")


def sparsemax_loss(X, target, k=None) -> torch.Tensor:
    """The sparsemax loss of each row (the package's ``sparsemax_loss``).

    Parameters
    ----------
    X : tensor, shape (n, n_classes)
        Scores.
    target : integer tensor, shape (n,)
        Class indices.
    k : int, optional
        Checked, no effect.

    Returns
    -------
    tensor, shape (n,)
        The losses.

    Implements
    ----------
    Martins & Astudillo (2016), Eq. (18): the Fenchel–Young loss at α = 2.
    """
    _check_k(k)
    return _tsallis(X, target, 2.0)


def entmax15_loss(X, target, k=None) -> torch.Tensor:
    """The 1.5-entmax loss of each row (the package's ``entmax15_loss``).

    Parameters
    ----------
    X : tensor, shape (n, n_classes)
        Scores.
    target : integer tensor, shape (n,)
        Class indices.
    k : int, optional
        Checked, no effect.

    Returns
    -------
    tensor, shape (n,)
        The losses.

    Implements
    ----------
    Peters et al. (2019), Eq. (9): the Fenchel–Young loss at α = 1.5.
    """
    _check_k(k)
    return _tsallis(X, target, 1.5)


def sparsemax_bisect_loss(X, target, n_iter=50) -> torch.Tensor:
    """The sparsemax loss of each row (the package's ``sparsemax_bisect_loss``).

    Parameters
    ----------
    X : tensor, shape (n, n_classes)
        Scores.
    target : integer tensor, shape (n,)
        Class indices.
    n_iter : int or None
        Checked, no effect.

    Returns
    -------
    tensor, shape (n,)
        The losses.

    Implements
    ----------
    The Fenchel–Young loss at α = 2 (Blondel et al., 2020, Def. 2).
    """
    _check_n_iter(n_iter)
    return _tsallis(X, target, 2.0)


def entmax_bisect_loss(X, target, alpha=1.5, n_iter=50) -> torch.Tensor:
    """The α-entmax loss of each row (the package's ``entmax_bisect_loss``).

    Parameters
    ----------
    X : tensor, shape (n, n_classes)
        Scores.
    target : integer tensor, shape (n,)
        Class indices.
    alpha : float ≥ 1
        The Tsallis index (1: the cross-entropy).
    n_iter : int or None
        Checked, no effect.

    Returns
    -------
    tensor, shape (n,)
        The losses.

    Implements
    ----------
    Blondel et al. (2020), Def. 2, with the Tsallis regulariser of Eq. (6) of the
    sparse-continuous attention paper.
    """
    _check_n_iter(n_iter)
    if isinstance(alpha, torch.Tensor) and alpha.numel() == 1:
        alpha = alpha.item()
    return _tsallis(X, target, alpha)


def normmax_bisect_loss(X, target, alpha=2, n_iter=50) -> torch.Tensor:
    """The α-normmax loss of each row: ``1 - ‖p̂‖_α + ⟨p̂ - y, X⟩``.

    Parameters
    ----------
    X : tensor, shape (n, n_classes)
        Scores.
    target : integer tensor, shape (n,)
        Class indices.
    alpha : float > 1
        The norm's index.
    n_iter : int or None
        Checked, no effect.

    Returns
    -------
    tensor, shape (n,)
        The losses.

    Implements
    ----------
    The Fenchel–Young loss (Blondel et al., 2020, Def. 2) of Ω = ‖·‖_α, whose value
    at a one-hot target is 1.
    """
    _check_n_iter(n_iter)
    return _normmax_loss(X, target, alpha, "X")


def _normmax_loss(X, target, alpha, name: str) -> torch.Tensor:
    """:func:`normmax_bisect_loss`, its scores' argument called ``name``."""
    _class_indices(target)
    X, _ = _check_scores(X, -1, name)
    _row_max(X, name)
    alpha = _check_index(alpha, "alpha")
    y = _class_target(target, X)
    # p̂ is held fixed: by Danskin's theorem the gradient in X is then p̂ - y.
    p = normmax_bisect(X.detach(), alpha)
    theta = X.masked_fill(torch.isneginf(X), 0.0)
    loss = ((p - y) * theta).sum(-1) + 1 - p.pow(alpha).sum(-1).pow(1 / alpha)
    return loss + unreachable_target(X, y)
