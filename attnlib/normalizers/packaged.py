"""The ``entmax`` package's bisection maps, under its names and signatures.

``entmax_bisect``, ``sparsemax_bisect``, ``normmax_bisect`` and ``budget_bisect`` and
their modules ``EntmaxBisect``, ``SparsemaxBisect``, ``NormmaxBisect`` and
``BudgetBisect`` take the package's arguments with its defaults, so that a script
written for it runs on attnlib by changing its import to ``attnlib.normalizers``.

Where attnlib finds the threshold exactly (sparsemax, and α-entmax for 1 < α ≤ 2 on
the CPU) it does so, and where it bisects it halves the bracket until the dtype's
round-off: the result is at least as accurate as the package's at ``n_iter=50``
whatever ``n_iter`` is, and always sums to one (``ensure_sum_one`` is accepted for the
signature's sake). ``n_iter`` is checked (None or a positive integer), as is ``alpha``.
A slice that is entirely ``-inf`` gets zeros and a zero gradient.

Also here, private as in the package: ``_sparsemax_threshold_and_support`` and
``_entmax_threshold_and_support``, the threshold and support size of a slice, which the
package's own tests call.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from ..utils import check_on_device
from . import _normmax
from .common import (
    _along_last,
    _check_k,
    _check_scores,
    _compute_dtype,
    _live_rows,
)
from .maps import _aligned, _check_alpha, _entmax, entmax15, sparsemax

__all__ = [
    "entmax_bisect",
    "sparsemax_bisect",
    "normmax_bisect",
    "budget_bisect",
    "EntmaxBisect",
    "SparsemaxBisect",
    "NormmaxBisect",
    "BudgetBisect",
]


def _check_n_iter(n_iter):
    if n_iter is not None and (
        isinstance(n_iter, bool)
        or not isinstance(n_iter, numbers.Integral)
        or n_iter < 1
    ):
        raise ValueError(f"n_iter must be a positive integer or None, got {n_iter!r}")
    return n_iter


def entmax_bisect(X, alpha=1.5, dim: int = -1, n_iter=50, ensure_sum_one=True):
    """α-entmax along ``dim`` for any α > 0 (the package's ``entmax_bisect``).

    Parameters
    ----------
    X : tensor, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry.
    alpha : float > 0, or tensor broadcastable to (..., 1, ...) (size 1 along dim)
        The Tsallis index (α = 1: softmax, 2: sparsemax; below 1 the map is dense). A
        tensor gives one α per slice, and gradients flow to it. Tensor values must
        differ from 1.
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        The package's number of bisections; checked, no effect on accuracy.
    ensure_sum_one : bool
        Accepted; the result sums to one in either case.

    Returns
    -------
    tensor, same shape as ``X``
        Probabilities summing to one along ``dim``.

    Implements
    ----------
    Eq. (7) of the sparse-continuous attention paper (α-entmax of Peters et al., 2019),
    with the derivative in α of Correia et al. (2019).
    """
    _check_n_iter(n_iter)
    return _entmax(X, alpha, dim, low=True, name="X")


def sparsemax_bisect(X, dim: int = -1, n_iter=50, ensure_sum_one=True):
    """Sparsemax along ``dim`` (the package's ``sparsemax_bisect``): exact here.

    Parameters
    ----------
    X : tensor, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry.
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        The package's number of bisections; checked, no effect.
    ensure_sum_one : bool
        Accepted; the result sums to one in either case.

    Returns
    -------
    tensor, same shape as ``X``
        Sparse probabilities summing to one along ``dim``.

    Implements
    ----------
    Eq. (9) of the sparse-continuous attention paper, by
    :func:`attnlib.normalizers.sparsemax`.
    """
    _check_n_iter(n_iter)
    return _entmax(X, 2.0, dim, name="X")


def _rowwise(engine, x: torch.Tensor, param) -> torch.Tensor:
    """``engine`` on the rows of ``x`` (last dim) in the compute dtype; a row that is
    entirely ``-inf`` gets zeros."""
    x, dead, _ = _live_rows(x, "X")
    cd = _compute_dtype(x)
    param = param.to(cd) if isinstance(param, torch.Tensor) else param
    p = engine(x.to(cd), param).to(x.dtype)
    return p if dead is None else p.masked_fill(dead, 0)


def normmax_bisect(X, alpha=2, dim: int = -1, n_iter=50):
    """α-normmax along ``dim``: ``argmax_p ⟨p, x⟩ - ‖p‖_α`` over the simplex.

    Parameters
    ----------
    X : tensor, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry.
    alpha : float > 1, or tensor broadcastable to (..., 1, ...) (size 1 along dim)
        The norm's index. No gradient flows to a tensor α (as in the package); one
        that requires it is refused.
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        The package's number of bisections; checked, no effect on accuracy.

    Returns
    -------
    tensor, same shape as ``X``
        Sparse probabilities summing to one along ``dim``.

    Implements
    ----------
    The α-normmax of the ``entmax`` package (the Ω-RPM with Ω = ‖·‖_α); the threshold
    equation and the Jacobian are derived in ``attnlib/normalizers/_normmax.py``.
    """
    _check_n_iter(n_iter)
    X, dim = _check_scores(X, dim, "X")
    if isinstance(alpha, torch.Tensor) and alpha.requires_grad:
        raise ValueError("normmax_bisect has no gradient in alpha: pass it detached")
    alpha = _check_alpha(alpha, X, dim)
    if not isinstance(alpha, torch.Tensor) and alpha == 1:
        raise ValueError("alpha must be greater than 1 for normmax, got 1")
    if X.numel() == 0:
        return X.clone()
    return _along_last(
        lambda x, a: _rowwise(_normmax.normmax_rows, x, a), X, dim, alpha
    )


def budget_bisect(X, budget=2, dim: int = -1, n_iter=50):
    """Budget sparsemax along ``dim``: ``clip(x - τ, 0, 1)`` summing to ``budget``.

    Parameters
    ----------
    X : tensor, shape (..., n, ...)
        Scores; ``-inf`` marks a masked entry.
    budget : float in [0, n], or tensor broadcastable to (..., 1, ...), 1 along dim
        The sum of each slice's output. No gradient flows to a tensor budget.
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        The package's number of bisections; checked, no effect on accuracy.

    Returns
    -------
    tensor, same shape as ``X``
        Values in [0, 1] summing to ``budget`` along ``dim``.

    Implements
    ----------
    ``argmax ⟨p, x⟩ - ½‖p‖²`` subject to ``0 ≤ p ≤ 1``, ``Σ p = budget`` (the
    ``entmax`` package's budget sparsemax), by bisection on τ.
    """
    _check_n_iter(n_iter)
    X, dim = _check_scores(X, dim, "X")
    n = X.shape[dim]
    if isinstance(budget, torch.Tensor):
        if budget.requires_grad:
            raise ValueError(
                "budget_bisect has no gradient in budget: pass it detached"
            )
        budget = _aligned(budget, X, dim, "budget")
        check_on_device(
            (~torch.isfinite(budget) | (budget < 0) | (budget > n)).any(),
            f"budget must hold finite values in [0, {n}] (the size of dim)",
        )
    elif (
        isinstance(budget, bool)
        or not isinstance(budget, numbers.Real)
        or not 0 <= budget <= n
    ):
        raise ValueError(f"budget must be a number in [0, {n}], got {budget!r}")
    if X.numel() == 0:
        return X.clone()
    return _along_last(
        lambda x, b: _rowwise(_normmax.budget_rows, x, b), X, dim, budget
    )


# ------------------------------------------------------ thresholds (private, as there)
def _sparsemax_threshold_and_support(X, dim: int = -1, k=None):
    """τ with ``Σ [X - τ]₊ = 1`` along ``dim`` and the support size (both kept along
    ``dim``), as the package's private helper returns them; ``k`` changes nothing."""
    _check_k(k)
    p, size = sparsemax(X, dim, return_support_size=True)
    X = torch.as_tensor(X)
    tau = (torch.where(p > 0, X, 0).sum(dim, keepdim=True) - 1) / size.to(X.dtype)
    return tau, size


def _entmax_threshold_and_support(X, dim: int = -1, k=None):
    """τ with ``Σ [X - τ]₊² = 1`` along ``dim`` and the support size, as the package's
    private helper (whose ``X`` is already halved); ``k`` changes nothing."""
    _check_k(k)
    X = torch.as_tensor(X)
    p, size = entmax15(2 * X, dim, return_support_size=True)
    tau = torch.where(p > 0, X - p.sqrt(), 0).sum(dim, keepdim=True) / size.to(X.dtype)
    return tau, size


# -------------------------------------------------------------------------- modules
class SparsemaxBisect(nn.Module):
    """:func:`sparsemax_bisect` along ``dim`` as a module (the package's signature).

    Parameters
    ----------
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        Checked, no effect.

    Implements
    ----------
    :func:`sparsemax_bisect` as a module.
    """

    def __init__(self, dim: int = -1, n_iter=None):
        super().__init__()
        self.dim, self.n_iter = dim, _check_n_iter(n_iter)

    def forward(self, X) -> torch.Tensor:
        """:func:`sparsemax_bisect` of ``X`` along ``self.dim``.

        Parameters
        ----------
        X : tensor, shape (..., n, ...)
            Scores.

        Returns
        -------
        tensor, same shape
            Probabilities.
        """
        return sparsemax_bisect(X, dim=self.dim, n_iter=self.n_iter)


class _WithIndex(nn.Module):
    """A bisection map's module with its index (α or budget) as the package keeps it:
    a number, or a tensor that moves with the module (a parameter stays learnable)."""

    def __init__(self, name: str, value, dim: int, n_iter):
        super().__init__()
        self.dim, self.n_iter, self._name = dim, _check_n_iter(n_iter), name
        if isinstance(value, nn.Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, torch.Tensor):  # not in the state dict, as there
            self.register_buffer(name, value, persistent=False)
        else:
            setattr(self, name, value)

    def extra_repr(self) -> str:
        return f"{self._name}={getattr(self, self._name)}, dim={self.dim}"


class EntmaxBisect(_WithIndex):
    """:func:`entmax_bisect` along ``dim`` as a module (the package's signature).

    Parameters
    ----------
    alpha : float > 0, or tensor broadcastable to (..., 1, ...) (size 1 along dim)
        The Tsallis index; an ``nn.Parameter`` is registered and learned.
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        Checked, no effect on accuracy.

    Implements
    ----------
    :func:`entmax_bisect` as a module.
    """

    def __init__(self, alpha=1.5, dim: int = -1, n_iter=50):
        super().__init__("alpha", alpha, dim, n_iter)

    def forward(self, X) -> torch.Tensor:
        """:func:`entmax_bisect` of ``X`` at ``self.alpha`` along ``self.dim``.

        Parameters
        ----------
        X : tensor, shape (..., n, ...)
            Scores.

        Returns
        -------
        tensor, same shape
            Probabilities.
        """
        return entmax_bisect(X, alpha=self.alpha, dim=self.dim, n_iter=self.n_iter)


class NormmaxBisect(_WithIndex):
    """:func:`normmax_bisect` along ``dim`` as a module (the package's signature).

    Parameters
    ----------
    alpha : float > 1, or tensor broadcastable to (..., 1, ...) (size 1 along dim)
        The norm's index (no gradient flows to it).
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        Checked, no effect on accuracy.

    Implements
    ----------
    :func:`normmax_bisect` as a module.
    """

    def __init__(self, alpha=2, dim: int = -1, n_iter=50):
        super().__init__("alpha", alpha, dim, n_iter)

    def forward(self, X) -> torch.Tensor:
        """:func:`normmax_bisect` of ``X`` at ``self.alpha`` along ``self.dim``.

        Parameters
        ----------
        X : tensor, shape (..., n, ...)
            Scores.

        Returns
        -------
        tensor, same shape
            Probabilities.
        """
        return normmax_bisect(X, alpha=self.alpha, dim=self.dim, n_iter=self.n_iter)


class BudgetBisect(_WithIndex):
    """:func:`budget_bisect` along ``dim`` as a module (the package's signature).

    Parameters
    ----------
    budget : float, or tensor broadcastable to (..., 1, ...) (size 1 along dim)
        The sum of each slice's output.
    dim : int
        The dimension that is normalised.
    n_iter : int or None
        Checked, no effect on accuracy.

    Implements
    ----------
    :func:`budget_bisect` as a module.
    """

    def __init__(self, budget=2, dim: int = -1, n_iter=50):
        super().__init__("budget", budget, dim, n_iter)

    def forward(self, X) -> torch.Tensor:
        """:func:`budget_bisect` of ``X`` with ``self.budget`` along ``self.dim``.

        Parameters
        ----------
        X : tensor, shape (..., n, ...)
            Scores.

        Returns
        -------
        tensor, same shape
            Values in [0, 1] summing to the budget.
        """
        return budget_bisect(X, budget=self.budget, dim=self.dim, n_iter=self.n_iter)
