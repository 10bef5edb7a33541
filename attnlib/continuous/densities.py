"""The densities of continuous attention and their closed-form thresholds.

Sparsemax (α = 2) of a quadratic score is a truncated parabola (1-D) or paraboloid
(N-D), of a Laplace score a triangle; softmax (α = 1) of a quadratic score is a
Gaussian. Each density here is written with the threshold λ that makes it integrate to
one, in closed form, as in §2.4 (Eqs. 10–13) of Martins et al. (2020); the support
helpers say where a truncated density is non-zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from scipy.optimize import brentq

from ..utils import as_tensor, check_positive

__all__ = [
    "gaussian_pdf",
    "truncated_parabola_pdf",
    "triangular_pdf",
    "location_scale_pdf",
    "truncated_paraboloid_pdf",
    "truncated_paraboloid_lambda",
    "truncated_parabola_radius",
    "support_ellipse",
]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# --------------------------------------------------------------------------- validation


def _like(x, name: str, like: torch.Tensor, min_ndim: int = 0) -> torch.Tensor:
    """``x`` as a tensor on ``like``'s device; a Python number takes ``like``'s dtype.

    Numbers are converted directly, without a float32 detour; arrays and tensors keep
    their own floating dtype, for :func:`_common` to promote.
    """
    if (
        not isinstance(x, torch.Tensor)
        and np.ndim(x) == 0
        and isinstance(x, (int, float, np.number))
        and not isinstance(x, (bool, np.bool_))
    ):
        x = torch.tensor(float(x), dtype=like.dtype, device=like.device)
    return as_tensor(x, name, min_ndim=min_ndim, device=like.device)


def _common(*xs: torch.Tensor) -> list[torch.Tensor]:
    """The tensors in their common dtype (torch's promotion): float64 is never cast."""
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = torch.promote_types(dtype, x.dtype)
    return [x.to(dtype) for x in xs]


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    # LAPACK has no half-precision factorisations: solve in float32, round the result.
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _positive(x, name: str, like: torch.Tensor | None = None) -> torch.Tensor:
    x = as_tensor(x, name, min_ndim=0) if like is None else _like(x, name, like)
    if (x <= 0).any():
        raise ValueError(
            f"{name} must be positive everywhere, got a minimum of {x.min().item():.3g}"
        )
    return x


def _location_scale(t, mu, scale, name: str) -> list[torch.Tensor]:
    """Points ``t``, locations ``mu`` and positive ``scale`` checked, in one dtype."""
    t = as_tensor(t, "t", min_ndim=0)
    return _common(t, _like(mu, "mu", t), _positive(scale, name, t))


def _where_positive(density, x, scale) -> torch.Tensor:
    """``density(x, scale)``, with a zero gradient wherever the density is zero.

    Outside the support (or where the Gaussian underflows) the density is 0 and so is
    its derivative; computed directly, a tiny scale makes ``x² / scale²`` overflow in
    the backward pass and ``0 · inf`` gives NaN. There the density is evaluated at the
    harmless point ``(0, 1)`` instead, and its value replaced by 0 (the double
    ``where``, so that no infinite intermediate reaches autograd; either safe input
    alone would do for these densities, both keep it so for any ``density``).
    """
    x, scale = torch.broadcast_tensors(x, scale)
    with torch.no_grad():
        inside = density(x, scale) > 0
    value = density(
        torch.where(inside, x, torch.zeros_like(x)),
        torch.where(inside, scale, torch.ones_like(scale)),
    )
    return torch.where(inside, value, torch.zeros_like(value))


def check_alpha(alpha) -> int:
    """``alpha`` checked: 1 (softmax: Gaussian) or 2 (sparsemax: paraboloid).

    ``True`` equals 1 in Python but is not an α (a flag passed in its place).
    """
    if isinstance(alpha, (bool, np.bool_)) or alpha not in (1, 2):
        raise ValueError(
            "alpha must be 1 (softmax: Gaussian) or 2 (sparsemax: truncated "
            f"paraboloid), got {alpha!r}"
        )
    return int(alpha)


def _spd(Sigma, name: str, d: int, like: torch.Tensor) -> torch.Tensor:
    """Check a batch of ``d × d`` covariances; return their symmetric part.

    The result keeps its own floating dtype (on ``like``'s device): callers promote.
    """
    return _check_spd(as_tensor(Sigma, name, min_ndim=2, device=like.device), name, d)


def _check_spd(Sigma: torch.Tensor, name: str, d: int) -> torch.Tensor:
    """:func:`_spd` of a checked tensor ``Sigma``."""
    if Sigma.shape[-2:] != (d, d):
        raise ValueError(
            f"{name} must have shape (..., {d}, {d}), got {tuple(Sigma.shape)}"
        )
    Sigma = 0.5 * (Sigma + Sigma.transpose(-1, -2))
    work = Sigma.to(_work_dtype(Sigma.dtype))
    if (torch.linalg.cholesky_ex(work).info != 0).any():
        raise ValueError(f"{name} must be symmetric positive definite")
    return Sigma


# --------------------------------------------------------------------------- densities


def gaussian_pdf(t, mu, sigma2) -> torch.Tensor:
    """The Gaussian density ``N(t; μ, σ²)``, continuous softmax of ``-(t-μ)²/(2σ²)``.

    Parameters
    ----------
    t : tensor or array-like, any shape
        Points; tensors keep their dtype and device.
    mu : float, tensor or array-like, shape broadcastable with ``t``
        Means.
    sigma2 : float, tensor or array-like, shape broadcastable with ``t``
        Positive variances.

    Returns
    -------
    torch.Tensor, the broadcast shape of the inputs
        The density at ``t``, in the inputs' common dtype.

    Implements
    ----------
    Eq. (2) of the sparse-and-continuous attention paper with ``f(t) = -(t-μ)²/(2σ²)``.
    """
    t, mu, sigma2 = _location_scale(t, mu, sigma2, "sigma2")
    return _where_positive(
        lambda x, s: torch.exp(-0.5 * x**2 / s - 0.5 * torch.log(s) - _LOG_SQRT_2PI),
        t - mu,
        sigma2,
    )


def truncated_parabola_pdf(t, mu, sigma2) -> torch.Tensor:
    """The truncated parabola ``[-(t-μ)²/(2σ²) - λ]₊``, the continuous sparsemax.

    Written ``TP(t; μ, σ²)``.

    ``λ = -½ (3 / (2σ))^(2/3)`` makes it integrate to one; the support is
    ``|t - μ| ≤ (3σ²/2)^(1/3)``.

    Parameters
    ----------
    t : tensor or array-like, any shape
        Points; tensors keep their dtype and device.
    mu : float, tensor or array-like, shape broadcastable with ``t``
        Centres.
    sigma2 : float, tensor or array-like, shape broadcastable with ``t``
        Positive scale parameters σ².

    Returns
    -------
    torch.Tensor, the broadcast shape of the inputs
        The density at ``t``, in the inputs' common dtype.

    Implements
    ----------
    Eq. (10) of the sparse-and-continuous attention paper.
    """
    t, mu, sigma2 = _location_scale(t, mu, sigma2, "sigma2")
    return _where_positive(
        lambda x, s: torch.clamp(
            -(x**2) / (2 * s) + 0.5 * (1.5 / torch.sqrt(s)) ** (2 / 3), min=0
        ),
        t - mu,
        sigma2,
    )


def triangular_pdf(t, mu, b) -> torch.Tensor:
    """The triangular density ``[-λ - |t-μ|/b]₊`` with ``λ = -1/√b``.

    The continuous sparsemax of a Laplace score.

    Parameters
    ----------
    t : tensor or array-like, any shape
        Points; tensors keep their dtype and device.
    mu : float, tensor or array-like, shape broadcastable with ``t``
        Locations.
    b : float, tensor or array-like, shape broadcastable with ``t``
        Positive scales.

    Returns
    -------
    torch.Tensor, the broadcast shape of the inputs
        The density at ``t``, in the inputs' common dtype.

    Implements
    ----------
    Eq. (12) of the sparse-and-continuous attention paper.
    """
    t, mu, b = _location_scale(t, mu, b, "b")
    return _where_positive(
        lambda x, s: torch.clamp(1 / torch.sqrt(s) - x.abs() / s, min=0), t - mu, b
    )


def location_scale_pdf(
    t, mu, sigma, g: Callable, dg: Callable | None = None
) -> torch.Tensor:
    """Continuous sparsemax of the location-scale score ``f(t) = -g'(|t-μ|/σ)/σ``.

    The density is ``[-λ - g'(|t-μ|/σ)/σ]₊`` with ``λ = -g'(a)/σ``, where ``a`` solves
    ``a g'(a) - g(a) + g(0) = ½`` (found with :func:`scipy.optimize.brentq`).
    ``g(u) = u²/2`` gives the triangular density with ``b = σ²``, ``g(u) = u³/6`` the
    truncated parabola with ``σ²_TP = σ³``.

    Parameters
    ----------
    t : tensor or array-like, any shape
        Points; tensors keep their dtype and device.
    mu : float, tensor or array-like, shape broadcastable with ``t``
        Locations.
    sigma : float
        Positive scale.
    g : callable
        Convex, continuously differentiable ``g: [0, ∞) → R`` acting on floats.
    dg : callable, optional
        Its derivative; a central finite difference of ``g`` by default.

    Returns
    -------
    torch.Tensor, the broadcast shape of ``t`` and ``mu``
        The density at ``t``.

    Implements
    ----------
    Eq. (13) of the sparse-and-continuous attention paper.
    """
    if not callable(g) or (dg is not None and not callable(dg)):
        raise ValueError(
            "g (and dg, if given) must be callables mapping a float to a float"
        )
    sigma = check_positive(sigma, "sigma")
    t = as_tensor(t, "t", min_ndim=0)
    t, mu = _common(t, _like(mu, "mu", t))
    if dg is None:

        def dg(u):
            h = 1e-6 * max(1.0, u)
            return (g(u + h) - g(max(u - h, 0.0))) / (u + h - max(u - h, 0.0))

    gap = lambda a: a * dg(a) - g(a) + g(0.0) - 0.5  # noqa: E731
    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if hi > 1e12:
            raise ValueError(
                "a g'(a) - g(a) + g(0) = 1/2 has no solution: is g strongly convex?"
            )
    a = brentq(gap, 0.0, hi, xtol=1e-14)
    u = ((t - mu).abs() / sigma).detach().cpu().double().numpy()
    score = torch.as_tensor(
        np.vectorize(dg, otypes=[float])(u), dtype=t.dtype, device=t.device
    )
    return torch.clamp((dg(a) - score) / sigma, min=0)


def truncated_paraboloid_lambda(Sigma) -> torch.Tensor:
    """The threshold ``λ = -(Γ(N/2 + 2) / √det(2πΣ))^(2/(N+2))``, Eq. (11)'s threshold.

    Parameters
    ----------
    Sigma : tensor or array-like, shape (..., N, N)
        Symmetric positive definite shape matrices (the symmetric part is used).

    Returns
    -------
    torch.Tensor, shape (...)
        The thresholds, negative, in ``Sigma``'s dtype.

    Implements
    ----------
    Eq. (11) of the sparse-and-continuous attention paper.
    """
    Sigma = as_tensor(Sigma, "Sigma", min_ndim=2)
    return _lambda(_check_spd(Sigma, "Sigma", Sigma.shape[-1]))


def _lambda(Sigma: torch.Tensor) -> torch.Tensor:
    """:func:`truncated_paraboloid_lambda` of checked, symmetric ``Sigma``."""
    d = Sigma.shape[-1]
    work = Sigma.to(_work_dtype(Sigma.dtype))
    log_det = torch.linalg.slogdet(2 * math.pi * work).logabsdet
    lam = -torch.exp((2 / (d + 2)) * (math.lgamma(d / 2 + 2) - 0.5 * log_det))
    return lam.to(Sigma.dtype)


def truncated_paraboloid_pdf(t, mu, Sigma) -> torch.Tensor:
    """The N-dimensional truncated paraboloid ``[-λ - ½(t-μ)ᵀΣ⁻¹(t-μ)]₊``.

    The sparsemax counterpart of ``N(μ, Σ)``.

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
    torch.Tensor, shape ``t.shape[:-1]`` (broadcast)
        The density at each point.

    Implements
    ----------
    Eq. (11) of the sparse-and-continuous attention paper.
    """
    t = as_tensor(t, "t", min_ndim=1)
    mu = as_tensor(mu, "mu", min_ndim=1, device=t.device)
    d = t.shape[-1]
    if mu.shape[-1] != d:
        raise ValueError(
            f"mu must have {d} coordinates like t, got shape {tuple(mu.shape)}"
        )
    t, mu, Sigma = _common(t, mu, _spd(Sigma, "Sigma", d, t))
    work = _work_dtype(t.dtype)
    quad = _quadratic_form(t.to(work), mu.to(work), Sigma.to(work))
    lam = _lambda(Sigma.to(work))
    return torch.clamp(-lam - 0.5 * quad, min=0).to(t.dtype)


def _quadratic_form(t, mu, Sigma) -> torch.Tensor:
    """``(t-μ)ᵀΣ⁻¹(t-μ)`` without overflow on the way: ``inf`` where it is too large.

    ``t - μ = s u`` with ``s = max |t - μ|`` per point, so the solve sees ``|u| ≤ 1``
    and ``s²`` multiplies last (at ``t - μ`` near the dtype's largest value a direct
    solve gives ``inf - inf = NaN``); where ``t - μ`` itself overflows it is ``inf``.
    """
    x = (t - mu).unsqueeze(-1)
    s = x.abs().amax((-2, -1), keepdim=True)
    unit = torch.where(s > 0, s, torch.ones_like(s))
    u = torch.where(torch.isfinite(s), x / unit, torch.zeros_like(x))
    q = (u * torch.linalg.solve(Sigma, u)).sum((-2, -1))
    s = s.squeeze(-1).squeeze(-1)
    return torch.where(torch.isfinite(s), q * s * s, torch.full_like(q, math.inf))


def truncated_parabola_radius(sigma2) -> torch.Tensor:
    """Half-width ``a = (3σ²/2)^(1/3)`` of the truncated parabola's support.

    The support is ``[μ - a, μ + a]``.

    Parameters
    ----------
    sigma2 : float, tensor or array-like, any shape
        Positive scale parameters σ².

    Returns
    -------
    torch.Tensor, the shape of ``sigma2``
        The half-widths.

    Implements
    ----------
    The support of Eq. (10) of the sparse-and-continuous attention paper: where
    ``-(t-μ)²/(2σ²) - λ ≥ 0`` with its λ.
    """
    sigma2 = _positive(sigma2, "sigma2")
    return (1.5 * sigma2) ** (1 / 3)


def support_ellipse(
    mu, Sigma, scale: float | None = None
) -> tuple[np.ndarray, float, float, float]:
    """Centre, axis lengths and angle of the ellipse ``(t-μ)ᵀΣ⁻¹(t-μ) ≤ R²``.

    For a 2-D density.

    With ``scale=None``, ``R² = -2λ`` from :func:`truncated_paraboloid_lambda`: the
    exact boundary of the truncated paraboloid's support. With a number, ``R = scale``
    (e.g. 1 or 2 for a Gaussian's 1σ and 2σ contours).

    Parameters
    ----------
    mu : array-like, shape (2,)
        The density's centre.
    Sigma : array-like, shape (2, 2)
        Symmetric positive definite shape matrix.
    scale : float, optional
        The radius ``R`` in units of ``Sigma``; ``None`` for the exact support.

    Returns
    -------
    centre : ndarray, shape (2,)
        ``mu``, as a float64 array.
    width, height : float
        Full lengths of the axes along the first and second coordinate after rotating by
        ``angle``.
    angle : float
        Rotation of the first axis from the first coordinate, in degrees
        (counter-clockwise).

    Implements
    ----------
    The support of Eq. (11) of the sparse-and-continuous attention paper for N = 2.
    """
    mu = as_tensor(mu, "mu", ndim=1, dtype=torch.float64)
    if mu.shape != (2,):
        raise ValueError(f"mu must have shape (2,), got {tuple(mu.shape)}")
    # a copy: reversed views have negative strides
    mu = mu.detach().cpu().numpy().copy()
    Sigma64 = as_tensor(Sigma, "Sigma", ndim=2, dtype=torch.float64).detach().cpu()
    S = _check_spd(Sigma64, "Sigma", 2).numpy()
    if scale is None:
        R = math.sqrt(-2 * _lambda(torch.as_tensor(S)).item())
    else:
        R = check_positive(scale, "scale")
    vals, vecs = np.linalg.eigh(S)
    width, height = 2 * R * np.sqrt(vals[::-1])
    # The larger eigenvalue's vector; an eigenvector's sign is arbitrary, so fold into
    # [0, 180).
    angle = math.degrees(math.atan2(vecs[1, 1], vecs[0, 1])) % 180.0
    return mu, float(width), float(height), angle
