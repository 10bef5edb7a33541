"""The maps and their Fenchel–Young losses as ``nn.Module``s, with entmax's signatures.

A model written for the ``entmax`` package (Peters et al., 2019; Correia et al., 2019)
runs on attnlib by changing its import: ``Sparsemax`` and ``Entmax15`` take the same
arguments as the package's modules, ``Entmax`` is α-entmax with α fixed or learned (the
package's ``EntmaxBisect``), and the three losses take ``ignore_index`` and
``reduction`` as the package's losses and ``torch.nn.CrossEntropyLoss`` do. Each module
checks its arguments once and calls the functions of :mod:`attnlib.normalizers`.

Departures from the package, each for a reason:

* ``k`` (the package's partial-sort hint) is accepted and checked but changes nothing:
  attnlib finds the threshold exactly without sorting.
* A learned α is parametrised as ``α = 1 + softplus(ρ)``, so that no step of the
  optimiser can push it to α ≤ 1, where the map is undefined; the package leaves α
  unconstrained.
* A target equal to ``ignore_index`` is ignored whatever its sign (the package ignores
  only non-negative indices, so its default ``-100`` ignores nothing); with
  ``reduction="mean"`` the loss averages the rows that are not ignored, as
  ``CrossEntropyLoss`` does, and is NaN when every row is ignored, as there.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn
from torch.nn import functional as F

from .common import _check_index, _check_k
from .losses import _normmax_loss
from .maps import _with_support, entmax
from .packaged import _check_n_iter
from .tsallis import check_index_dtype, fenchel_young_loss

__all__ = [
    "Sparsemax",
    "Entmax15",
    "Entmax",
    "SparsemaxLoss",
    "Entmax15Loss",
    "EntmaxLoss",
    "SparsemaxBisectLoss",
    "EntmaxBisectLoss",
    "NormmaxBisectLoss",
]

#: The package's name for the mean over the rows that are not ignored.
_REDUCTIONS = {"mean": "mean", "elementwise_mean": "mean", "sum": "sum", "none": "none"}


def _check_dim(dim) -> int:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise ValueError(f"dim must be an integer, got {dim!r}")
    return int(dim)


class _Map(nn.Module):
    """α-entmax at ``self.alpha`` along ``self.dim``: the forward pass of the maps."""

    dim: int
    _alpha: float  # the Tsallis index of the map (Entmax: when not learned)

    @property
    def alpha(self):
        return self._alpha

    def forward(self, x) -> torch.Tensor:
        """:func:`attnlib.normalizers.entmax` of ``x`` along ``self.dim``.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, ...)
            Scores; ``-inf`` marks a masked entry.

        Returns
        -------
        tensor, same shape, dtype and device as ``x``
            Probabilities summing to one along ``self.dim``.
        """
        return entmax(x, self.alpha, dim=self.dim)


class _FixedMap(_Map):
    """A map of :mod:`attnlib.normalizers` along ``dim``, with entmax's ``(dim, k)``."""

    def __init__(
        self, dim: int = -1, k: int | None = None, return_support_size: bool = False
    ):
        super().__init__()
        self.dim, self.k = _check_dim(dim), _check_k(k)
        self.return_support_size = bool(return_support_size)

    def forward(self, x):
        """The map of ``x`` along ``self.dim`` (and its support sizes if asked).

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, ...)
            Scores; ``-inf`` marks a masked entry.

        Returns
        -------
        tensor, same shape, dtype and device as ``x``
            Probabilities summing to one along ``self.dim``.
        support : int64 tensor, size 1 along ``self.dim``
            Only with ``return_support_size``.
        """
        p = entmax(x, self.alpha, dim=self.dim)
        return _with_support(p, self.dim % p.ndim, self.return_support_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Sparsemax(_FixedMap):
    """Sparsemax along ``dim``, as a module (the ``entmax`` package's signature).

    Parameters
    ----------
    dim : int
        The dimension that is normalised.
    k : int, optional
        The package's partial-sort hint; accepted for compatibility, no effect.
    return_support_size : bool
        Also return the number of nonzeros of each slice (the package's option).

    Implements
    ----------
    Eq. (9) of the sparse-continuous attention paper, finite case (sparsemax of
    Martins & Astudillo, 2016): :func:`attnlib.normalizers.entmax` at α = 2, which is
    :func:`attnlib.normalizers.sparsemax`.
    """

    _alpha = 2.0


class Entmax15(_FixedMap):
    """1.5-entmax along ``dim``, as a module (the ``entmax`` package's signature).

    Parameters
    ----------
    dim : int
        The dimension that is normalised.
    k : int, optional
        The package's partial-sort hint; accepted for compatibility, no effect.
    return_support_size : bool
        Also return the number of nonzeros of each slice (the package's option).

    Implements
    ----------
    Eq. (7) of the sparse-continuous attention paper at α = 1.5 (1.5-entmax of Peters
    et al., 2019), by :func:`attnlib.normalizers.entmax`.
    """

    _alpha = 1.5


class Entmax(_Map):
    """α-entmax along ``dim`` with α fixed, or learned (one α per slice if a tensor).

    Parameters
    ----------
    alpha : float > 1, or tensor of values > 1, broadcastable to (..., 1, ...)
        The Tsallis index, or its starting value when learned. A tensor (for example
        of shape ``(n_heads, 1, 1)``) gives one α per slice; its shape must broadcast
        to the input's with size 1 along ``dim``.
    dim : int
        The dimension that is normalised.
    learn_alpha : bool
        Learn α, as ``1 + softplus(ρ)`` with ρ a parameter started at the given α.

    Attributes
    ----------
    alpha : float or tensor
        The current α (a tensor that carries gradients to ρ when learned).

    Implements
    ----------
    Eq. (7) of the sparse-continuous attention paper; learned α as in Correia et al.
    (2019), who learn one α per attention head.
    """

    def __init__(self, alpha=1.5, dim: int = -1, learn_alpha: bool = False):
        super().__init__()
        self.dim = _check_dim(dim)
        if isinstance(alpha, torch.Tensor):
            alpha = alpha.detach().to(torch.get_default_dtype())
            if alpha.numel() == 0 or not bool(torch.isfinite(alpha).all()):
                raise ValueError("alpha must hold finite values greater than 1")
            if bool((alpha <= 1).any()):
                raise ValueError("alpha must hold values greater than 1")
        else:
            alpha = _check_index(alpha, "alpha")
            if alpha == 1:
                raise ValueError("alpha must be greater than 1 (alpha = 1 is softmax)")
        if not isinstance(learn_alpha, bool):
            raise ValueError(f"learn_alpha must be True or False, got {learn_alpha!r}")
        self.learn_alpha = learn_alpha
        if self.learn_alpha:
            self.rho = nn.Parameter(_softplus_inverse(alpha))
        elif isinstance(alpha, torch.Tensor):
            self.register_buffer("_alpha", alpha)
        else:
            self._alpha = alpha

    @property
    def alpha(self):
        return 1 + F.softplus(self.rho) if self.learn_alpha else self._alpha

    def extra_repr(self) -> str:
        return f"dim={self.dim}, learn_alpha={self.learn_alpha}"


def _softplus_inverse(alpha) -> torch.Tensor:
    """ρ with ``1 + softplus(ρ) = alpha`` in the default dtype, or a ValueError.

    ρ = r + log(-expm1(-r)) with r = α − 1, in float64: finite wherever α − 1 is
    (the textbook ``log(expm1(r))`` overflows float32 from α ≈ 90). An α that the
    default dtype rounds to 1 (or to infinity) through ``1 + softplus(ρ)`` could not
    be learned from: it is refused here, not at the first forward.
    """
    r = torch.as_tensor(alpha, dtype=torch.float64) - 1
    rho = (r + torch.log(-torch.expm1(-r))).to(torch.get_default_dtype())
    held = 1 + F.softplus(rho)
    if not bool((torch.isfinite(held) & (held > 1)).all()):
        raise ValueError(
            "alpha must be greater than 1 in the default dtype "
            f"({torch.get_default_dtype()}) when learned: 1 + softplus(rho) holds "
            f"{held.tolist()} for alpha = {alpha!r}"
        )
    return rho


class _FenchelYoungLoss(nn.Module):
    """The Fenchel–Young loss of one map on class targets, with ignored rows."""

    def __init__(self, alpha: float, ignore_index: int, reduction: str):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"reduction must be one of {sorted(_REDUCTIONS)}, got {reduction!r}"
            )
        if isinstance(ignore_index, torch.Tensor) and ignore_index.numel() == 1:
            ignore_index = ignore_index.item()  # the package's tests pass y[0]
        if isinstance(ignore_index, bool) or not isinstance(
            ignore_index, numbers.Integral
        ):
            raise ValueError(f"ignore_index must be an integer, got {ignore_index!r}")
        self.alpha, self.ignore_index = alpha, int(ignore_index)
        self.reduction = _REDUCTIONS[reduction]

    def forward(self, scores, target) -> torch.Tensor:
        """The loss of ``scores`` at class indices ``target``.

        Rows whose target is ``ignore_index`` contribute zero and are left out of the
        mean.

        Parameters
        ----------
        scores : tensor, shape (..., n_classes)
            Scores along the last dimension, as the package's losses take them.
        target : integer tensor, shape (...)
            Class indices, or ``ignore_index``.

        Returns
        -------
        tensor
            A scalar, or the per-row losses of shape (...) when ``reduction="none"``.
        """
        if not isinstance(target, torch.Tensor) or target.is_floating_point():
            raise ValueError(
                "target must be a tensor of class indices (an integer dtype); for "
                "target probabilities use attnlib.normalizers.fenchel_young_loss"
            )
        check_index_dtype(target)  # before torch.where promotes a bool to int64
        keep = target != self.ignore_index
        losses = self._losses(scores, torch.where(keep, target, 0))
        # ignored rows: zero loss, zero gradient (where, not a product: an ignored
        # row's stand-in target may sit on a -inf score, whose loss is inf)
        losses = torch.where(keep, losses, 0.0)
        if self.reduction == "none":
            return losses
        total = losses.sum()
        return total if self.reduction == "sum" else total / keep.sum()

    def _losses(self, scores, target) -> torch.Tensor:
        return fenchel_young_loss(scores, target, self.alpha, reduction="none")

    def extra_repr(self) -> str:
        return f"ignore_index={self.ignore_index}, reduction={self.reduction!r}"


class SparsemaxLoss(_FenchelYoungLoss):
    """The sparsemax loss (the Fenchel–Young loss at α = 2) on class targets.

    Parameters
    ----------
    k : int, optional
        The package's partial-sort hint; accepted for compatibility, no effect.
    ignore_index : int
        Rows with this target contribute nothing (default ``-100``, as in torch).
    reduction : {"mean", "elementwise_mean", "sum", "none"}
        Mean over the rows not ignored (``"elementwise_mean"`` is the package's
        name for it), their sum, or the per-row losses.

    Implements
    ----------
    Martins & Astudillo (2016), Eq. (18); Blondel et al. (2020), Def. 2 at α = 2.
    """

    def __init__(self, k=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(2.0, ignore_index, reduction)
        self.k = _check_k(k)


class Entmax15Loss(_FenchelYoungLoss):
    """The 1.5-entmax loss (the Fenchel–Young loss at α = 1.5) on class targets.

    Parameters
    ----------
    k : int, optional
        The package's partial-sort hint; accepted for compatibility, no effect.
    ignore_index : int
        Rows with this target contribute nothing (default ``-100``, as in torch).
    reduction : {"mean", "elementwise_mean", "sum", "none"}
        Mean over the rows not ignored, their sum, or the per-row losses.

    Implements
    ----------
    Peters et al. (2019), Eq. (9); Blondel et al. (2020), Def. 2 at α = 1.5.
    """

    def __init__(self, k=100, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(1.5, ignore_index, reduction)
        self.k = _check_k(k)


class EntmaxLoss(_FenchelYoungLoss):
    """The α-entmax loss (the Fenchel–Young loss at α) on class targets.

    Parameters
    ----------
    alpha : float ≥ 1
        The Tsallis index (1 gives the cross-entropy loss).
    ignore_index : int
        Rows with this target contribute nothing (default ``-100``, as in torch).
    reduction : {"mean", "elementwise_mean", "sum", "none"}
        Mean over the rows not ignored, their sum, or the per-row losses.

    Implements
    ----------
    Blondel et al. (2020), Def. 2, with the Tsallis regulariser of Eq. (6) of the
    sparse-continuous attention paper.
    """

    def __init__(self, alpha=1.5, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(_check_index(alpha, "alpha"), ignore_index, reduction)


class SparsemaxBisectLoss(_FenchelYoungLoss):
    """The package's ``SparsemaxBisectLoss``: :class:`SparsemaxLoss` with ``n_iter``.

    Parameters
    ----------
    n_iter : int or None
        The package's number of bisections; checked, no effect (exact here).
    ignore_index : int
        Rows with this target contribute nothing (default ``-100``).
    reduction : {"mean", "elementwise_mean", "sum", "none"}
        Mean over the rows not ignored, their sum, or the per-row losses.

    Implements
    ----------
    Blondel et al. (2020), Def. 2 at α = 2.
    """

    def __init__(self, n_iter=50, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(2.0, ignore_index, reduction)
        self.n_iter = _check_n_iter(n_iter)


class EntmaxBisectLoss(_FenchelYoungLoss):
    """The package's ``EntmaxBisectLoss``: :class:`EntmaxLoss` with ``n_iter``.

    Parameters
    ----------
    alpha : float ≥ 1
        The Tsallis index.
    n_iter : int or None
        Checked, no effect on accuracy.
    ignore_index : int
        Rows with this target contribute nothing (default ``-100``).
    reduction : {"mean", "elementwise_mean", "sum", "none"}
        Mean over the rows not ignored, their sum, or the per-row losses.

    Implements
    ----------
    Blondel et al. (2020), Def. 2, with the Tsallis regulariser.
    """

    def __init__(
        self, alpha=1.5, n_iter=50, ignore_index: int = -100, reduction: str = "mean"
    ):
        super().__init__(_check_index(alpha, "alpha"), ignore_index, reduction)
        self.n_iter = _check_n_iter(n_iter)


class NormmaxBisectLoss(_FenchelYoungLoss):
    """The package's ``NormmaxBisectLoss``: the Fenchel–Young loss of α-normmax.

    Parameters
    ----------
    alpha : float > 1
        The norm's index.
    n_iter : int or None
        Checked, no effect on accuracy.
    ignore_index : int
        Rows with this target contribute nothing (default ``-100``).
    reduction : {"mean", "elementwise_mean", "sum", "none"}
        Mean over the rows not ignored, their sum, or the per-row losses.

    Implements
    ----------
    Blondel et al. (2020), Def. 2 with Ω = ‖·‖_α:
    :func:`attnlib.normalizers.normmax_bisect_loss`.
    """

    def __init__(
        self, alpha=2, n_iter=50, ignore_index: int = -100, reduction: str = "mean"
    ):
        alpha = _check_index(alpha, "alpha")
        if alpha == 1:
            raise ValueError("alpha must be greater than 1 for normmax, got 1")
        super().__init__(alpha, ignore_index, reduction)
        self.n_iter = _check_n_iter(n_iter)

    def _losses(self, scores, target) -> torch.Tensor:
        return _normmax_loss(scores, target, self.alpha, "scores")
