"""Continuous attention ``r = E_p[ψ(t)]`` and its backward pass, in 1-D and 2-D.

For Gaussian RBFs ψ and a Gaussian (α = 1) or truncated parabola / paraboloid (α = 2)
density p, the forward pass is closed form in 1-D (erf and normal densities at the ends
of the support) and for the 2-D Gaussian (Algorithm 1: products of Gaussians); for the
2-D truncated paraboloid the integral across each chord of the ellipse is closed form
and one short Gauss–Legendre sum along its major axis does the rest. The backward pass
is the generalised covariance of Proposition 3 (Eqs. 17–18) of Martins et al. (2020),
carried from the canonical parameters θ to (μ, σ²) or (μ, Σ) by the chain rule.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch.special import ndtr

from ..utils import as_tensor, check_int
from .basis import GaussianRBF, _check_basis
from .densities import _LOG_SQRT_2PI, _common, _positive, _spd, check_alpha

__all__ = [
    "continuous_attention_1d",
    "continuous_attention_2d",
    "generalized_covariance_1d",
    "generalized_covariance_2d",
]


# --------------------------------------------------------------------- 1-D closed forms


def _ndtr_diff(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``Φ(b) - Φ(a)`` for ``a ≤ b``, subtracting in whichever tail keeps precision."""
    upper = a > 0  # both ends in the upper tail: Φ(b) - Φ(a) = Φ(-a) - Φ(-b)
    return ndtr(torch.where(upper, -a, b)) - ndtr(torch.where(upper, -b, a))


def _normal_pdf(z: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * z * z - _LOG_SQRT_2PI)


def _interval_moments(lo, hi, m, s) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``∫_lo^hi x^k N(x; m, s²) dx`` for ``k = 0, 1, 2``, in closed form.

    From erf and the normal density at the ends.
    """
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
    # An expectation of ψ ≥ 0: a negative value is round-off of the difference, far from
    # every RBF.
    return (a * a / (2 * s2) * M0 - M2 / (2 * s2)).clamp_min(0)


def generalized_covariance_1d(
    mu, sigma2, basis: GaussianRBF, alpha: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """``cov_{p,2-α}(x, ψ)``, ``cov_{p,2-α}(x², ψ)`` with ``x = t - μ``, ``(batch, N)``.

    Each of the two is ``(batch, N)``.

    For α = 1 the ordinary covariance under the Gaussian, from the product-of-Gaussians
    moments of Algorithm 1; for α = 2 the 0-covariance,
    ``∫_supp φψ - ∫_supp φ ∫_supp ψ / |supp|``, from Gaussian moments on the support
    interval. Centring ``φ = (t, t²)`` at μ changes the Jacobian by a fixed linear map
    only (see :func:`continuous_attention_1d`).

    Parameters
    ----------
    mu : tensor or array-like, shape (batch,)
        Means (locations).
    sigma2 : tensor or array-like, shape (batch,)
        Positive variances (scale parameters for α = 2).
    basis : GaussianRBF
        N one-dimensional basis functions ψ.
    alpha : {1, 2}
        1 for continuous softmax, 2 for continuous sparsemax.

    Returns
    -------
    cov_x, cov_xx : torch.Tensor, shape (batch, N)
        The two generalised covariances, computed in float64 and returned in the
        inputs' common dtype.

    Implements
    ----------
    Eq. (17) of the sparse-and-continuous attention paper, for Eq. (18).
    """
    mu, sigma2, basis, alpha = _check_1d(mu, sigma2, basis, alpha)
    # In float64, as the backward pass computes them (see _f64), whatever mu's dtype.
    covs = _cov_1d(*_f64(mu, sigma2, *basis.params(mu)), alpha)
    return tuple(c.to(mu.dtype) for c in covs)


def _cov_1d(mu, sigma2, c_mu, c_s2, alpha: int):
    m = c_mu - mu.unsqueeze(-1)
    s2 = sigma2.unsqueeze(-1)
    if alpha == 1:
        r = _forward_1d(mu, sigma2, c_mu, c_s2, 1)
        var = s2 + c_s2
        shift = s2 * m / var  # μ̃ - μ of the product density
        # σ̃² - σ² = -σ⁴/(σ² + σ_j²), written so that nothing cancels for narrow
        # densities
        return r * shift, r * (shift * shift - s2 * s2 / var)
    a = _tp_radius(s2)
    M0, M1, M2 = _interval_moments(-a, a, m, torch.sqrt(c_s2))
    return M1, M2 - a * a / 3 * M0


def _f64(*xs):
    # The interval moments cancel catastrophically when the support is narrow next to an
    # RBF: compute in float64 whatever the input's precision, and cast the result back.
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
        # θ = (μ/σ², -1/(2σ²)): chain rule from ∂r/∂θ = cov to (μ, σ²), in centred
        # statistics.
        grad_r = grad_r.double()
        grad_mu = (grad_r * cov_x).sum(-1) / sigma2
        grad_s2 = (grad_r * cov_xx).sum(-1) / (2 * sigma2 * sigma2)
        dtype = ctx.saved_tensors[0].dtype
        return grad_mu.to(dtype), grad_s2.to(dtype), None, None, None


def _check_1d(mu, sigma2, basis, alpha):
    mu = as_tensor(mu, "mu", ndim=1)
    mu, sigma2 = _common(mu, _positive(sigma2, "sigma2", mu))
    if sigma2.shape != mu.shape:
        raise ValueError(
            f"sigma2 must have the shape of mu {tuple(mu.shape)}, got "
            f"{tuple(sigma2.shape)}"
        )
    return mu, sigma2, _check_basis(basis, 1), check_alpha(alpha)


def continuous_attention_1d(
    mu, sigma2, basis: GaussianRBF, alpha: int = 1
) -> torch.Tensor:
    """``r = E_p[ψ(t)]`` for 1-D Gaussians (α = 1) or truncated parabolas (α = 2).

    For a batch of densities.

    The score is ``f(t) = -(t-μ)²/(2σ²)``, i.e. ``θ = (μ/σ², -1/(2σ²))`` on
    ``φ(t) = (t, t²)``. The forward pass is closed form (a Gaussian convolution for α =
    1; erf and the normal density at the ends of the support for α = 2). The backward
    pass is Proposition 3: ``∂r/∂θ = cov_{p,2-α}(φ, ψ)``, carried to
    ``∂r/∂μ = cov(x, ψ)/σ²`` and ``∂r/∂σ² = cov(x², ψ)/(2σ⁴)`` with ``x = t - μ``.

    Parameters
    ----------
    mu : tensor or array-like, shape (batch,)
        Means (locations).
    sigma2 : tensor, shape (batch,)
        Positive variances (scale parameters for α = 2).
    basis : GaussianRBF
        N one-dimensional basis functions ψ.
    alpha : {1, 2}
        1 for continuous softmax, 2 for continuous sparsemax.

    Returns
    -------
    torch.Tensor, shape (batch, N)
        ``r``, the expectation of each basis function, in the inputs' common dtype.

    Implements
    ----------
    Eqs. (15) and (18) of the sparse-and-continuous attention paper (with Eqs. 10 and
    17).
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
    # μ̃ - μ = -ΣAδ and Σ̃ - Σ = -ΣAΣ: the product-of-Gaussians moments, written without
    # Σ⁻¹ (and without forming Σ̃, whose difference from Σ would cancel for narrow
    # densities).
    shift = -(S @ Ad.unsqueeze(-1)).squeeze(-1)
    cov_x = r.unsqueeze(-1) * shift
    cov_xx = r[..., None, None] * (
        shift.unsqueeze(-1) * shift.unsqueeze(-2) - S @ A @ S
    )
    return r, cov_x, cov_xx


def _principal_axes(Sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues and eigenvectors of 2 × 2 SPD matrices, in closed form.

    Eigenvalues largest first, ``(batch, 2)``; eigenvectors as columns,
    ``(batch, 2, 2)``.
    """
    p, q, s = Sigma[:, 0, 0], Sigma[:, 0, 1], Sigma[:, 1, 1]
    half_gap = torch.sqrt((0.5 * (p - s)) ** 2 + q * q)
    big = 0.5 * (p + s) + half_gap
    lam = torch.stack(
        [big, (p * s - q * q) / big], -1
    )  # the small one from the determinant: no cancellation
    theta = 0.5 * torch.atan2(2 * q, p - s)
    cos, sin = torch.cos(theta), torch.sin(theta)
    return lam, torch.stack(
        [torch.stack([cos, -sin], -1), torch.stack([sin, cos], -1)], -2
    )


# RBF standard deviations kept on either side of its centre: e^{-32} ≈ 1e-14 is dropped
_WINDOW = 8.0


@functools.lru_cache(maxsize=16)
def _leggauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(n)


def _gauss_legendre(n: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x, w = _leggauss(n)
    return torch.as_tensor(x, dtype=like.dtype, device=like.device), torch.as_tensor(
        w, dtype=like.dtype, device=like.device
    )


def _paraboloid_integrals(mu, Sigma, c_mu, c_s2, n_angles: int, need_cov: bool):
    """Integrals of ψ over the support of the 2-D truncated paraboloid.

    ∫_supp ψ, ∫_supp xᵀΣ⁻¹x ψ and (if asked) ∫_supp xψ, ∫_supp xxᵀψ.

    Rotate to the ellipse's principal axes (``x = Q z``; the RBFs are isotropic, so they
    stay isotropic) and slice the ellipse ``z₁²/a² + z₂²/b² ≤ 1`` into chords across the
    major axis. On each chord the density is a quadratic and the RBF a Gaussian in
    ``z₂``, so the chord integral is closed form (erf and the normal density at the
    chord's ends). What is left is a 1-D integral along the major axis, written with
    ``z₁ = a sin φ`` (the chord's half-length is then ``b cos φ``, and the square-root
    ends of the ellipse become smooth) and integrated by ``n_angles``-point
    Gauss–Legendre on the window of ``φ`` where the RBF is not negligible
    (``|z₁ - centre| ≤ 8σ_j``): the nodes follow each RBF, so narrow RBFs in a wide
    ellipse cost no more than wide ones.
    """
    lam, Q = _principal_axes(Sigma)
    c = torch.sqrt(
        1 / (math.pi * torch.sqrt(lam[:, 0] * lam[:, 1]))
    )  # -λ of Eq. (11) with N = 2
    R = torch.sqrt(2 * c)
    a, b = (R[:, None] * lam.sqrt())[:, None].unbind(-1)  # semi-axes, (batch, 1)
    d1, d2 = ((c_mu - mu.unsqueeze(-2)) @ Q).unbind(
        -1
    )  # RBF centres in the principal frame, (batch, N)
    s = torch.sqrt(c_s2)
    lo = torch.clamp((d1 - _WINDOW * s) / a, -1, 1).asin()
    hi = torch.maximum(
        torch.clamp((d1 + _WINDOW * s) / a, -1, 1).asin(), lo
    )  # an empty window weighs 0
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
    Izz = torch.stack(
        [(wJ0 * z1 * z1).sum(-1), (w * J1 * z1).sum(-1), (w * J2).sum(-1)], -1
    )  # (11, 12, 22)
    I2 = Izz[..., 0] / lam[:, :1] + Izz[..., 2] / lam[:, 1:]
    if not need_cov:
        return c, R, I0, I2, None, None
    Iz = torch.stack([(wJ0 * z1).sum(-1), (w * J1).sum(-1)], -1)
    Izz = torch.stack([Izz[..., :2], Izz[..., 1:]], -1)
    Qn = Q.unsqueeze(-3)
    return (
        c,
        R,
        I0,
        I2,
        (Qn @ Iz.unsqueeze(-1)).squeeze(-1),
        Qn @ Izz @ Qn.transpose(-1, -2),
    )


def _attention_2d(mu, Sigma, c_mu, c_s2, alpha: int, n_angles: int, need_cov: bool):
    """r and, if asked, ``cov_{p,2-α}(x, ψ)`` and ``cov_{p,2-α}(xxᵀ, ψ)``.

    One pass over the quadrature nodes for all three.
    """
    if alpha == 1:
        r, cov_x, cov_xx = _gauss_cov_2d(mu, Sigma, c_mu, c_s2)
        return (r, cov_x, cov_xx) if need_cov else (r, None, None)
    c, R, I0, I2, Ix, Ixx = _paraboloid_integrals(
        mu, Sigma, c_mu, c_s2, n_angles, need_cov
    )
    r = (c[:, None] * I0 - 0.5 * I2).clamp_min(
        0
    )  # round-off aside, an expectation of ψ ≥ 0
    if not need_cov:
        return r, None, None
    # The 0-covariance subtracts the uniform-on-the-ellipse moments: ∫x = 0, ∫xxᵀ/|supp|
    # = R²Σ/4.
    return (
        r,
        Ix,
        Ixx
        - (R * R / 4)[:, None, None, None] * Sigma.unsqueeze(-3) * I0[..., None, None],
    )


def _cov_2d(mu, Sigma, c_mu, c_s2, alpha: int, n_angles: int):
    return _attention_2d(mu, Sigma, c_mu, c_s2, alpha, n_angles, need_cov=True)[1:]


class _ContinuousAttention2D(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mu, Sigma, c_mu, c_s2, alpha, n_angles):
        # The covariances of the backward pass share the forward's nodes: compute them
        # now if a gradient will be asked.
        need_cov = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        r, cov_x, cov_xx = _attention_2d(
            *_f64(mu, Sigma, c_mu, c_s2), alpha, n_angles, need_cov
        )
        if need_cov:
            ctx.save_for_backward(Sigma, cov_x, cov_xx)
        return r.to(mu.dtype)

    @staticmethod
    def backward(ctx, grad_r):
        Sigma, cov_x, cov_xx = ctx.saved_tensors
        dtype, grad_r = Sigma.dtype, grad_r.double()
        P, _ = _inv2(Sigma.double())
        # θ = (Σ⁻¹μ, -½Σ⁻¹): ∂r/∂μ = Σ⁻¹cov(x, ψ), ∂r/∂Σ = ½Σ⁻¹cov(xxᵀ, ψ)Σ⁻¹ (centred
        # statistics).
        g_x = (grad_r.unsqueeze(-1) * cov_x).sum(-2)
        g_xx = (grad_r[..., None, None] * cov_xx).sum(-3)
        grad_mu = (P @ g_x.unsqueeze(-1)).squeeze(-1)
        grad_Sigma = 0.5 * P @ g_xx @ P
        return grad_mu.to(dtype), grad_Sigma.to(dtype), None, None, None, None


def _check_2d(mu, Sigma, basis, alpha, n_angles):
    mu = as_tensor(mu, "mu", ndim=2)
    if mu.shape[1] != 2:
        raise ValueError(f"mu must have shape (batch, 2), got {tuple(mu.shape)}")
    mu, Sigma = _common(mu, _spd(Sigma, "Sigma", 2, mu))
    if Sigma.shape != (mu.shape[0], 2, 2):
        raise ValueError(
            f"Sigma must have shape ({mu.shape[0]}, 2, 2), got {tuple(Sigma.shape)}"
        )
    return (
        mu,
        Sigma,
        _check_basis(basis, 2),
        check_alpha(alpha),
        check_int(n_angles, "n_angles", minimum=8),
    )


def generalized_covariance_2d(
    mu, Sigma, basis: GaussianRBF, alpha: int = 1, n_angles: int = 48
):
    """``cov_{p,2-α}(x, ψ)`` and ``cov_{p,2-α}(xxᵀ, ψ)`` with ``x = t - μ``.

    Of shapes ``(batch, N, 2)`` and ``(batch, N, 2, 2)``.

    Parameters
    ----------
    mu : tensor or array-like, shape (batch, 2)
        Centres.
    Sigma : tensor or array-like, shape (batch, 2, 2)
        Symmetric positive definite shape matrices (the symmetric part is used).
    basis : GaussianRBF
        N two-dimensional basis functions ψ.
    alpha : {1, 2}
        1 for continuous softmax, 2 for continuous sparsemax.
    n_angles : int, default=48
        Gauss–Legendre nodes in the angle for α = 2 (see
        :func:`continuous_attention_2d`).

    Returns
    -------
    cov_x : torch.Tensor, shape (batch, N, 2)
        ``cov_{p,2-α}(x, ψ)``.
    cov_xx : torch.Tensor, shape (batch, N, 2, 2)
        ``cov_{p,2-α}(xxᵀ, ψ)``; both computed in float64, returned in the inputs'
        common dtype.

    Implements
    ----------
    Eq. (17) of the sparse-and-continuous attention paper; Algorithm 1 for α = 1.
    """
    mu, Sigma, basis, alpha, n_angles = _check_2d(mu, Sigma, basis, alpha, n_angles)
    # In float64, as the backward pass computes them (see _f64), whatever mu's dtype.
    covs = _cov_2d(*_f64(mu, Sigma, *basis.params(mu)), alpha, n_angles)
    return tuple(c.to(mu.dtype) for c in covs)


def continuous_attention_2d(
    mu, Sigma, basis: GaussianRBF, alpha: int = 1, n_angles: int = 48
) -> torch.Tensor:
    """``r = E_p[ψ(t)]`` for 2-D Gaussians (α = 1) or truncated paraboloids (α = 2).

    For a batch of densities.

    The score is ``f(t) = -½(t-μ)ᵀΣ⁻¹(t-μ)``. For α = 1 both passes are closed form
    (Algorithm 1: products of Gaussians). For α = 2 the support is an ellipse: the
    integral across each chord of the ellipse (parallel to its minor axis) is closed
    form, and the integral along the major axis, in the angle ``φ`` of ``z₁ = a sin φ``,
    is an ``n_angles``-point Gauss–Legendre sum on the window where each RBF is not
    negligible (relative error about 1e-6 at 32 nodes, 1e-12 at 48). The backward pass
    is Proposition 3, ``∂r/∂θ = cov_{p,2-α}(φ, ψ)`` with ``φ(t) = (t, vec(ttᵀ))``,
    carried to μ and Σ.

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
    torch.Tensor, shape (batch, N)
        ``r``, the expectation of each basis function, in the inputs' common dtype.

    Implements
    ----------
    Eqs. (11), (15), (17)-(18) and Algorithm 1 of the sparse-and-continuous attention
    paper.
    """
    mu, Sigma, basis, alpha, n_angles = _check_2d(mu, Sigma, basis, alpha, n_angles)
    return _ContinuousAttention2D.apply(mu, Sigma, *basis.params(mu), alpha, n_angles)
