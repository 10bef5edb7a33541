"""The integrals of continuous attention, in closed form or by a short quadrature.

``E_p[ψ(t)]`` and the generalised covariances of Proposition 3 for Gaussian RBFs ψ: in
1-D, Gaussian moments on an interval (erf and the normal density at its ends) and
products of Gaussians; in 2-D, products of Gaussians for the Gaussian density
(Algorithm 1) and, for the truncated paraboloid, closed-form chord integrals summed by
Gauss–Legendre along the ellipse's major axis. ``attnlib.continuous.attention`` checks
the inputs and calls these on float64 tensors; nothing here validates.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch.special import ndtr

from .densities import _LOG_SQRT_2PI

# Helpers of the package's modules: nothing here is public.
__all__: list[str] = []

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
    # An expectation of ψ ≥ 0: a negative value is the difference's round-off, far from
    # every RBF.
    return (a * a / (2 * s2) * M0 - M2 / (2 * s2)).clamp_min(0)


def _cov_1d(mu, sigma2, c_mu, c_s2, alpha: int):
    m = c_mu - mu.unsqueeze(-1)
    s2 = sigma2.unsqueeze(-1)
    if alpha == 1:
        r = _forward_1d(mu, sigma2, c_mu, c_s2, 1)
        var = s2 + c_s2
        shift = s2 * m / var  # μ̃ - μ of the product density
        # σ̃² - σ² = -σ⁴/(σ² + σ_j²): nothing cancels for narrow densities
        return r * shift, r * (shift * shift - s2 * s2 / var)
    a = _tp_radius(s2)
    M0, M1, M2 = _interval_moments(-a, a, m, torch.sqrt(c_s2))
    return M1, M2 - a * a / 3 * M0


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
    # the small eigenvalue from the determinant: no cancellation
    lam = torch.stack([big, (p * s - q * q) / big], -1)
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
    to = dict(dtype=like.dtype, device=like.device)
    return torch.as_tensor(x, **to), torch.as_tensor(w, **to)


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
    # -λ of Eq. (11) with N = 2
    c = torch.sqrt(1 / (math.pi * torch.sqrt(lam[:, 0] * lam[:, 1])))
    R = torch.sqrt(2 * c)
    a, b = (R[:, None] * lam.sqrt())[:, None].unbind(-1)  # semi-axes, (batch, 1)
    # RBF centres in the principal frame, (batch, N)
    d1, d2 = ((c_mu - mu.unsqueeze(-2)) @ Q).unbind(-1)
    s = torch.sqrt(c_s2)
    lo = torch.clamp((d1 - _WINDOW * s) / a, -1, 1).asin()
    # an empty window weighs 0
    hi = torch.maximum(torch.clamp((d1 + _WINDOW * s) / a, -1, 1).asin(), lo)
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
    # the entries (1, 1), (1, 2) and (2, 2)
    Izz = torch.stack(
        [(wJ0 * z1 * z1).sum(-1), (w * J1 * z1).sum(-1), (w * J2).sum(-1)], -1
    )
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
    # round-off aside, an expectation of ψ ≥ 0
    r = (c[:, None] * I0 - 0.5 * I2).clamp_min(0)
    if not need_cov:
        return r, None, None
    # The 0-covariance subtracts the uniform-on-the-ellipse moments:
    # ∫x = 0 and ∫xxᵀ/|supp| = R²Σ/4.
    uniform = (R * R / 4)[:, None, None, None] * Sigma.unsqueeze(-3)
    return r, Ix, Ixx - uniform * I0[..., None, None]


def _cov_2d(mu, Sigma, c_mu, c_s2, alpha: int, n_angles: int):
    return _attention_2d(mu, Sigma, c_mu, c_s2, alpha, n_angles, need_cov=True)[1:]
