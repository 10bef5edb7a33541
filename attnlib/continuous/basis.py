"""Value functions: Gaussian radial basis functions and the tokens' ridge fit on them.

The values of continuous attention are a function ``V(t) = Bᵀψ(t)`` of a position: N
basis functions ψ and coefficients ``B`` (``N × D``, one row per basis function, as
tokens are rows) fitted to the discrete tokens by ridge regression, Eq. (16) of Martins
et al. (2020).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..utils import as_tensor, check_int, check_positive, check_real
from .densities import _common, _positive, _work_dtype

__all__ = ["GaussianRBF", "ridge_value_coefficients"]


def _interval(low, high) -> tuple[float, float]:
    """``low < high``, both finite."""
    low, high = check_real(low, "low"), check_real(high, "high")
    if not low < high:
        raise ValueError(f"low must be below high, got low={low} and high={high}")
    return low, high


def _deviations(sigmas) -> list[float]:
    """``sigmas`` checked once: positive, their squares finite in the default dtype."""
    # Their array would read True as 1.0.
    if isinstance(sigmas, (list, tuple)) and any(
        isinstance(s, (bool, np.bool_)) for s in sigmas
    ):
        raise ValueError(f"sigmas must hold numbers, got {sigmas!r}")
    checked = as_tensor(sigmas, "sigmas", ndim=1, dtype=torch.float64)
    if (checked <= 0).any():
        raise ValueError(f"sigmas must be positive, got {sigmas!r}")
    # (torch.full would raise a RuntimeError for a square its dtype cannot hold.)
    if checked.max() > math.sqrt(torch.finfo(torch.get_default_dtype()).max):
        raise ValueError(f"sigmas are too large for the variances: {sigmas}")
    return checked.tolist()


def _representable(mu: torch.Tensor, sigma2: torch.Tensor, name: str):
    """Centres and variances built from checked numbers, refused where their dtype
    made them NaN, 0 or inf (``high - low`` or a variance overflowing, or underflowing).
    """
    if not torch.isfinite(mu).all():
        raise ValueError(
            f"low and high are too far apart for {mu.dtype}: the centres overflow"
        )
    if not (torch.isfinite(sigma2).all() and (sigma2 > 0).all()):
        raise ValueError(
            f"{name} must be positive and finite in {sigma2.dtype}, got variances "
            f"from {sigma2.min().item():.3g} to {sigma2.max().item():.3g}"
        )
    return mu, sigma2


class GaussianRBF:
    """N isotropic Gaussian RBFs ``ψ_j(t) = N(t; μ_j, σ_j² I)`` on ``R^d`` (d = 1 or 2).

    Parameters
    ----------
    mu : array-like, shape (N,) or (N, d)
        Centres.
    sigma2 : float or array-like of shape (N,)
        Positive variances (one number is shared by every function).

    Attributes
    ----------
    mu : tensor, shape (N,) in 1-D or (N, 2) in 2-D
    sigma2 : tensor, shape (N,)
    dim : int
        1 or 2.

    Implements
    ----------
    The Gaussian RBFs ``ψ_j(t) = N(t; μ_j, Σ_j)`` of the value function
    ``V_B(t) = Bψ(t)`` of the sparse-and-continuous attention paper (Algorithm 1,
    §3.2), with ``Σ_j = σ_j² I``.
    """

    def __init__(self, mu, sigma2):
        mu = as_tensor(mu, "mu", min_ndim=1)
        if mu.ndim > 2 or (mu.ndim == 2 and mu.shape[1] not in (1, 2)):
            raise ValueError(
                "mu must have shape (N,) or (N, d) with d in (1, 2), got "
                f"{tuple(mu.shape)}"
            )
        if mu.ndim == 2 and mu.shape[1] == 1:
            mu = mu[:, 0]
        sigma2 = _positive(sigma2, "sigma2", mu)
        if sigma2.ndim > 1 or sigma2.numel() not in (1, mu.shape[0]):
            raise ValueError(
                f"sigma2 must be a number or have shape ({mu.shape[0]},), "
                f"got {tuple(sigma2.shape)}"
            )
        mu, sigma2 = _common(mu, sigma2)
        self._hold(mu, sigma2.expand(mu.shape[0]).clone())

    def _hold(self, mu: torch.Tensor, sigma2: torch.Tensor) -> None:
        """Keep checked centres and variances ``(N,)`` of one dtype."""
        self.mu, self.sigma2 = mu, sigma2
        self.dim = 1 if mu.ndim == 1 else 2

    @classmethod
    def _trusted(cls, mu: torch.Tensor, sigma2: torch.Tensor) -> GaussianRBF:
        """A basis of checked centres and variances, not checked again (a subclass's
        constructor runs as written)."""
        if cls is not GaussianRBF:
            return cls(mu, sigma2)
        basis = cls.__new__(cls)
        basis._hold(mu, sigma2)
        return basis

    def __len__(self) -> int:
        return self.mu.shape[0]

    def __repr__(self) -> str:
        return f"GaussianRBF(N={len(self)}, dim={self.dim})"

    @classmethod
    def linspace(
        cls, n: int, sigmas=(0.1, 0.5), low: float = 0.0, high: float = 1.0
    ) -> GaussianRBF:
        """``n`` 1-D functions, ``n // len(sigmas)`` per entry of ``sigmas``.

        For each standard deviation, the centres lie evenly in ``[low, high]``.
        """
        sigmas = _deviations(sigmas)
        low, high = _interval(low, high)
        n = check_int(n, "n", minimum=len(sigmas))
        per = [n // len(sigmas) + (i < n % len(sigmas)) for i in range(len(sigmas))]
        mu = torch.cat([torch.linspace(low, high, k) for k in per])
        sigma2 = torch.cat(
            [torch.full((k,), float(s) ** 2) for k, s in zip(per, sigmas)]
        )
        return cls._trusted(*_representable(mu, sigma2, "sigmas"))

    @classmethod
    def grid(
        cls, n_side: int, sigma2: float = 1e-3, low: float = 0.0, high: float = 1.0
    ) -> GaussianRBF:
        """``n_side²`` 2-D functions of variance ``sigma2``, centred on a grid.

        The centres lie on a regular grid of ``[low, high]²``.
        """
        n_side = check_int(n_side, "n_side")
        low, high = _interval(low, high)
        axis = torch.linspace(low, high, n_side)
        rows, cols = torch.meshgrid(axis, axis, indexing="ij")
        mu = torch.stack([rows.flatten(), cols.flatten()], -1)
        sigma2 = torch.tensor(check_positive(sigma2, "sigma2"), dtype=mu.dtype)
        sigma2 = sigma2.expand(mu.shape[0]).clone()
        return cls._trusted(*_representable(mu, sigma2, "sigma2"))

    def params(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Centres and variances in ``like``'s dtype and device."""
        return self.mu.to(like), self.sigma2.to(like)

    def __call__(self, t) -> torch.Tensor:
        """Evaluate every function at ``t`` ``(...,)`` (1-D) or ``(..., 2)``.

        Returns the values ``(..., N)``.
        """
        t = as_tensor(t, "t", min_ndim=0 if self.dim == 1 else 1)
        if self.dim == 2 and t.shape[-1] != 2:
            raise ValueError(
                f"t must have shape (..., 2) for a 2-D basis, got {tuple(t.shape)}"
            )
        return self._values(t.to(torch.promote_types(t.dtype, self.mu.dtype)))

    def _values(self, t: torch.Tensor) -> torch.Tensor:
        """:meth:`__call__` of checked ``t``, in a dtype at least the basis's."""
        mu, s2 = self.params(t)
        if self.dim == 1:
            sq, d = (t.unsqueeze(-1) - mu) ** 2, 1
        else:
            sq, d = ((t.unsqueeze(-2) - mu) ** 2).sum(-1), 2
        return torch.exp(-0.5 * sq / s2 - 0.5 * d * torch.log(2 * math.pi * s2))


def _check_basis(basis, dim: int) -> GaussianRBF:
    if not isinstance(basis, GaussianRBF):
        raise ValueError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    if basis.dim != dim:
        raise ValueError(
            f"basis must be {dim}-D for this function, got a {basis.dim}-D basis"
        )
    return basis


def ridge_value_coefficients(
    H, positions, basis: GaussianRBF, lam: float = 1e-3
) -> torch.Tensor:
    """Fit the value function ``V(t) = Bᵀψ(t)`` to tokens ``H`` at ``positions``.

    The fit is by ridge regression.

    With ``F[l, j] = ψ_j(t_l)`` (``L × N``), ``B = (FᵀF + λI)⁻¹ FᵀH``: the transpose of
    the paper's ``B = H G`` with ``G = Fᵀ(FFᵀ + λI)⁻¹`` written for tokens in columns.

    Parameters
    ----------
    H : tensor, shape (..., L, D)
        Token representations, one per row.
    positions : tensor, shape (L,) in 1-D or (L, 2) in 2-D
        Where each token sits (``[0, 1]`` or ``[0, 1]²``).
    basis : GaussianRBF
        The N basis functions.
    lam : float
        Positive ridge penalty.

    Returns
    -------
    torch.Tensor, shape (..., N, D)
        The coefficients ``B``, one row per basis function.

    Implements
    ----------
    Eq. (16) of the sparse-and-continuous attention paper.
    """
    H = as_tensor(H, "H", min_ndim=2)
    if not isinstance(basis, GaussianRBF):
        raise ValueError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    positions = as_tensor(positions, "positions", ndim=basis.dim, device=H.device)
    if basis.dim == 2 and positions.shape[-1] != 2:
        raise ValueError(
            f"positions must have shape (L, 2) for a 2-D basis, got "
            f"{tuple(positions.shape)}"
        )
    H, positions = _common(H, positions)
    if positions.shape[0] != H.shape[-2]:
        raise ValueError(
            f"positions must have one row per token ({H.shape[-2]}), got "
            f"{positions.shape[0]}"
        )
    return _ridge_value_coefficients(H, positions, basis, check_positive(lam, "lam"))


def _ridge_value_coefficients(
    H: torch.Tensor, positions: torch.Tensor, basis: GaussianRBF, lam: float
) -> torch.Tensor:
    """:func:`ridge_value_coefficients` of checked inputs of one dtype and device."""
    work = _work_dtype(H.dtype)
    G = _ridge_operator(positions, basis, lam)  # (N, L): depends on the positions only
    return (G.to(work) @ H.to(work)).to(torch.promote_types(H.dtype, work))


def _ridge_operator(positions, basis: GaussianRBF, lam: float) -> torch.Tensor:
    # FᵀF + λI is ill-conditioned at the chapter's settings (cond 5e6–2e7 for L = 256,
    # N = 32–128), so a float32 solve loses most digits of B (28–190 % of its largest
    # entry). The operator G = (FᵀF + λI)⁻¹Fᵀ depends on the positions only: it is
    # solved in float64 by Cholesky and applied to H in H's dtype (relative error of B
    # in float32: ~2e-7 on noise-like tokens, up to ~5e-5 on smooth or constant ones,
    # whose coefficients cancel). A device without float64 (MPS) has G solved on the
    # CPU: a small N × L matrix that never carries a gradient.
    device = positions.device
    if device.type == "mps":
        positions = positions.cpu()
    F = basis._values(positions.to(torch.float64)).to(torch.float64)
    eye = torch.eye(F.shape[1], dtype=F.dtype, device=F.device)
    chol = torch.linalg.cholesky(F.T @ F + lam * eye)
    G = torch.cholesky_solve(F.T.contiguous(), chol)
    return G.to(torch.float32).to(device) if device.type == "mps" else G
