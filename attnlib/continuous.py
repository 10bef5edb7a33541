"""Continuous attention: the weights are a density over time or space, the context an expectation.

The score is a function ``f(t) = -(t - μ)ᵀ Σ⁻¹ (t - μ) / 2`` of a position ``t`` (a point of
``[0, 1]`` for a document, of ``[0, 1]²`` for an image). Softmax (α = 1) turns it into a
Gaussian density, sparsemax (α = 2) into a truncated parabola or paraboloid whose support is
an interval or an ellipse. The values are a function ``V(t) = Bᵀ ψ(t)`` of N Gaussian radial
basis functions ``ψ``, fitted to the discrete tokens by ridge regression, so the context
vector ``E_p[V(t)] = Bᵀ r`` needs only ``r = E_p[ψ(t)]``, an N-vector computed here in closed
form (or, for the 2-D truncated paraboloid, by one short Gauss–Legendre sum along the ellipse's
major axis over closed-form chord integrals), with a
backward pass given by the generalised covariance of Proposition 3 of Martins et al. (2020).

Shapes follow the book's conventions: a batch of densities has ``mu`` of shape ``(batch,)``
(1-D) or ``(batch, 2)`` (2-D) and returns ``r`` of shape ``(batch, N)``; tokens are rows, so
the value coefficients ``B`` are ``(..., N, D)``.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np
import torch
from scipy.optimize import brentq
from torch import nn
from torch.special import ndtr

from .utils import as_tensor, check_int, check_positive

__all__ = [
    "gaussian_pdf",
    "truncated_parabola_pdf",
    "triangular_pdf",
    "location_scale_pdf",
    "truncated_paraboloid_pdf",
    "truncated_paraboloid_lambda",
    "GaussianRBF",
    "ridge_value_coefficients",
    "continuous_attention_1d",
    "continuous_attention_2d",
    "generalized_covariance_1d",
    "generalized_covariance_2d",
    "ContinuousAttention1D",
    "ContinuousAttention2D",
    "ContinuousAttentionOutput",
    "span_documents",
    "DocumentClassifier",
    "cluttered_digits",
    "DigitClassifier",
    "accuracy",
    "fit_classifier",
]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# --------------------------------------------------------------------------- validation


def _like(x, name: str, like: torch.Tensor, min_ndim: int = 0) -> torch.Tensor:
    """``x`` as a tensor of ``like``'s dtype and device (Python floats converted directly, without a float32 detour)."""
    if not isinstance(x, torch.Tensor) and np.ndim(x) == 0 and isinstance(x, (int, float, np.number)):
        x = torch.tensor(float(x), dtype=like.dtype, device=like.device)
    return as_tensor(x, name, min_ndim=min_ndim, dtype=like.dtype, device=like.device)


def _positive(x, name: str, like: torch.Tensor | None = None) -> torch.Tensor:
    x = as_tensor(x, name, min_ndim=0) if like is None else _like(x, name, like)
    if (x <= 0).any():
        raise ValueError(f"{name} must be positive everywhere, got a minimum of {x.min().item():.3g}")
    return x


def _alpha(alpha) -> int:
    if alpha not in (1, 2):
        raise ValueError(f"alpha must be 1 (softmax: Gaussian) or 2 (sparsemax: truncated paraboloid), got {alpha!r}")
    return int(alpha)


def _spd(Sigma, name: str, d: int, like: torch.Tensor) -> torch.Tensor:
    """Check a batch of ``d × d`` covariances; return their symmetric part."""
    Sigma = as_tensor(Sigma, name, min_ndim=2, dtype=like.dtype, device=like.device)
    if Sigma.shape[-2:] != (d, d):
        raise ValueError(f"{name} must have shape (..., {d}, {d}), got {tuple(Sigma.shape)}")
    Sigma = 0.5 * (Sigma + Sigma.transpose(-1, -2))
    if (torch.linalg.cholesky_ex(Sigma).info != 0).any():
        raise ValueError(f"{name} must be symmetric positive definite")
    return Sigma


# --------------------------------------------------------------------------- densities


def gaussian_pdf(t, mu, sigma2) -> torch.Tensor:
    """The Gaussian density ``N(t; μ, σ²)``, the continuous softmax of ``-(t-μ)²/(2σ²)``.

    Parameters
    ----------
    t, mu, sigma2 : tensors or array-likes, broadcastable
        Points, means and (positive) variances.

    Returns
    -------
    tensor of the broadcast shape

    Implements
    ----------
    Eq. (2) of the sparse-and-continuous attention paper with ``f(t) = -(t-μ)²/(2σ²)``.
    """
    t = as_tensor(t, "t", min_ndim=0)
    mu = _like(mu, "mu", t)
    sigma2 = _positive(sigma2, "sigma2", t)
    return torch.exp(-0.5 * (t - mu) ** 2 / sigma2 - 0.5 * torch.log(sigma2) - _LOG_SQRT_2PI)


def truncated_parabola_pdf(t, mu, sigma2) -> torch.Tensor:
    """The truncated parabola ``TP(t; μ, σ²) = [-(t-μ)²/(2σ²) - λ]₊``, the continuous sparsemax.

    ``λ = -½ (3 / (2σ))^(2/3)`` makes it integrate to one; the support is
    ``|t - μ| ≤ (3σ²/2)^(1/3)``.

    Parameters
    ----------
    t, mu, sigma2 : tensors or array-likes, broadcastable
        Points, means and (positive) scale parameters σ².

    Returns
    -------
    tensor of the broadcast shape

    Implements
    ----------
    Eq. (10) of the sparse-and-continuous attention paper.
    """
    t = as_tensor(t, "t", min_ndim=0)
    mu = _like(mu, "mu", t)
    sigma2 = _positive(sigma2, "sigma2", t)
    lam = -0.5 * (1.5 / torch.sqrt(sigma2)) ** (2 / 3)
    return torch.clamp(-((t - mu) ** 2) / (2 * sigma2) - lam, min=0)


def triangular_pdf(t, mu, b) -> torch.Tensor:
    """The triangular density ``[-λ - |t-μ|/b]₊`` with ``λ = -1/√b``: continuous sparsemax of a Laplace score.

    Parameters
    ----------
    t, mu, b : tensors or array-likes, broadcastable
        Points, locations and (positive) scales.

    Returns
    -------
    tensor of the broadcast shape

    Implements
    ----------
    Eq. (12) of the sparse-and-continuous attention paper.
    """
    t = as_tensor(t, "t", min_ndim=0)
    mu = _like(mu, "mu", t)
    b = _positive(b, "b", t)
    return torch.clamp(1 / torch.sqrt(b) - (t - mu).abs() / b, min=0)


def location_scale_pdf(t, mu, sigma, g: Callable, dg: Callable | None = None) -> torch.Tensor:
    """Continuous sparsemax of the location-scale score ``f(t) = -g'(|t-μ|/σ)/σ``.

    The density is ``[-λ - g'(|t-μ|/σ)/σ]₊`` with ``λ = -g'(a)/σ``, where ``a`` solves
    ``a g'(a) - g(a) + g(0) = ½`` (found with :func:`scipy.optimize.brentq`). ``g(u) = u²/2``
    gives the triangular density with ``b = σ²``, ``g(u) = u³/6`` the truncated parabola with
    ``σ²_TP = σ³``.

    Parameters
    ----------
    t, mu : tensors or array-likes, broadcastable
        Points and locations.
    sigma : float
        Positive scale.
    g : callable
        Convex, continuously differentiable ``g: [0, ∞) → R`` acting on floats.
    dg : callable, optional
        Its derivative; a central finite difference of ``g`` by default.

    Returns
    -------
    tensor of the broadcast shape of ``t`` and ``mu``

    Implements
    ----------
    Eq. (13) of the sparse-and-continuous attention paper.
    """
    if not callable(g) or (dg is not None and not callable(dg)):
        raise ValueError("g (and dg, if given) must be callables mapping a float to a float")
    sigma = check_positive(sigma, "sigma")
    t = as_tensor(t, "t", min_ndim=0)
    mu = _like(mu, "mu", t)
    if dg is None:
        def dg(u):
            h = 1e-6 * max(1.0, u)
            return (g(u + h) - g(max(u - h, 0.0))) / (u + h - max(u - h, 0.0))

    gap = lambda a: a * dg(a) - g(a) + g(0.0) - 0.5  # noqa: E731
    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if hi > 1e12:
            raise ValueError("a g'(a) - g(a) + g(0) = 1/2 has no solution: is g strongly convex?")
    a = brentq(gap, 0.0, hi, xtol=1e-14)
    u = ((t - mu).abs() / sigma).detach().cpu().numpy()
    score = torch.as_tensor(np.vectorize(dg, otypes=[float])(u), dtype=t.dtype, device=t.device)
    return torch.clamp((dg(a) - score) / sigma, min=0)


def truncated_paraboloid_lambda(Sigma) -> torch.Tensor:
    """The threshold ``λ = -(Γ(N/2 + 2) / √det(2πΣ))^(2/(N+2))`` of an N-dimensional truncated paraboloid.

    Implements
    ----------
    Eq. (11) of the sparse-and-continuous attention paper.
    """
    Sigma = as_tensor(Sigma, "Sigma", min_ndim=2)
    d = Sigma.shape[-1]
    Sigma = _spd(Sigma, "Sigma", d, Sigma)
    log_det = torch.linalg.slogdet(2 * math.pi * Sigma).logabsdet
    return -torch.exp((2 / (d + 2)) * (math.lgamma(d / 2 + 2) - 0.5 * log_det))


def truncated_paraboloid_pdf(t, mu, Sigma) -> torch.Tensor:
    """The N-dimensional truncated paraboloid ``[-λ - ½(t-μ)ᵀΣ⁻¹(t-μ)]₊``, sparsemax counterpart of ``N(μ, Σ)``.

    Parameters
    ----------
    t : tensor or array-like, shape (..., N)
        Points.
    mu : tensor or array-like, shape (..., N)
        Means, broadcastable against ``t``.
    Sigma : tensor or array-like, shape (..., N, N)
        Symmetric positive definite shape matrices, broadcastable against ``t``.

    Returns
    -------
    tensor of shape ``t.shape[:-1]`` (broadcast)

    Implements
    ----------
    Eq. (11) of the sparse-and-continuous attention paper.
    """
    t = as_tensor(t, "t", min_ndim=1)
    mu = as_tensor(mu, "mu", min_ndim=1, dtype=t.dtype, device=t.device)
    d = t.shape[-1]
    if mu.shape[-1] != d:
        raise ValueError(f"mu must have {d} coordinates like t, got shape {tuple(mu.shape)}")
    Sigma = _spd(Sigma, "Sigma", d, t)
    x = (t - mu).unsqueeze(-1)
    quad = (x * torch.linalg.solve(Sigma, x)).sum((-2, -1))
    return torch.clamp(-truncated_paraboloid_lambda(Sigma) - 0.5 * quad, min=0)


# --------------------------------------------------------------------------- value functions


class GaussianRBF:
    """N isotropic Gaussian radial basis functions ``ψ_j(t) = N(t; μ_j, σ_j² I)`` on ``R^d`` (d = 1 or 2).

    Parameters
    ----------
    mu : array-like, shape (N,) or (N, d)
        Centres.
    sigma2 : float or array-like of shape (N,)
        Positive variances.

    Attributes
    ----------
    mu : tensor, shape (N,) in 1-D or (N, 2) in 2-D
    sigma2 : tensor, shape (N,)
    dim : int
        1 or 2.
    """

    def __init__(self, mu, sigma2):
        mu = as_tensor(mu, "mu", min_ndim=1)
        if mu.ndim > 2 or (mu.ndim == 2 and mu.shape[1] not in (1, 2)):
            raise ValueError(f"mu must have shape (N,) or (N, d) with d in (1, 2), got {tuple(mu.shape)}")
        if mu.ndim == 2 and mu.shape[1] == 1:
            mu = mu[:, 0]
        sigma2 = _positive(sigma2, "sigma2", mu).expand(mu.shape[0]).clone()
        self.mu, self.sigma2 = mu, sigma2
        self.dim = 1 if mu.ndim == 1 else 2

    def __len__(self) -> int:
        return self.mu.shape[0]

    def __repr__(self) -> str:
        return f"GaussianRBF(N={len(self)}, dim={self.dim})"

    @classmethod
    def linspace(cls, n: int, sigmas=(0.1, 0.5), low: float = 0.0, high: float = 1.0) -> "GaussianRBF":
        """``n`` 1-D functions: for each standard deviation in ``sigmas``, ``n // len(sigmas)`` centres evenly in ``[low, high]``."""
        n = check_int(n, "n", minimum=len(sigmas))
        per = [n // len(sigmas) + (i < n % len(sigmas)) for i in range(len(sigmas))]
        mu = torch.cat([torch.linspace(low, high, k) for k in per])
        sigma2 = torch.cat([torch.full((k,), float(s) ** 2) for k, s in zip(per, sigmas)])
        return cls(mu, sigma2)

    @classmethod
    def grid(cls, n_side: int, sigma2: float = 1e-3, low: float = 0.0, high: float = 1.0) -> "GaussianRBF":
        """``n_side²`` 2-D functions of variance ``sigma2`` with centres on a regular grid of ``[low, high]²``."""
        n_side = check_int(n_side, "n_side")
        axis = torch.linspace(low, high, n_side)
        rows, cols = torch.meshgrid(axis, axis, indexing="ij")
        return cls(torch.stack([rows.flatten(), cols.flatten()], -1), check_positive(sigma2, "sigma2"))

    def params(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Centres and variances in ``like``'s dtype and device."""
        return self.mu.to(like), self.sigma2.to(like)

    def __call__(self, t) -> torch.Tensor:
        """Evaluate every function at points ``t`` of shape ``(...,)`` (1-D) or ``(..., 2)``: returns ``(..., N)``."""
        t = as_tensor(t, "t", min_ndim=0 if self.dim == 1 else 1)
        mu, s2 = self.params(t)
        if self.dim == 1:
            sq, d = (t.unsqueeze(-1) - mu) ** 2, 1
        else:
            if t.shape[-1] != 2:
                raise ValueError(f"t must have shape (..., 2) for a 2-D basis, got {tuple(t.shape)}")
            sq, d = ((t.unsqueeze(-2) - mu) ** 2).sum(-1), 2
        return torch.exp(-0.5 * sq / s2 - 0.5 * d * torch.log(2 * math.pi * s2))


def _check_basis(basis, dim: int) -> GaussianRBF:
    if not isinstance(basis, GaussianRBF):
        raise ValueError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    if basis.dim != dim:
        raise ValueError(f"basis must be {dim}-D for this function, got a {basis.dim}-D basis")
    return basis


def ridge_value_coefficients(H, positions, basis: GaussianRBF, lam: float = 1e-3) -> torch.Tensor:
    """Fit the value function ``V(t) = Bᵀψ(t)`` to tokens ``H`` at ``positions`` by ridge regression.

    With ``F[l, j] = ψ_j(t_l)`` (``L × N``), ``B = (FᵀF + λI)⁻¹ FᵀH``: the transpose of the
    paper's ``B = H G`` with ``G = Fᵀ(FFᵀ + λI)⁻¹`` written for tokens in columns.

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
    tensor, shape (..., N, D)

    Implements
    ----------
    Eq. (16) of the sparse-and-continuous attention paper.
    """
    H = as_tensor(H, "H", min_ndim=2)
    if not isinstance(basis, GaussianRBF):
        raise ValueError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    positions = as_tensor(positions, "positions", ndim=basis.dim, dtype=H.dtype, device=H.device)
    if positions.shape[0] != H.shape[-2]:
        raise ValueError(f"positions must have one row per token ({H.shape[-2]}), got {positions.shape[0]}")
    lam = check_positive(lam, "lam")
    F = basis(positions)
    gram = F.T @ F + lam * torch.eye(F.shape[1], dtype=H.dtype, device=H.device)
    G = torch.linalg.solve(gram, F.T)  # (N, L): depends on the positions only
    return G @ H


# --------------------------------------------------------------------------- 1-D closed forms


def _ndtr_diff(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``Φ(b) - Φ(a)`` for ``a ≤ b``, subtracting in whichever tail keeps precision."""
    upper = a > 0  # both ends in the upper tail: Φ(b) - Φ(a) = Φ(-a) - Φ(-b)
    return ndtr(torch.where(upper, -a, b)) - ndtr(torch.where(upper, -b, a))


def _normal_pdf(z: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * z * z - _LOG_SQRT_2PI)


def _interval_moments(lo, hi, m, s) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``∫_lo^hi x^k N(x; m, s²) dx`` for ``k = 0, 1, 2``, from erf and the normal density at the ends."""
    za, zb = (lo - m) / s, (hi - m) / s
    pa, pb = _normal_pdf(za), _normal_pdf(zb)
    J0 = _ndtr_diff(za, zb)  # ∫ z^k φ(z) dz over [za, zb], k = 0, 1, 2
    sJ1 = s * (pa - pb)
    sJ2 = s * s * (J0 + za * pa - zb * pb)
    # x = m + s z: the binomial expansion of x^k, in Horner form.
    return J0, m * J0 + sJ1, m * (m * J0 + 2 * sJ1) + sJ2


def _tp_radius(sigma2: torch.Tensor) -> torch.Tensor:
    """Half-width ``a = (3σ²/2)^(1/3)`` of the truncated parabola's support."""
    return (1.5 * sigma2) ** (1 / 3)


def _forward_1d(mu, sigma2, c_mu, c_s2, alpha: int) -> torch.Tensor:
    m = c_mu - mu.unsqueeze(-1)  # RBF centres relative to the density's mean
    s2 = sigma2.unsqueeze(-1)
    if alpha == 1:
        var = s2 + c_s2
        return torch.exp(-0.5 * m * m / var - 0.5 * torch.log(var) - _LOG_SQRT_2PI)
    a = _tp_radius(s2)
    M0, _, M2 = _interval_moments(-a, a, m, torch.sqrt(c_s2))
    # An expectation of ψ ≥ 0: a negative value is round-off of the difference, far from every RBF.
    return (a * a / (2 * s2) * M0 - M2 / (2 * s2)).clamp_min(0)


def generalized_covariance_1d(mu, sigma2, basis: GaussianRBF, alpha: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """``cov_{p,2-α}(x, ψ)`` and ``cov_{p,2-α}(x², ψ)`` with ``x = t - μ``, each ``(batch, N)``.

    For α = 1 the ordinary covariance under the Gaussian, from the product-of-Gaussians
    moments of Algorithm 1; for α = 2 the 0-covariance, ``∫_supp φψ - ∫_supp φ ∫_supp ψ / |supp|``,
    from Gaussian moments on the support interval. Centring ``φ = (t, t²)`` at μ changes
    the Jacobian by a fixed linear map only (see :func:`continuous_attention_1d`).

    Implements
    ----------
    Eq. (17) of the sparse-and-continuous attention paper, for Eq. (18).
    """
    mu, sigma2, basis, alpha = _check_1d(mu, sigma2, basis, alpha)
    return _cov_1d(mu, sigma2, *basis.params(mu), alpha)


def _cov_1d(mu, sigma2, c_mu, c_s2, alpha: int):
    m = c_mu - mu.unsqueeze(-1)
    s2 = sigma2.unsqueeze(-1)
    if alpha == 1:
        r = _forward_1d(mu, sigma2, c_mu, c_s2, 1)
        var = s2 + c_s2
        shift = s2 * m / var  # μ̃ - μ of the product density
        # σ̃² - σ² = -σ⁴/(σ² + σ_j²), written so that nothing cancels for narrow densities
        return r * shift, r * (shift * shift - s2 * s2 / var)
    a = _tp_radius(s2)
    M0, M1, M2 = _interval_moments(-a, a, m, torch.sqrt(c_s2))
    return M1, M2 - a * a / 3 * M0


def _f64(*xs):
    # The interval moments cancel catastrophically when the support is narrow next to an RBF:
    # compute in float64 whatever the input's precision, and cast the result back.
    return [x.double() for x in xs]


class _ContinuousAttention1D(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mu, sigma2, c_mu, c_s2, alpha):
        ctx.save_for_backward(mu, sigma2, c_mu, c_s2)
        ctx.alpha = alpha
        return _forward_1d(*_f64(mu, sigma2, c_mu, c_s2), alpha).to(mu.dtype)

    @staticmethod
    def backward(ctx, grad_r):
        mu, sigma2, c_mu, c_s2 = _f64(*ctx.saved_tensors)
        cov_x, cov_xx = _cov_1d(mu, sigma2, c_mu, c_s2, ctx.alpha)
        # θ = (μ/σ², -1/(2σ²)): chain rule from ∂r/∂θ = cov to (μ, σ²), in centred statistics.
        grad_r = grad_r.double()
        grad_mu = (grad_r * cov_x).sum(-1) / sigma2
        grad_s2 = (grad_r * cov_xx).sum(-1) / (2 * sigma2 * sigma2)
        dtype = ctx.saved_tensors[0].dtype
        return grad_mu.to(dtype), grad_s2.to(dtype), None, None, None


def _check_1d(mu, sigma2, basis, alpha):
    mu = as_tensor(mu, "mu", ndim=1)
    sigma2 = _positive(sigma2, "sigma2", mu)
    if sigma2.shape != mu.shape:
        raise ValueError(f"sigma2 must have the shape of mu {tuple(mu.shape)}, got {tuple(sigma2.shape)}")
    return mu, sigma2, _check_basis(basis, 1), _alpha(alpha)


def continuous_attention_1d(mu, sigma2, basis: GaussianRBF, alpha: int = 1) -> torch.Tensor:
    """``r = E_p[ψ(t)]`` for a batch of 1-D Gaussians (α = 1) or truncated parabolas (α = 2).

    The score is ``f(t) = -(t-μ)²/(2σ²)``, i.e. ``θ = (μ/σ², -1/(2σ²))`` on ``φ(t) = (t, t²)``.
    The forward pass is closed form (a Gaussian convolution for α = 1; erf and the normal
    density at the ends of the support for α = 2). The backward pass is Proposition 3:
    ``∂r/∂θ = cov_{p,2-α}(φ, ψ)``, carried to ``∂r/∂μ = cov(x, ψ)/σ²`` and
    ``∂r/∂σ² = cov(x², ψ)/(2σ⁴)`` with ``x = t - μ``.

    Parameters
    ----------
    mu : tensor, shape (batch,)
        Means (locations).
    sigma2 : tensor, shape (batch,)
        Positive variances (scale parameters for α = 2).
    basis : GaussianRBF
        N one-dimensional basis functions ψ.
    alpha : {1, 2}
        1 for continuous softmax, 2 for continuous sparsemax.

    Returns
    -------
    tensor, shape (batch, N)

    Implements
    ----------
    Eqs. (15) and (18) of the sparse-and-continuous attention paper (with Eqs. 10 and 17).
    """
    mu, sigma2, basis, alpha = _check_1d(mu, sigma2, basis, alpha)
    return _ContinuousAttention1D.apply(mu, sigma2, *basis.params(mu), alpha)


# --------------------------------------------------------------------------- 2-D


def _inv2(S: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse and determinant of a batch of 2 × 2 matrices, by the adjugate."""
    a, b, c, d = S[..., 0, 0], S[..., 0, 1], S[..., 1, 0], S[..., 1, 1]
    det = a * d - b * c
    adj = torch.stack([torch.stack([d, -b], -1), torch.stack([-c, a], -1)], -2)
    return adj / det[..., None, None], det


def _gauss_cov_2d(mu, Sigma, c_mu, c_s2):
    """r, cov(x, ψ) and cov(xxᵀ, ψ) under N(μ, Σ), x = t - μ (Algorithm 1)."""
    eye = torch.eye(2, dtype=mu.dtype, device=mu.device)
    S = Sigma.unsqueeze(-3)  # (batch, 1, 2, 2)
    A, det = _inv2(S + c_s2[:, None, None] * eye)  # (Σ + Σ_j)⁻¹, (batch, N, 2, 2)
    delta = mu.unsqueeze(-2) - c_mu  # μ - μ_j
    Ad = (A @ delta.unsqueeze(-1)).squeeze(-1)
    r = torch.exp(-0.5 * (delta * Ad).sum(-1)) / (2 * math.pi * torch.sqrt(det))
    # μ̃ - μ = -ΣAδ and Σ̃ - Σ = -ΣAΣ: the product-of-Gaussians moments, written without Σ⁻¹
    # (and without forming Σ̃, whose difference from Σ would cancel for narrow densities).
    shift = -(S @ Ad.unsqueeze(-1)).squeeze(-1)
    cov_x = r.unsqueeze(-1) * shift
    cov_xx = r[..., None, None] * (shift.unsqueeze(-1) * shift.unsqueeze(-2) - S @ A @ S)
    return r, cov_x, cov_xx


def _principal_axes(Sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (largest first, ``(batch, 2)``) and eigenvectors (columns, ``(batch, 2, 2)``) of 2 × 2 SPD matrices, in closed form."""
    p, q, s = Sigma[:, 0, 0], Sigma[:, 0, 1], Sigma[:, 1, 1]
    half_gap = torch.sqrt((0.5 * (p - s)) ** 2 + q * q)
    big = 0.5 * (p + s) + half_gap
    lam = torch.stack([big, (p * s - q * q) / big], -1)  # the small one from the determinant: no cancellation
    theta = 0.5 * torch.atan2(2 * q, p - s)
    cos, sin = torch.cos(theta), torch.sin(theta)
    return lam, torch.stack([torch.stack([cos, -sin], -1), torch.stack([sin, cos], -1)], -2)


_WINDOW = 8.0  # RBF standard deviations kept on either side of its centre: e^{-32} ≈ 1e-14 is dropped


@functools.lru_cache(maxsize=16)
def _leggauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(n)


def _gauss_legendre(n: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x, w = _leggauss(n)
    return torch.as_tensor(x, dtype=like.dtype, device=like.device), torch.as_tensor(w, dtype=like.dtype, device=like.device)


def _paraboloid_integrals(mu, Sigma, c_mu, c_s2, n_angles: int, need_cov: bool):
    """∫_supp ψ, ∫_supp xᵀΣ⁻¹x ψ and (if asked) ∫_supp xψ, ∫_supp xxᵀψ for the 2-D truncated paraboloid.

    Rotate to the ellipse's principal axes (``x = Q z``; the RBFs are isotropic, so they stay
    isotropic) and slice the ellipse ``z₁²/a² + z₂²/b² ≤ 1`` into chords across the major
    axis. On each chord the density is a quadratic and the RBF a Gaussian in ``z₂``, so the
    chord integral is closed form (erf and the normal density at the chord's ends). What is
    left is a 1-D integral along the major axis, written with ``z₁ = a sin φ`` (the chord's
    half-length is then ``b cos φ``, and the square-root ends of the ellipse become smooth)
    and integrated by ``n_angles``-point Gauss–Legendre on the window of ``φ`` where the RBF
    is not negligible (``|z₁ - centre| ≤ 8σ_j``): the nodes follow each RBF, so narrow RBFs
    in a wide ellipse cost no more than wide ones.
    """
    lam, Q = _principal_axes(Sigma)
    c = torch.sqrt(1 / (math.pi * torch.sqrt(lam[:, 0] * lam[:, 1])))  # -λ of Eq. (11) with N = 2
    R = torch.sqrt(2 * c)
    a, b = (R[:, None] * lam.sqrt())[:, None].unbind(-1)  # semi-axes, (batch, 1)
    d1, d2 = ((c_mu - mu.unsqueeze(-2)) @ Q).unbind(-1)  # RBF centres in the principal frame, (batch, N)
    s = torch.sqrt(c_s2)
    lo = torch.clamp((d1 - _WINDOW * s) / a, -1, 1).asin()
    hi = torch.maximum(torch.clamp((d1 + _WINDOW * s) / a, -1, 1).asin(), lo)  # an empty window weighs 0
    nodes, weights = _gauss_legendre(n_angles, mu)
    half = (0.5 * (hi - lo)).unsqueeze(-1)
    phi = (0.5 * (hi + lo)).unsqueeze(-1) + half * nodes  # (batch, N, K)
    a, cos = a.unsqueeze(-1), torch.cos(phi)
    z1, chord = a * torch.sin(phi), b.unsqueeze(-1) * cos
    s = s.unsqueeze(-1)
    J0, J1, J2 = _interval_moments(-chord, chord, d2.unsqueeze(-1), s)
    # dz₁ = a cos φ dφ, and the RBF's factor along z₁ is a 1-D normal density.
    w = half * weights * a * cos * _normal_pdf((z1 - d1.unsqueeze(-1)) / s) / s
    wJ0 = w * J0
    I0 = wJ0.sum(-1)
    Izz = torch.stack([(wJ0 * z1 * z1).sum(-1), (w * J1 * z1).sum(-1), (w * J2).sum(-1)], -1)  # (11, 12, 22)
    I2 = Izz[..., 0] / lam[:, :1] + Izz[..., 2] / lam[:, 1:]
    if not need_cov:
        return c, R, I0, I2, None, None
    Iz = torch.stack([(wJ0 * z1).sum(-1), (w * J1).sum(-1)], -1)
    Izz = torch.stack([Izz[..., :2], Izz[..., 1:]], -1)
    Qn = Q.unsqueeze(-3)
    return c, R, I0, I2, (Qn @ Iz.unsqueeze(-1)).squeeze(-1), Qn @ Izz @ Qn.transpose(-1, -2)


def _attention_2d(mu, Sigma, c_mu, c_s2, alpha: int, n_angles: int, need_cov: bool):
    """r and, if asked, ``cov_{p,2-α}(x, ψ)`` and ``cov_{p,2-α}(xxᵀ, ψ)``: one pass over the quadrature nodes for all three."""
    if alpha == 1:
        r, cov_x, cov_xx = _gauss_cov_2d(mu, Sigma, c_mu, c_s2)
        return (r, cov_x, cov_xx) if need_cov else (r, None, None)
    c, R, I0, I2, Ix, Ixx = _paraboloid_integrals(mu, Sigma, c_mu, c_s2, n_angles, need_cov)
    r = (c[:, None] * I0 - 0.5 * I2).clamp_min(0)  # round-off aside, an expectation of ψ ≥ 0
    if not need_cov:
        return r, None, None
    # The 0-covariance subtracts the uniform-on-the-ellipse moments: ∫x = 0, ∫xxᵀ/|supp| = R²Σ/4.
    return r, Ix, Ixx - (R * R / 4)[:, None, None, None] * Sigma.unsqueeze(-3) * I0[..., None, None]


def _cov_2d(mu, Sigma, c_mu, c_s2, alpha: int, n_angles: int):
    return _attention_2d(mu, Sigma, c_mu, c_s2, alpha, n_angles, need_cov=True)[1:]


class _ContinuousAttention2D(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mu, Sigma, c_mu, c_s2, alpha, n_angles):
        # The covariances of the backward pass share the forward's nodes: compute them now if a gradient will be asked.
        need_cov = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        r, cov_x, cov_xx = _attention_2d(*_f64(mu, Sigma, c_mu, c_s2), alpha, n_angles, need_cov)
        if need_cov:
            ctx.save_for_backward(Sigma, cov_x, cov_xx)
        return r.to(mu.dtype)

    @staticmethod
    def backward(ctx, grad_r):
        Sigma, cov_x, cov_xx = ctx.saved_tensors
        dtype, grad_r = Sigma.dtype, grad_r.double()
        P, _ = _inv2(Sigma.double())
        # θ = (Σ⁻¹μ, -½Σ⁻¹): ∂r/∂μ = Σ⁻¹cov(x, ψ), ∂r/∂Σ = ½Σ⁻¹cov(xxᵀ, ψ)Σ⁻¹ (centred statistics).
        g_x = (grad_r.unsqueeze(-1) * cov_x).sum(-2)
        g_xx = (grad_r[..., None, None] * cov_xx).sum(-3)
        grad_mu = (P @ g_x.unsqueeze(-1)).squeeze(-1)
        grad_Sigma = 0.5 * P @ g_xx @ P
        return grad_mu.to(dtype), grad_Sigma.to(dtype), None, None, None, None


def _check_2d(mu, Sigma, basis, alpha, n_angles):
    mu = as_tensor(mu, "mu", ndim=2)
    if mu.shape[1] != 2:
        raise ValueError(f"mu must have shape (batch, 2), got {tuple(mu.shape)}")
    Sigma = _spd(Sigma, "Sigma", 2, mu)
    if Sigma.shape != (mu.shape[0], 2, 2):
        raise ValueError(f"Sigma must have shape ({mu.shape[0]}, 2, 2), got {tuple(Sigma.shape)}")
    return mu, Sigma, _check_basis(basis, 2), _alpha(alpha), check_int(n_angles, "n_angles", minimum=8)


def generalized_covariance_2d(mu, Sigma, basis: GaussianRBF, alpha: int = 1, n_angles: int = 48):
    """``cov_{p,2-α}(x, ψ)`` ``(batch, N, 2)`` and ``cov_{p,2-α}(xxᵀ, ψ)`` ``(batch, N, 2, 2)``, ``x = t - μ``.

    Implements
    ----------
    Eq. (17) of the sparse-and-continuous attention paper; Algorithm 1 for α = 1.
    """
    mu, Sigma, basis, alpha, n_angles = _check_2d(mu, Sigma, basis, alpha, n_angles)
    return _cov_2d(mu, Sigma, *basis.params(mu), alpha, n_angles)


def continuous_attention_2d(mu, Sigma, basis: GaussianRBF, alpha: int = 1, n_angles: int = 48) -> torch.Tensor:
    """``r = E_p[ψ(t)]`` for a batch of 2-D Gaussians (α = 1) or truncated paraboloids (α = 2).

    The score is ``f(t) = -½(t-μ)ᵀΣ⁻¹(t-μ)``. For α = 1 both passes are closed form
    (Algorithm 1: products of Gaussians). For α = 2 the support is an ellipse: the integral
    across each chord of the ellipse (parallel to its minor axis) is closed form, and the
    integral along the major axis, in the angle ``φ`` of ``z₁ = a sin φ``, is an
    ``n_angles``-point Gauss–Legendre sum on the window where each RBF is not negligible
    (relative error about 1e-6 at 32 nodes, 1e-12 at 48). The backward pass is Proposition 3,
    ``∂r/∂θ = cov_{p,2-α}(φ, ψ)`` with ``φ(t) = (t, vec(ttᵀ))``, carried to μ and Σ.

    Parameters
    ----------
    mu : tensor, shape (batch, 2)
        Centres.
    Sigma : tensor, shape (batch, 2, 2)
        Symmetric positive definite shape matrices (the symmetric part is used).
    basis : GaussianRBF
        N two-dimensional basis functions ψ.
    alpha : {1, 2}
        1 for continuous softmax, 2 for continuous sparsemax.
    n_angles : int
        Gauss–Legendre nodes in the angle φ for α = 2 (ignored for α = 1).

    Returns
    -------
    tensor, shape (batch, N)

    Implements
    ----------
    Eqs. (11), (15), (17)-(18) and Algorithm 1 of the sparse-and-continuous attention paper.
    """
    mu, Sigma, basis, alpha, n_angles = _check_2d(mu, Sigma, basis, alpha, n_angles)
    return _ContinuousAttention2D.apply(mu, Sigma, *basis.params(mu), alpha, n_angles)


# --------------------------------------------------------------------------- modules


class ContinuousAttentionOutput(NamedTuple):
    """What the continuous-attention modules return."""

    context: torch.Tensor  # (batch, D): E_p[V(t)]
    mu: torch.Tensor  # (batch,) or (batch, 2)
    sigma2: torch.Tensor  # (batch,) in 1-D, Σ (batch, 2, 2) in 2-D
    r: torch.Tensor  # (batch, N): E_p[ψ(t)]


class _ContinuousAttention(nn.Module):
    def __init__(self, basis: GaussianRBF, dim: int, in_features, alpha, lam, min_var, n_params):
        super().__init__()
        self.basis = _check_basis(basis, dim)
        self.alpha = _alpha(alpha)
        self.lam = check_positive(lam, "lam")
        self.min_var = check_positive(min_var, "min_var")
        self.head = None if in_features is None else nn.Linear(check_int(in_features, "in_features"), n_params)

    def _inputs(self, H, positions, weights):
        H = as_tensor(H, "H", ndim=3)
        if (weights is None) == (self.head is None):
            raise ValueError("pass weights (moment matching) if and only if the module was built without in_features")
        if weights is not None:
            weights = as_tensor(weights, "weights", ndim=2, dtype=H.dtype, device=H.device)
            if weights.shape != H.shape[:2]:
                raise ValueError(f"weights must have shape {tuple(H.shape[:2])}, got {tuple(weights.shape)}")
        elif H.shape[-1] != self.head.in_features:
            raise ValueError(f"H must have {self.head.in_features} features, got {H.shape[-1]}")
        return H, as_tensor(positions, "positions", ndim=self.basis.dim, dtype=H.dtype, device=H.device), weights

    def _context(self, H, positions, r):
        B = ridge_value_coefficients(H, positions, self.basis, self.lam)
        return (r.unsqueeze(-2) @ B).squeeze(-2)


class ContinuousAttention1D(_ContinuousAttention):
    """Continuous attention over a sequence placed on ``[0, 1]``.

    The density's ``(μ, σ²)`` come either from an encoder summary (``in_features`` given:
    ``μ = sigmoid(w₁ᵀv)``, ``σ² = softplus(w₂ᵀv)`` with ``v`` the max-pool of the tokens) or,
    in the *combined* variant, from discrete attention weights by moment matching
    (``μ = E_w[t]``, ``σ² = E_w[t²] - μ²``). The values are the tokens fitted by ridge
    regression on the basis, and the context is ``Bᵀ r`` with ``r`` from
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

    def __init__(self, basis: GaussianRBF, in_features: int | None = None, *, alpha: int = 1, lam: float = 1e-3, min_var: float = 1e-4):
        super().__init__(basis, 1, in_features, alpha, lam, min_var, 2)

    def forward(self, H, weights=None) -> ContinuousAttentionOutput:
        """Attend over tokens ``H`` ``(batch, L, D)`` at evenly spaced positions of ``[0, 1]``.

        ``weights`` ``(batch, L)``: discrete attention to moment-match (combined variant).
        """
        H = as_tensor(H, "H", ndim=3)
        positions = torch.linspace(0, 1, H.shape[1], dtype=H.dtype, device=H.device)
        H, positions, weights = self._inputs(H, positions, weights)
        if weights is None:
            a, b = self.head(H.amax(1)).unbind(-1)
            mu, var = torch.sigmoid(a), nn.functional.softplus(b)
        else:
            mu = weights @ positions
            var = (weights @ positions**2 - mu**2).clamp_min(0)
        sigma2 = var + self.min_var
        r = continuous_attention_1d(mu, sigma2, self.basis, self.alpha)
        return ContinuousAttentionOutput(self._context(H, positions, r), mu, sigma2, r)


class ContinuousAttention2D(_ContinuousAttention):
    """Continuous attention over an image's grid of feature vectors placed on ``[0, 1]²``.

    As :class:`ContinuousAttention1D`, with ``μ = sigmoid(W₁v)`` and ``Σ = LLᵀ + min_var·I``
    from a Cholesky factor with softplus diagonal (encoder variant), or ``μ`` and ``Σ`` the
    mean and covariance of discrete attention over the grid cells (combined variant).

    Parameters
    ----------
    basis : GaussianRBF
        2-D basis of N functions.
    in_features, alpha, lam, min_var : as in :class:`ContinuousAttention1D`.
    n_angles : int
        Gauss–Legendre nodes for α = 2 (see :func:`continuous_attention_2d`).

    Implements
    ----------
    §3.1 and the 2-D (visual question answering) models of §4 of the sparse-and-continuous
    attention paper.
    """

    def __init__(
        self, basis: GaussianRBF, in_features: int | None = None, *, alpha: int = 1, lam: float = 1e-3, min_var: float = 1e-4, n_angles: int = 48
    ):
        super().__init__(basis, 2, in_features, alpha, lam, min_var, 5)
        self.n_angles = check_int(n_angles, "n_angles", minimum=8)

    @staticmethod
    def grid_positions(height: int, width: int, dtype=None, device=None) -> torch.Tensor:
        """Cell centres of a ``height × width`` grid in ``[0, 1]²``, row-major, as ``(row, col)``: ``(height·width, 2)``."""
        rows = (torch.arange(height, dtype=dtype, device=device) + 0.5) / height
        cols = (torch.arange(width, dtype=dtype, device=device) + 0.5) / width
        return torch.stack(torch.meshgrid(rows, cols, indexing="ij"), -1).reshape(-1, 2)

    def forward(self, H, weights=None) -> ContinuousAttentionOutput:
        """Attend over a feature map ``H`` ``(batch, height, width, D)``.

        ``weights`` ``(batch, height·width)``: discrete attention to moment-match (combined variant).
        """
        H = as_tensor(H, "H", ndim=4)
        positions = self.grid_positions(H.shape[1], H.shape[2], H.dtype, H.device)
        H, positions, weights = self._inputs(H.flatten(1, 2), positions, weights)
        eye = torch.eye(2, dtype=H.dtype, device=H.device)
        if weights is None:
            p = self.head(H.amax(1))
            mu = torch.sigmoid(p[:, :2])
            d1, d2 = nn.functional.softplus(p[:, 2]), nn.functional.softplus(p[:, 3])
            Lc = torch.stack([torch.stack([d1, torch.zeros_like(d1)], -1), torch.stack([p[:, 4], d2], -1)], -2)
            cov = Lc @ Lc.transpose(-1, -2)
        else:
            mu = weights @ positions
            centred = positions - mu.unsqueeze(-2)
            cov = torch.einsum("bl,bli,blj->bij", weights, centred, centred)
        Sigma = cov + self.min_var * eye
        r = continuous_attention_2d(mu, Sigma, self.basis, self.alpha, self.n_angles)
        return ContinuousAttentionOutput(self._context(H, positions, r), mu, Sigma, r)


# --------------------------------------------------------------------------- the chapter's experiments


class SpanDocuments(NamedTuple):
    """Generated "documents": token ids ``(n, length)``, binary labels ``(n,)``, and the span ``[start, start + span)``."""

    tokens: torch.Tensor
    labels: torch.Tensor
    start: torch.Tensor
    span: int


def span_documents(n: int, length: int = 256, *, span: int = 24, vocab: int = 40, cue: float = 0.3, decoys: float = 0.03, seed: int = 0) -> SpanDocuments:
    """Long token sequences whose binary label is told by one contiguous span at a random place.

    Tokens ``0..vocab-1`` are neutral; ``vocab..vocab+3`` are "positive" and
    ``vocab+4..vocab+7`` "negative" cue words. Inside the span a fraction ``cue`` of the tokens
    are cue words of the document's class; elsewhere a fraction ``decoys`` are cue words of
    either class, so counting cue words over the whole document is noisy and the model must
    find the span.
    """
    n, length, span = check_int(n, "n"), check_int(length, "length"), check_int(span, "span")
    if span > length:
        raise ValueError(f"span must be at most length ({length}), got {span}")
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(vocab, (n, length), generator=g)
    labels = torch.randint(2, (n,), generator=g)
    decoy = torch.rand(n, length, generator=g) < decoys
    tokens = torch.where(decoy, vocab + torch.randint(8, (n, length), generator=g), tokens)
    start = torch.randint(length - span + 1, (n,), generator=g)
    idx = start[:, None] + torch.arange(span)
    is_cue = torch.rand(n, span, generator=g) < cue
    cue_words = vocab + 4 * (1 - labels[:, None]) + torch.randint(4, (n, span), generator=g)
    tokens.scatter_(1, idx, torch.where(is_cue, cue_words, tokens.gather(1, idx)))
    return SpanDocuments(tokens, labels, start, span)


class DocumentClassifier(nn.Module):
    """Embedding and convolution encoder, one attention read-out, a linear classifier.

    ``kind`` is ``"discrete"`` (a learned query, :func:`attnlib.attention.attention` with
    ``normalizer``), ``"continuous"`` (:class:`ContinuousAttention1D` from the encoder) or
    ``"combined"`` (discrete attention plus continuous attention moment-matched to it, the
    two contexts summed: no extra parameters). ``alpha`` 1 or 2 picks softmax or sparsemax
    for both parts.

    Implements
    ----------
    The document-classification models of §4 (Table 1) of the sparse-and-continuous attention paper.
    """

    def __init__(self, vocab: int, kind: str = "discrete", *, alpha: int = 1, n_basis: int = 32, dim: int = 24, n_classes: int = 2):
        super().__init__()
        if kind not in ("discrete", "continuous", "combined"):
            raise ValueError(f"kind must be 'discrete', 'continuous' or 'combined', got {kind!r}")
        self.kind, self.alpha = kind, _alpha(alpha)
        self.embed = nn.Embedding(check_int(vocab, "vocab"), dim)
        self.conv = nn.Conv1d(dim, dim, 5, padding=2)
        self.query = nn.Parameter(torch.randn(1, dim) / dim**0.5)
        basis = GaussianRBF.linspace(n_basis, sigmas=(0.1, 0.5))
        self.cont = ContinuousAttention1D(basis, in_features=dim if kind == "continuous" else None, alpha=alpha)
        self.out = nn.Linear(dim, n_classes)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, ContinuousAttentionOutput | None]:
        """Logits ``(batch, n_classes)``, the discrete weights (or None) and the continuous read-out (or None)."""
        from .attention import attention

        H = torch.relu(self.conv(self.embed(tokens).transpose(1, 2))).transpose(1, 2)  # (batch, L, dim)
        weights = cont = None
        context = 0
        if self.kind != "continuous":
            normalizer = "softmax" if self.alpha == 1 else "sparsemax"
            out, weights = attention(self.query.expand(len(H), 1, -1), H, H, normalizer=normalizer)
            weights = weights[:, 0]
            context = out[:, 0]
        if self.kind != "discrete":
            cont = self.cont(H, weights=weights if self.kind == "combined" else None)
            context = context + cont.context
        return self.out(context), weights, cont


class ClutteredDigits(NamedTuple):
    """``load_digits`` digits pasted at random into noisy, cluttered canvases."""

    images: torch.Tensor  # (n, 1, size, size) in [0, 1]
    labels: torch.Tensor  # (n,)
    corner: torch.Tensor  # (n, 2): top-left (row, col) of the digit


def cluttered_digits(n: int, size: int = 32, *, n_clutter: int = 4, noise: float = 0.1, seed: int = 0) -> ClutteredDigits:
    """Each canvas holds one 8 × 8 ``load_digits`` digit (the label) at a random place, ``n_clutter``
    random 3 × 3 crops of other digits as clutter, and Gaussian noise."""
    from sklearn.datasets import load_digits

    n, size = check_int(n, "n"), check_int(size, "size", minimum=8)
    rng = np.random.default_rng(seed)
    digits = load_digits()
    glyphs, targets = digits.images / 16.0, digits.target
    pick = rng.integers(len(glyphs), size=n)
    canvas = noise * rng.standard_normal((n, size, size))
    corner = rng.integers(0, size - 7, size=(n, 2))
    for b in range(n):
        for _ in range(n_clutter):
            g = glyphs[rng.integers(len(glyphs))]
            i, j = rng.integers(0, 6, 2)
            r, c = rng.integers(0, size - 2, 2)
            canvas[b, r : r + 3, c : c + 3] += g[i : i + 3, j : j + 3]
        r, c = corner[b]
        canvas[b, r : r + 8, c : c + 8] += glyphs[pick[b]]
    images = torch.as_tensor(np.clip(canvas, 0, 1), dtype=torch.get_default_dtype()).unsqueeze(1)
    return ClutteredDigits(images, torch.as_tensor(targets[pick]), torch.as_tensor(corner))


class DigitClassifier(nn.Module):
    """A small CNN feature map on a grid, one attention read-out over the grid cells, a linear classifier.

    The encoder halves the resolution once (a ``size × size`` canvas gives a
    ``size/2 × size/2`` grid) and its cells see 14 × 14 pixels, enough to hold an 8 × 8
    digit whatever its offset; batch normalisation gets it off the loss plateau that a plain
    CNN sits on for a hundred steps. ``kind`` is ``"discrete"`` (attention over the cells:
    a learned query against a linear map of the cell features as keys, the features as
    values) or ``"continuous"``: the same discrete weights moment-matched to a 2-D Gaussian
    (α = 1) or truncated paraboloid (α = 2), whose expectation of the RBF-fitted feature map
    is the context, as in the paper's visual question answering model.

    Parameters
    ----------
    kind : {"discrete", "continuous"}
    alpha : {1, 2}
        Softmax / Gaussian or sparsemax / truncated paraboloid.
    n_side : int
        The continuous read-out's basis is an ``n_side × n_side`` grid of RBFs (match the feature grid).
    channels : int
        Feature size.
    n_classes : int

    Implements
    ----------
    The 2-D attention models of §4 (Table 2, Figure 3) of the sparse-and-continuous attention paper.
    """

    def __init__(self, kind: str = "discrete", *, alpha: int = 1, n_side: int = 8, channels: int = 32, n_classes: int = 10):
        super().__init__()
        if kind not in ("discrete", "continuous"):
            raise ValueError(f"kind must be 'discrete' or 'continuous', got {kind!r}")
        self.kind, self.alpha = kind, _alpha(alpha)
        channels, n_side = check_int(channels, "channels"), check_int(n_side, "n_side")

        def block(c_in, c_out):
            return [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU()]

        self.features = nn.Sequential(
            *block(1, 16), nn.MaxPool2d(2), *block(16, channels), *block(channels, channels),
            nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(),
        )
        self.key = nn.Linear(channels, channels)
        self.query = nn.Parameter(torch.randn(1, channels) / channels**0.5)
        self.cont = ContinuousAttention2D(GaussianRBF.grid(n_side, 1.0 / (2 * n_side) ** 2), alpha=alpha, n_angles=32)
        self.out = nn.Linear(channels, check_int(n_classes, "n_classes", minimum=2))

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, ContinuousAttentionOutput | None]:
        """Logits ``(batch, n_classes)``, discrete weights over the cells ``(batch, h·w)``, continuous read-out or None."""
        from .attention import attention

        images = as_tensor(images, "images", ndim=4)
        F = self.features(images).permute(0, 2, 3, 1)  # (batch, h, w, channels)
        cells = F.flatten(1, 2)
        normalizer = "softmax" if self.alpha == 1 else "sparsemax"
        out, weights = attention(self.query.expand(len(F), 1, -1), self.key(cells), cells, normalizer=normalizer)
        if self.kind == "discrete":
            return self.out(out[:, 0]), weights[:, 0], None
        cont = self.cont(F, weights=weights[:, 0])
        return self.out(cont.context), weights[:, 0], cont


def accuracy(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, batch: int = 512) -> float:
    """Fraction of ``inputs`` that ``model`` (whose first output is logits) classifies right, in eval mode."""
    model.eval()
    with torch.no_grad():
        hits = sum((model(inputs[i : i + batch])[0].argmax(-1) == labels[i : i + batch]).sum().item() for i in range(0, len(inputs), batch))
    model.train()
    return hits / len(inputs)


def fit_classifier(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, *, n_steps: int, batch: int = 64, lr: float = 3e-3, seed: int = 0, progress: bool = True, desc: str = "training") -> list[float]:
    """Train ``model`` with cross-entropy on random mini-batches by :func:`attnlib.training.train`."""
    from .training import train

    g = torch.Generator().manual_seed(seed)
    batches = lambda step: (lambda idx: (inputs[idx], labels[idx]))(torch.randint(len(inputs), (batch,), generator=g))  # noqa: E731
    loss = lambda m, b: nn.functional.cross_entropy(m(b[0])[0], b[1])  # noqa: E731
    return train(model, loss, batches, n_steps=n_steps, lr=lr, seed=seed, progress=progress, desc=desc, clip_grad_norm=1.0)
