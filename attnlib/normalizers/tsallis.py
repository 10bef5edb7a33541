"""Tsallis entropies, the β-exponential and β-logarithm, and the Fenchel–Young loss.

The regularisers behind the maps of ``attnlib.normalizers`` (α-entmax maximises
``⟨p, x⟩ + H_α(p)``), the deformed exponential and logarithm that write its output in
closed form, and the loss whose gradient in the scores is ``entmax(scores) - target``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from ..utils import as_tensor
from .common import _check_index, _check_scores, _row_max
from .maps import entmax

__all__ = ["tsallis_entropy", "exp_beta", "log_beta", "fenchel_young_loss"]


def _check_deformation(value, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def tsallis_entropy(p, alpha=1.5, dim: int = -1) -> torch.Tensor:
    """The α-Tsallis entropy ``(1 - Σ p^α) / (α(α-1))``.

    Shannon's ``-Σ p log p`` at α = 1.

    Parameters
    ----------
    p : tensor or array-like, shape (..., n, ...)
        Weights in [0, 1] (usually a probability vector along ``dim``).
    alpha : float ≥ 1
        The Tsallis index.
    dim : int
        The dimension that is summed over.

    Returns
    -------
    tensor, shape of ``p`` without ``dim``
        The entropy of each slice.

    Implements
    ----------
    Minus Eq. (6) of the sparse-continuous attention paper (Martins et al., 2020), with
    the 1/α scaling of Blondel et al. (2020).
    """
    return _tsallis_entropy(as_tensor(p, "p"), alpha, dim)


def _tsallis_entropy(p: torch.Tensor, alpha, dim: int) -> torch.Tensor:
    """:func:`tsallis_entropy` of a checked tensor ``p`` (its range, ``dim`` and
    ``alpha`` are checked here)."""
    if ((p < 0) | (p > 1 + 4 * torch.finfo(p.dtype).eps)).any():
        raise ValueError("p must hold weights in [0, 1]")
    _, dim = _check_scores(p, dim, "p")
    alpha = _check_index(alpha, "alpha")
    if alpha == 1:
        return -torch.special.xlogy(p, p).sum(dim)
    return (1 - p.pow(alpha).sum(dim)) / (alpha * (alpha - 1))


def exp_beta(u, beta: float) -> torch.Tensor:
    """The β-exponential ``[1 + (1-β) u]₊^{1/(1-β)}`` (``exp u`` at β = 1).

    Parameters
    ----------
    u : tensor or array-like, any shape
        Any real values.
    beta : float
        The deformation; entmax with index α uses β = 2 - α.

    Returns
    -------
    tensor, shape of ``u``
        ``exp_β(u)``; ``inf`` where the result exceeds the dtype's range (as ``exp``
        does).

    Implements
    ----------
    Eq. (4) (right) of the sparse-continuous attention paper (Martins et al., 2020).
    """
    u = as_tensor(u, "u", min_ndim=0)
    beta = _check_deformation(beta, "beta")
    if beta == 1:
        return u.exp()
    return (1 + (1 - beta) * u).clamp_min(0).pow(1 / (1 - beta))


def log_beta(u, beta: float) -> torch.Tensor:
    """The β-logarithm ``(u^{1-β} - 1) / (1-β)`` (``log u`` at β = 1), for ``u ≥ 0``.

    Parameters
    ----------
    u : tensor or array-like, any shape
        Non-negative values.
    beta : float
        The deformation.

    Returns
    -------
    tensor, shape of ``u``
        ``log_β(u)``; ``-inf`` at ``u = 0`` for β ≥ 1, as ``log`` gives.

    Implements
    ----------
    Eq. (4) (left) of the sparse-continuous attention paper (Martins et al., 2020).
    """
    u = as_tensor(u, "u", min_ndim=0)
    if (u < 0).any():
        raise ValueError("u must be non-negative")
    beta = _check_deformation(beta, "beta")
    if beta == 1:
        return u.log()
    return (u.pow(1 - beta) - 1) / (1 - beta)


def fenchel_young_loss(
    scores, target, alpha=1.5, reduction: str = "mean"
) -> torch.Tensor:
    """The Fenchel–Young loss of α-entmax: ``⟨p̂ - y, θ⟩ + H_α(p̂) - H_α(y)``.

    With ``p̂ = entmax(θ)`` it is non-negative, zero iff ``entmax(scores) = target``,
    and its gradient in the scores is ``p̂ - y``. α = 1 gives the cross-entropy
    (softmax) loss, α = 2 the sparsemax loss.

    Parameters
    ----------
    scores : tensor, shape (..., n)
        Scores θ along the last dimension.
    target : tensor, shape (...) of class indices, or (..., n) of probabilities
        The desired distribution y.
    alpha : float ≥ 1
        The Tsallis index.
    reduction : {"mean", "sum", "none"}
        How the per-row losses are combined.

    Returns
    -------
    tensor
        A scalar, or the per-row losses of shape (...) when ``reduction="none"``.

    Implements
    ----------
    The Fenchel–Young loss of Blondel et al. (2020), Def. 2, with the Tsallis
    regulariser of Eq. (6) of the sparse-continuous attention paper.
    """
    scores, _ = _check_scores(scores, -1, "scores")
    if scores.numel() == 0:
        raise ValueError(
            f"scores must hold at least one row, got shape {tuple(scores.shape)}"
        )
    _row_max(scores, "scores")
    alpha = _check_index(alpha, "alpha")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(
            f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
        )
    if isinstance(target, torch.Tensor) and not target.is_floating_point():
        target = _class_target(target, scores)
    else:
        scores, target = _probability_target(target, scores)
    return _fenchel_young(scores, target, alpha, reduction)


def check_index_dtype(target: torch.Tensor) -> None:
    """A ValueError unless ``target`` holds indices in a dtype cross_entropy takes."""
    if target.dtype not in (torch.int64, torch.uint8):
        raise ValueError(
            "target of class indices must be an int64 or uint8 tensor (the dtypes "
            f"torch's cross_entropy takes), got {target.dtype}"
        )


def _class_target(target: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """The checked class indices ``target`` of ``scores``' rows, one-hot.

    The index dtypes are torch's ``cross_entropy``'s: int64 and uint8; a bool, int32
    or other target is refused as it refuses them (a bool is not read as indices).
    """
    check_index_dtype(target)
    if target.shape != scores.shape[:-1]:
        raise ValueError(
            f"target of class indices must have shape {tuple(scores.shape[:-1])}, "
            f"got {tuple(target.shape)}"
        )
    if (target < 0).any() or (target >= scores.shape[-1]).any():
        raise ValueError(f"target indices must lie in [0, {scores.shape[-1] - 1}]")
    return torch.nn.functional.one_hot(target.long(), scores.shape[-1]).to(scores.dtype)


def unreachable_target(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``+inf`` on the rows where the target puts mass on a ``-inf`` score, else 0.

    There the loss's limit is ``+inf`` (as ``cross_entropy`` and the ``entmax``
    package give); the masked scores are zeroed in the inner product, which alone
    would leave it finite. Added, not filled in, so the row's gradient stays p̂ - y.
    """
    bad = ((target > 0) & torch.isneginf(scores)).any(-1)
    return torch.zeros_like(bad, dtype=scores.dtype).masked_fill(bad, math.inf)


def _probability_target(target, scores: torch.Tensor):
    """``scores`` and the checked probabilities ``target``, in their common dtype."""
    floating = isinstance(target, torch.Tensor) or (
        isinstance(target, np.ndarray) and target.dtype.kind == "f"
    )
    target = as_tensor(
        target,
        "target",
        min_ndim=0,
        device=scores.device,
        allow_empty=True,
        dtype=None if floating else scores.dtype,
    )
    if target.shape != scores.shape or (target < 0).any():
        raise ValueError(
            "target of probabilities must be non-negative with shape "
            f"{tuple(scores.shape)}"
        )
    # never cast a float64 target down
    dtype = torch.promote_types(scores.dtype, target.dtype)
    scores, target = scores.to(dtype), target.to(dtype)
    total = target.sum(-1)
    tol = (
        1e-3
        if dtype in (torch.float16, torch.bfloat16)
        else 1e-5
        if dtype == torch.float32
        else 1e-10
    )
    if not torch.allclose(total, torch.ones_like(total), atol=tol, rtol=0):
        raise ValueError(
            "target of probabilities must sum to one along the last dimension "
            f"(within {tol})"
        )
    return scores, target


def _fenchel_young(scores, target, alpha: float, reduction: str) -> torch.Tensor:
    """:func:`fenchel_young_loss` of checked scores and a target of probabilities."""
    # p̂ is held fixed: by Danskin's theorem the loss's gradient in θ is then p̂ - y.
    p_hat = entmax(scores.detach(), alpha)
    theta = scores.masked_fill(torch.isneginf(scores), 0.0)
    loss = (
        ((p_hat - target) * theta).sum(-1)
        + _tsallis_entropy(p_hat, alpha, -1)
        - _tsallis_entropy(target, alpha, -1)
        + unreachable_target(scores, target)
    )
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
