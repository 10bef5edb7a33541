"""The continuous-attention layers, which read out a density.

The density comes from an encoder or from discrete weights.

Implements the 1-D and 2-D attention models of §3.1 and §4 of Martins et al. (2020).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from ..utils import as_tensor, check_int, check_on_device, check_positive
from ..utils.boundary import checking, public
from ..utils.validation import module_input
from .attention import _continuous_attention_1d, _continuous_attention_2d
from .basis import GaussianRBF, _check_basis, _ridge_value_coefficients
from .densities import _check_spd, _common, check_alpha

__all__ = [
    "ContinuousAttention1D",
    "ContinuousAttention2D",
    "ContinuousAttentionOutput",
]


# --------------------------------------------------------------------------- modules


class ContinuousAttentionOutput(NamedTuple):
    """What the continuous-attention modules return."""

    context: torch.Tensor  # (batch, D): E_p[V(t)]
    mu: torch.Tensor  # (batch,) or (batch, 2)
    sigma2: torch.Tensor  # (batch,) in 1-D, Σ (batch, 2, 2) in 2-D
    r: torch.Tensor  # (batch, N): E_p[ψ(t)]


class _Setting:
    """A hyper-parameter checked when it is set, not at every forward pass."""

    def __init__(self, check):
        self.check = check

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, module, owner=None):
        return self if module is None else module.__dict__["_" + self.name]

    def __set__(self, module, value):
        module.__dict__["_" + self.name] = self.check(value, self.name)


class _ContinuousAttention(nn.Module):
    alpha = _Setting(lambda value, name: check_alpha(value))
    lam = _Setting(check_positive)
    min_var = _Setting(check_positive)

    def __init__(
        self, basis: GaussianRBF, dim: int, in_features, alpha, lam, min_var, n_params
    ):
        super().__init__()
        self.basis = _check_basis(basis, dim)
        self.alpha, self.lam, self.min_var = alpha, lam, min_var
        self.head = (
            None
            if in_features is None
            else nn.Linear(check_int(in_features, "in_features"), n_params)
        )

    def _tokens(self, H, ndim: int) -> torch.Tensor:
        if not checking():  # a classifier of attnlib hands its own features
            return H
        # With an encoder head, H feeds its Linear: it must have the head's dtype.
        if self.head is None:
            return as_tensor(H, "H", ndim=ndim)
        return module_input(H, "H", self.head.weight, ndim=ndim)

    def _inputs(self, H, positions, weights):
        """``H``, ``positions`` and checked ``weights`` (or None) in one dtype."""
        if (weights is None) == (self.head is None):
            raise ValueError(
                "pass weights (moment matching) if and only if the module was built "
                "without in_features"
            )
        if weights is not None:
            if checking():
                weights = as_tensor(weights, "weights", ndim=2, device=H.device)
            H, weights = _common(H, weights)
            if checking():
                self._check_weights(H, weights)
        elif H.shape[-1] != self.head.in_features:
            raise ValueError(
                f"H must have {self.head.in_features} features, got {H.shape[-1]}"
            )
        return H, positions.to(H.dtype), weights

    @staticmethod
    def _check_weights(H, weights) -> None:
        """Refuse weights that are not a distribution over the rows of ``H``."""
        if weights.shape != H.shape[:2]:
            raise ValueError(
                f"weights must have shape {tuple(H.shape[:2])}, got "
                f"{tuple(weights.shape)}"
            )
        # Moment matching reads them as a distribution over the positions.
        # (loose enough for gradcheck's finite differences, 1e-6 a step)
        tol = max(torch.finfo(weights.dtype).eps ** 0.5, 1e-4)
        check_on_device(
            (weights < 0).any() | ((weights.sum(-1) - 1).abs() > tol).any(),
            "weights must be non-negative and sum to one along each row (discrete "
            f"attention weights; within {tol:.1g})",
        )

    def _context(self, H, positions, r):
        B = _ridge_value_coefficients(H, positions, self.basis, self.lam)
        return (r.unsqueeze(-2) @ B).squeeze(-2)

    @staticmethod
    def _finite(H, mu, spread) -> None:
        """Refuse a density whose parameters are NaN or infinite."""
        if not (torch.isfinite(mu).all() and torch.isfinite(spread).all()):
            raise ValueError(
                "the density's parameters are NaN or infinite: H is too large for "
                f"{H.dtype} (rescale it) or the module's weights are not finite"
            )
        if spread.ndim == mu.ndim and not (spread > 0).all():  # 1-D: σ² itself
            raise ValueError(
                f"the density's variance is 0 in {spread.dtype}: min_var is below what "
                "it holds, or H drives the variance head to -inf (rescale it)"
            )


class ContinuousAttention1D(_ContinuousAttention):
    """Continuous attention over a sequence placed on ``[0, 1]``.

    The density's ``(μ, σ²)`` come either from an encoder summary (``in_features``
    given: ``μ = sigmoid(w₁ᵀv)``, ``σ² = softplus(w₂ᵀv)`` with ``v`` the max-pool of the
    tokens) or, in the *combined* variant, from discrete attention weights by moment
    matching (``μ = E_w[t]``, ``σ² = E_w[t²] - μ²``). The values are the tokens fitted
    by ridge regression on the basis, and the context is ``Bᵀ r`` with ``r`` from
    :func:`continuous_attention_1d`.

    Parameters
    ----------
    basis : GaussianRBF
        1-D basis of N functions.
    in_features : int, optional
        Token size D for the encoder variant; None for moment matching.
    alpha : {1, 2}
        Continuous softmax or sparsemax.
    lam : float
        Ridge penalty of Eq. (16).
    min_var : float
        Floor added to σ² so the density never collapses to a point.

    Implements
    ----------
    §3.1 and the continuous and combined document-classification models of §4 of the
    sparse-and-continuous attention paper.
    """

    def __init__(
        self,
        basis: GaussianRBF,
        in_features: int | None = None,
        *,
        alpha: int = 1,
        lam: float = 1e-3,
        min_var: float = 1e-4,
    ):
        super().__init__(basis, 1, in_features, alpha, lam, min_var, 2)

    @public
    def forward(self, H, weights=None) -> ContinuousAttentionOutput:
        """Attend over tokens ``H`` at evenly spaced positions of ``[0, 1]``.

        Parameters
        ----------
        H : tensor or array-like, shape (batch, L, D)
            The tokens, one per row; with an encoder head, a tensor must have the
            module's dtype.
        weights : tensor or array-like, shape (batch, L), optional
            Discrete attention to moment-match (combined variant); required exactly
            when the module was built without ``in_features``.

        Returns
        -------
        ContinuousAttentionOutput
            ``context`` ``(batch, D)``, the density's parameters, ``r`` ``(batch, N)``.
        """
        H = self._tokens(H, 3)
        positions = torch.linspace(0, 1, H.shape[1], dtype=H.dtype, device=H.device)
        H, positions, weights = self._inputs(H, positions, weights)
        if weights is None:
            a, b = self.head(H.amax(1)).unbind(-1)
            mu, var = torch.sigmoid(a), nn.functional.softplus(b)
        else:
            mu = weights @ positions
            var = (weights @ positions**2 - mu**2).clamp_min(0)
        sigma2 = var + self.min_var
        self._finite(H, mu, sigma2)
        r = _continuous_attention_1d(mu, sigma2, self.basis, self.alpha)
        return ContinuousAttentionOutput(self._context(H, positions, r), mu, sigma2, r)


class ContinuousAttention2D(_ContinuousAttention):
    """Continuous attention over an image's grid of feature vectors on ``[0, 1]²``.

    As :class:`ContinuousAttention1D`, with ``μ = sigmoid(W₁v)`` and
    ``Σ = LLᵀ + min_var·I`` from a Cholesky factor with softplus diagonal (encoder
    variant), or ``μ`` and ``Σ`` the mean and covariance of discrete attention over the
    grid cells (combined variant).

    Parameters
    ----------
    basis : GaussianRBF
        2-D basis of N functions.
    in_features, alpha, lam, min_var : int or None, int, float, float
        As in :class:`ContinuousAttention1D`.
    n_angles : int
        Gauss–Legendre nodes for α = 2 (see :func:`continuous_attention_2d`).

    Implements
    ----------
    §3.1 and the 2-D (visual question answering) models of §4 of the
    sparse-and-continuous attention paper.
    """

    n_angles = _Setting(lambda value, name: check_int(value, name, minimum=8))

    def __init__(
        self,
        basis: GaussianRBF,
        in_features: int | None = None,
        *,
        alpha: int = 1,
        lam: float = 1e-3,
        min_var: float = 1e-4,
        n_angles: int = 48,
    ):
        super().__init__(basis, 2, in_features, alpha, lam, min_var, 5)
        self.n_angles = n_angles

    @staticmethod
    def grid_positions(
        height: int, width: int, dtype=None, device=None
    ) -> torch.Tensor:
        """Cell centres of a ``height × width`` grid in ``[0, 1]²``, row-major.

        As ``(row, col)`` rows: ``(height·width, 2)``.
        """
        height, width = check_int(height, "height"), check_int(width, "width")
        return _grid_positions(height, width, dtype, device)

    @public
    def forward(self, H, weights=None) -> ContinuousAttentionOutput:
        """Attend over a feature map ``H`` placed on ``[0, 1]²``.

        Parameters
        ----------
        H : tensor or array-like, shape (batch, height, width, D)
            The feature vectors of the grid's cells; with an encoder head, a tensor must
            have the module's dtype.
        weights : tensor or array-like, shape (batch, height·width), optional
            Discrete attention over the cells (row-major) to moment-match (combined
            variant); required exactly when the module was built without
            ``in_features``.

        Returns
        -------
        ContinuousAttentionOutput
            ``context`` ``(batch, D)``, ``mu``, ``Sigma`` and ``r`` ``(batch, N)``.
        """
        H = self._tokens(H, 4)
        positions = _grid_positions(H.shape[1], H.shape[2], H.dtype, H.device)
        H, positions, weights = self._inputs(H.flatten(1, 2), positions, weights)
        eye = torch.eye(2, dtype=H.dtype, device=H.device)
        if weights is None:
            p = self.head(H.amax(1))
            mu = torch.sigmoid(p[:, :2])
            d1, d2 = nn.functional.softplus(p[:, 2]), nn.functional.softplus(p[:, 3])
            Lc = torch.stack(
                [
                    torch.stack([d1, torch.zeros_like(d1)], -1),
                    torch.stack([p[:, 4], d2], -1),
                ],
                -2,
            )
            cov = Lc @ Lc.transpose(-1, -2)
        else:
            mu = weights @ positions
            centred = positions - mu.unsqueeze(-2)
            cov = torch.einsum("bl,bli,blj->bij", weights, centred, centred)
        Sigma = cov + self.min_var * eye
        self._finite(H, mu, Sigma)
        # Its symmetric part, refused if rounding left it indefinite.
        spd = _check_spd(Sigma, "Sigma", 2)
        r = _continuous_attention_2d(mu, spd, self.basis, self.alpha, self.n_angles)
        return ContinuousAttentionOutput(self._context(H, positions, r), mu, Sigma, r)


def _grid_positions(height: int, width: int, dtype, device) -> torch.Tensor:
    """:meth:`ContinuousAttention2D.grid_positions` of checked sizes."""
    rows = (torch.arange(height, dtype=dtype, device=device) + 0.5) / height
    cols = (torch.arange(width, dtype=dtype, device=device) + 0.5) / width
    return torch.stack(torch.meshgrid(rows, cols, indexing="ij"), -1).reshape(-1, 2)
