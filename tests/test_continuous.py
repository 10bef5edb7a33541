"""attnlib.continuous against SciPy's quad, entmax's discrete sparsemax and autograd."""

import math

import numpy as np
import pytest
import torch
from entmax import sparsemax
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from attnlib.continuous import (
    ContinuousAttention1D,
    ContinuousAttention2D,
    GaussianRBF,
    continuous_attention_1d,
    continuous_attention_2d,
    gaussian_pdf,
    generalized_covariance_1d,
    generalized_covariance_2d,
    location_scale_pdf,
    ridge_value_coefficients,
    triangular_pdf,
    truncated_parabola_pdf,
    truncated_paraboloid_pdf,
)
from attnlib.continuous.experiments.digits import DigitClassifier, cluttered_digits
from attnlib.continuous.experiments.documents import DocumentClassifier, span_documents

D64 = torch.float64


def _t(x):
    return torch.as_tensor(x, dtype=D64)


# ------------------------------------------------------------- plain NumPy restatements


def np_tp(t, mu, s2):
    lam = -0.5 * (1.5 / np.sqrt(s2)) ** (2 / 3)
    return max(-((t - mu) ** 2) / (2 * s2) - lam, 0.0)


def np_paraboloid(x, y, mu, S):
    d = np.array([x, y]) - mu
    lam = -((math.gamma(3) / np.sqrt(np.linalg.det(2 * np.pi * S))) ** 0.5)
    return max(-lam - 0.5 * d @ np.linalg.solve(S, d), 0.0)


def np_normal(t, m, s2):
    return np.exp(-((t - m) ** 2) / (2 * s2)) / np.sqrt(2 * np.pi * s2)


def np_rbf(x, c, s2):
    x, c = np.atleast_1d(x), np.atleast_1d(c)
    return stats.multivariate_normal(c, s2 * np.eye(len(c))).pdf(x)


BASIS_1D = GaussianRBF(_t([0.1, 0.45, 0.9]), _t([0.01, 0.04, 0.25]))
BASIS_2D = GaussianRBF(_t([[0.2, 0.3], [0.5, 0.5], [0.8, 0.4]]), _t([0.01, 0.02, 0.05]))
MU_1D, S2_1D = _t([0.3, 0.7]), _t([0.02, 0.1])
MU_2D = _t([[0.4, 0.5], [0.6, 0.3]])
SIGMA_2D = _t([[[0.05, 0.01], [0.01, 0.02]], [[0.03, -0.01], [-0.01, 0.04]]])


# ------------------------------------------------------------------ densities


@pytest.mark.parametrize("s2", [0.01, 0.3, 2.0])
def test_1d_densities_integrate_to_one(s2):
    for pdf in (gaussian_pdf, truncated_parabola_pdf, triangular_pdf):
        f = lambda t, pdf=pdf: pdf(_t(t), _t(0.2), _t(s2)).item()  # noqa: E731
        w = max(12 * s2**0.5, 2 * (1.5 * s2) ** (1 / 3))
        ends = [
            0.2 - s2**0.5,
            0.2 - (1.5 * s2) ** (1 / 3),
            0.2,
            0.2 + (1.5 * s2) ** (1 / 3),
            0.2 + s2**0.5,
        ]
        total, _ = integrate.quad(
            f, 0.2 - w, 0.2 + w, points=ends, limit=400, epsabs=1e-12
        )
        assert total == pytest.approx(1, abs=1e-8)


def test_truncated_parabola_matches_plain_formula_and_epanechnikov():
    t = np.linspace(-2, 2, 41)
    ours = truncated_parabola_pdf(_t(t), _t(0.1), _t(0.5)).numpy()
    np.testing.assert_allclose(ours, [np_tp(x, 0.1, 0.5) for x in t], atol=1e-14)
    # σ = √(2/3) gives the Epanechnikov kernel 3/4 (1 - t²) on [-1, 1].
    epa = truncated_parabola_pdf(_t(t), _t(0.0), _t(2 / 3)).numpy()
    np.testing.assert_allclose(epa, np.clip(0.75 * (1 - t**2), 0, None), atol=1e-14)


def test_triangular_matches_scipy():
    t = np.linspace(-3, 3, 61)
    b = 0.7
    ref = stats.triang(c=0.5, loc=0.4 - b**0.5, scale=2 * b**0.5).pdf(t)
    np.testing.assert_allclose(
        triangular_pdf(_t(t), _t(0.4), _t(b)).numpy(), ref, atol=1e-12
    )


def test_location_scale_recovers_triangular_and_truncated_parabola():
    t = _t(np.linspace(-2, 2, 81))
    sigma = 0.8
    tri = location_scale_pdf(t, 0.3, sigma, g=lambda u: u**2 / 2, dg=lambda u: u)
    torch.testing.assert_close(
        tri, triangular_pdf(t, _t(0.3), _t(sigma**2)), atol=1e-10, rtol=0
    )
    # derivative by finite differences
    tp = location_scale_pdf(t, 0.3, sigma, g=lambda u: u**3 / 6)
    torch.testing.assert_close(
        tp, truncated_parabola_pdf(t, _t(0.3), _t(sigma**3)), atol=1e-6, rtol=0
    )
    g = lambda u: u**2 / 2 + u**4  # noqa: E731 -- a family without a named closed form
    x = np.linspace(-3, 3, 60001)
    total = integrate.trapezoid(
        location_scale_pdf(_t(x), 0.0, 1.3, g, dg=lambda u: u + 4 * u**3).numpy(), x
    )
    assert total == pytest.approx(1, abs=1e-6)


def ellipse_dblquad(f, mu, S):
    """∫ f(x, y) over the support ellipse of the truncated paraboloid TP(μ, S).

    With exact chord limits.
    """
    P = np.linalg.inv(S)
    R2 = 2 * (math.gamma(3) / np.sqrt(np.linalg.det(2 * np.pi * S))) ** 0.5
    half = np.sqrt(R2 * S[0, 0])

    def chord(x, sign):
        dx = x - mu[0]
        disc = max(P[0, 1] ** 2 * dx**2 - P[1, 1] * (P[0, 0] * dx**2 - R2), 0.0)
        return mu[1] + (-P[0, 1] * dx + sign * np.sqrt(disc)) / P[1, 1]

    return integrate.dblquad(
        f,
        mu[0] - half,
        mu[0] + half,
        lambda x: chord(x, -1),
        lambda x: chord(x, 1),
        epsabs=1e-12,
    )[0]


@pytest.mark.parametrize(
    "S", [[[0.05, 0.01], [0.01, 0.02]], [[1.0, -0.4], [-0.4, 0.5]]]
)
def test_truncated_paraboloid_integrates_to_one_and_matches_numpy(S):
    S, mu = np.array(S), np.array([0.1, -0.2])
    total = ellipse_dblquad(lambda y, x: np_paraboloid(x, y, mu, S), mu, S)
    assert total == pytest.approx(1, abs=1e-8)
    pts = mu + np.random.default_rng(0).normal(size=(20, 2)) * 2.5 * np.sqrt(
        S.diagonal()
    )
    ours = truncated_paraboloid_pdf(_t(pts), _t(mu), _t(S)).numpy()
    np.testing.assert_allclose(
        ours, [np_paraboloid(x, y, mu, S) for x, y in pts], atol=1e-13
    )
    assert (ours == 0).any() and (ours > 0).any()


def test_paraboloid_in_one_dimension_is_the_truncated_parabola():
    t = np.linspace(-1, 1, 21)
    ours = truncated_paraboloid_pdf(_t(t[:, None]), _t([0.1]), _t([[0.2]]))
    torch.testing.assert_close(ours, truncated_parabola_pdf(_t(t), _t(0.1), _t(0.2)))


# ------------------------------------------------------------------ basis and values


def test_rbf_matches_scipy_in_1d_and_2d():
    t = np.linspace(-0.5, 1.5, 7)
    np.testing.assert_allclose(
        BASIS_1D(_t(t)).numpy(),
        np.stack(
            [
                stats.norm(c, s**0.5).pdf(t)
                for c, s in zip([0.1, 0.45, 0.9], [0.01, 0.04, 0.25])
            ],
            -1,
        ),
    )
    p = np.array([[0.3, 0.3], [0.9, 0.1]])
    ref = np.stack(
        [np_rbf(p, c, s) for c, s in zip(BASIS_2D.mu.numpy(), BASIS_2D.sigma2.numpy())],
        -1,
    )
    np.testing.assert_allclose(BASIS_2D(_t(p)).numpy(), ref)
    assert len(GaussianRBF.linspace(64)) == 64 and GaussianRBF.grid(10).mu.shape == (
        100,
        2,
    )


def test_ridge_coefficients_match_the_papers_formula_and_sklearn():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    H = rng.normal(size=(50, 4))
    pos = np.linspace(0, 1, 50)
    basis = GaussianRBF.linspace(8, sigmas=(0.1,))
    B = ridge_value_coefficients(_t(H), _t(pos), basis, lam=0.1).numpy()  # (N, D)
    F = basis(_t(pos)).numpy().T  # the paper's N × L
    G = F.T @ np.linalg.inv(F @ F.T + 0.1 * np.eye(8))
    np.testing.assert_allclose(B, (H.T @ G).T, atol=1e-10)
    sk = Ridge(alpha=0.1, fit_intercept=False).fit(F.T, H)
    np.testing.assert_allclose(B, sk.coef_.T, atol=1e-8)


@pytest.mark.parametrize("n_basis", [32, 128])
def test_ridge_coefficients_are_accurate_in_float32(n_basis):
    # At the chapter's settings cond(FᵀF + λI) is ~1e7: a float32 solve of the normal
    # equations was off by 28-190 % of B's largest entry.
    from scipy.linalg import solve

    rng = np.random.default_rng(1)
    H = np.maximum(rng.normal(size=(256, 8)), 0).astype(np.float32)
    pos = np.linspace(0, 1, 256, dtype=np.float32)
    basis = GaussianRBF.linspace(n_basis, sigmas=(0.1, 0.5))
    B = ridge_value_coefficients(torch.from_numpy(H), torch.from_numpy(pos), basis)
    assert B.dtype == torch.float32
    F = basis(torch.from_numpy(pos.astype(float))).numpy()
    ref = solve(F.T @ F + 1e-3 * np.eye(n_basis), F.T @ H.astype(float), assume_a="pos")
    err = np.abs(B.numpy() - ref).max() / np.abs(ref).max()
    assert err < 1e-5, err


# ----------------------------------------------------------- forward against quadrature


@pytest.mark.parametrize("alpha", [1, 2])
def test_1d_attention_matches_quad(alpha):
    r = continuous_attention_1d(MU_1D, S2_1D, BASIS_1D, alpha)
    for i, (m, s2) in enumerate(zip(MU_1D.tolist(), S2_1D.tolist())):
        dens = (
            (lambda t, m=m, s2=s2: np_normal(t, m, s2))
            if alpha == 1
            else (lambda t, m=m, s2=s2: np_tp(t, m, s2))
        )
        a = (1.5 * s2) ** (1 / 3) if alpha == 2 else 12 * s2**0.5
        for j, (c, cs2) in enumerate(
            zip(BASIS_1D.mu.tolist(), BASIS_1D.sigma2.tolist())
        ):
            ref, _ = integrate.quad(
                lambda t, dens=dens, c=c, cs2=cs2: dens(t) * np_normal(t, c, cs2),
                m - a,
                m + a,
                epsabs=1e-13,
                limit=200,
            )
            assert r[i, j].item() == pytest.approx(ref, abs=1e-6, rel=1e-9)


@pytest.mark.parametrize("alpha", [1, 2])
def test_2d_attention_matches_dblquad(alpha):
    r = continuous_attention_2d(MU_2D, SIGMA_2D, BASIS_2D, alpha, n_angles=128)
    for i in range(2):
        m, S = MU_2D[i].numpy(), SIGMA_2D[i].numpy()
        P, det = np.linalg.inv(S), np.linalg.det(S)
        for j in range(len(BASIS_2D)):
            c, s2 = BASIS_2D.mu[j].numpy(), BASIS_2D.sigma2[j].item()
            psi = lambda x, y, c=c, s2=s2: (
                np.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2) / (2 * s2))
                / (2 * np.pi * s2)
            )  # noqa: E731
            if alpha == 2:
                ref = ellipse_dblquad(
                    lambda y, x, m=m, S=S, psi=psi: (
                        np_paraboloid(x, y, m, S) * psi(x, y)
                    ),
                    m,
                    S,
                )
            else:
                gauss = lambda x, y, P=P, m=m, det=det: (
                    np.exp(  # noqa: E731
                        -0.5
                        * (
                            P[0, 0] * (x - m[0]) ** 2
                            + 2 * P[0, 1] * (x - m[0]) * (y - m[1])
                            + P[1, 1] * (y - m[1]) ** 2
                        )
                    )
                    / (2 * np.pi * np.sqrt(det))
                )
                w = 8 * np.sqrt(S.diagonal())
                ref = integrate.dblquad(
                    lambda y, x, gauss=gauss, psi=psi: gauss(x, y) * psi(x, y),
                    m[0] - w[0],
                    m[0] + w[0],
                    m[1] - w[1],
                    m[1] + w[1],
                    epsabs=1e-11,
                )[0]
            assert r[i, j].item() == pytest.approx(ref, abs=1e-6)


def test_2d_paraboloid_with_narrow_rbfs_in_a_long_tilted_ellipse():
    # The hard case for quadrature: RBFs 30× narrower than the ellipse, at its centre,
    # its tip, its flank and just outside.
    m, angle = np.array([0.45, 0.55]), 0.5
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    S = rot @ np.diag([0.3, 0.004]) @ rot.T
    # the support is xᵀS⁻¹x ≤ R²
    R2 = 2 * (math.gamma(3) / np.sqrt(np.linalg.det(2 * np.pi * S))) ** 0.5
    tip, flank = np.sqrt(R2 * 0.3) * rot[:, 0], np.sqrt(R2 * 0.004) * rot[:, 1]
    centres = m + np.array([[0, 0], 0.97 * tip, -0.9 * flank, 1.02 * tip + 0.5 * flank])
    s2 = 1e-3
    basis = GaussianRBF(_t(centres), _t([s2] * 4))
    r = continuous_attention_2d(_t(m[None]), _t(S[None]), basis, alpha=2)[0]
    _, cov_xx = generalized_covariance_2d(_t(m[None]), _t(S[None]), basis, alpha=2)
    for j, c in enumerate(centres):
        psi = lambda x, y, c=c: (
            np.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2) / (2 * s2)) / (2 * np.pi * s2)
        )  # noqa: E731
        assert r[j].item() == pytest.approx(
            ellipse_dblquad(
                lambda y, x, psi=psi: np_paraboloid(x, y, m, S) * psi(x, y), m, S
            ),
            abs=1e-8,
        )
        # The 0-covariance of x₁x₂ with ψ: ∫_supp x₁x₂ψ minus the uniform-on-the-ellipse
        # moment R²S₁₂/4 times ∫_supp ψ.
        mass = ellipse_dblquad(lambda y, x, psi=psi: psi(x, y), m, S)
        cross = ellipse_dblquad(
            lambda y, x, psi=psi: (x - m[0]) * (y - m[1]) * psi(x, y), m, S
        )
        assert cov_xx[0, j, 0, 1].item() == pytest.approx(
            cross - R2 * S[0, 1] / 4 * mass, abs=1e-10
        )


@settings(max_examples=20, deadline=None)
@given(mu=st.floats(-1, 2), s2=st.floats(1e-3, 1.0), alpha=st.sampled_from([1, 2]))
def test_weights_are_an_average_of_the_basis(mu, s2, alpha):
    # r_j = E_p[ψ_j] lies between the smallest and largest value of ψ_j: check on a fine
    # grid.
    basis = GaussianRBF.linspace(6, sigmas=(0.2,))
    r = continuous_attention_1d(_t([mu]), _t([s2]), basis, alpha)[0]
    grid = basis(_t(np.linspace(mu - 20, mu + 20, 20001)))
    assert (r >= 0).all() and (r <= grid.max(0).values + 1e-12).all()


@pytest.mark.parametrize("alpha", [1, 2])
def test_1d_attention_is_the_limit_of_discrete_attention_on_a_fine_grid(alpha):
    # On a grid of step h, discrete softmax/sparsemax of h·f(t_i) (plus log h for
    # softmax) gives weights ≈ h p(t_i).
    h = 1e-4
    t = _t(np.arange(-2, 3, h))
    f = -((t - 0.4) ** 2) / (2 * 0.05)
    w = torch.softmax(f + math.log(h), 0) if alpha == 1 else sparsemax(h * f, dim=0)
    discrete = w @ BASIS_1D(t)
    torch.testing.assert_close(
        discrete,
        continuous_attention_1d(_t([0.4]), _t([0.05]), BASIS_1D, alpha)[0],
        atol=1e-6,
        rtol=1e-5,
    )


# -------------------------------------------------------------- backward: Proposition 3


@pytest.mark.parametrize("alpha", [1, 2])
def test_1d_backward_gradcheck(alpha):
    mu = MU_1D.clone().requires_grad_()
    s2 = S2_1D.clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda m, s: continuous_attention_1d(m, s, BASIS_1D, alpha), (mu, s2)
    )


@pytest.mark.parametrize("alpha", [1, 2])
def test_2d_backward_gradcheck(alpha):
    mu = MU_2D.clone().requires_grad_()
    S = SIGMA_2D.clone().requires_grad_()
    fn = lambda m, s: continuous_attention_2d(m, s, BASIS_2D, alpha, n_angles=64)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (mu, S), atol=1e-6)


@pytest.mark.parametrize("alpha", [1, 2])
def test_1d_backward_matches_autograd_through_quadrature(alpha):
    # Autograd through a fine trapezoid rule whose nodes move with (μ, σ²): an
    # independent Jacobian.
    def by_quadrature(mu, s2):
        half = (1.5 * s2) ** (1 / 3) if alpha == 2 else 12 * s2.sqrt()
        t = mu[:, None] + half[:, None] * torch.linspace(-1, 1, 20001, dtype=D64)
        dens = (
            gaussian_pdf(t, mu[:, None], s2[:, None])
            if alpha == 1
            else truncated_parabola_pdf(t, mu[:, None], s2[:, None])
        )
        vals = dens.unsqueeze(-1) * BASIS_1D(t)
        return torch.trapezoid(vals, t.unsqueeze(-1), dim=1)

    jac_ours = torch.autograd.functional.jacobian(
        lambda m, s: continuous_attention_1d(m, s, BASIS_1D, alpha), (MU_1D, S2_1D)
    )
    jac_quad = torch.autograd.functional.jacobian(by_quadrature, (MU_1D, S2_1D))
    for a, b in zip(jac_ours, jac_quad):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_covariance_of_gaussian_matches_quad():
    cov_x, cov_xx = generalized_covariance_1d(MU_1D, S2_1D, BASIS_1D, alpha=1)
    m, s2 = MU_1D[0].item(), S2_1D[0].item()
    c, cs2 = BASIS_1D.mu[1].item(), BASIS_1D.sigma2[1].item()
    psi = lambda t: np_normal(t, c, cs2)  # noqa: E731
    p = lambda t: np_normal(t, m, s2)  # noqa: E731
    E = lambda g: integrate.quad(
        lambda t: p(t) * g(t), m - 3, m + 3, epsabs=1e-13, limit=200
    )[0]  # noqa: E731
    assert cov_x[0, 1].item() == pytest.approx(E(lambda t: (t - m) * psi(t)), abs=1e-8)
    assert cov_xx[0, 1].item() == pytest.approx(
        E(lambda t: (t - m) ** 2 * psi(t)) - s2 * E(psi), abs=1e-8
    )


def test_float32_in_float32_out():
    r = continuous_attention_2d(
        MU_2D.float(), SIGMA_2D.float(), GaussianRBF.grid(3, 0.01), alpha=2
    )
    assert r.dtype == torch.float32 and r.shape == (2, 9)
    torch.testing.assert_close(
        r.double(),
        continuous_attention_2d(MU_2D, SIGMA_2D, GaussianRBF.grid(3, 0.01), alpha=2),
        atol=1e-4,
        rtol=1e-3,
    )


# ------------------------------------------------------------------ modules


def test_modules_encoder_and_moment_matching():
    torch.manual_seed(0)
    H = torch.randn(3, 20, 5)
    enc = ContinuousAttention1D(GaussianRBF.linspace(8), in_features=5, alpha=2)
    out = enc(H)
    assert (
        out.context.shape == (3, 5)
        and ((out.mu > 0) & (out.mu < 1)).all()
        and (out.sigma2 > 0).all()
    )
    out.context.sum().backward()
    assert (
        enc.head.weight.grad is not None and torch.isfinite(enc.head.weight.grad).all()
    )
    # Moment matching a one-hot weight vector puts μ on that token's position.
    w = torch.zeros(3, 20)
    w[:, 5] = 1
    mm = ContinuousAttention1D(GaussianRBF.linspace(8), alpha=1)(H, weights=w)
    torch.testing.assert_close(mm.mu, torch.full((3,), 5 / 19))
    img = torch.randn(2, 6, 6, 4)
    out2 = ContinuousAttention2D(GaussianRBF.grid(4, 0.01), in_features=4, alpha=2)(img)
    assert out2.context.shape == (2, 4) and out2.sigma2.shape == (2, 2, 2)
    w2 = torch.softmax(torch.randn(2, 36), -1)
    out3 = ContinuousAttention2D(GaussianRBF.grid(4, 0.01), alpha=1)(img, weights=w2)
    pos = ContinuousAttention2D.grid_positions(6, 6)
    torch.testing.assert_close(out3.mu, w2 @ pos)


def test_experiment_models_and_data():
    torch.manual_seed(0)
    data = cluttered_digits(6, size=16, seed=0)
    assert (
        data.images.shape == (6, 1, 16, 16)
        and data.labels.shape == (6,)
        and (data.corner <= 8).all()
    )
    # Without noise and clutter the canvas is one scikit-learn digit of the right label
    # at the corner, zero elsewhere.
    from sklearn.datasets import load_digits

    digits = load_digits()
    clean = cluttered_digits(3, size=12, n_clutter=0, noise=0.0, seed=1)
    for image, label, (r, c) in zip(
        clean.images[:, 0].numpy(), clean.labels.tolist(), clean.corner.tolist()
    ):
        block = image[r : r + 8, c : c + 8].copy()
        image[r : r + 8, c : c + 8] = 0
        assert not image.any()
        assert (
            np.abs(digits.images[digits.target == label] / 16 - block).sum((1, 2)).min()
            < 1e-6
        )
    for kind, alpha in (("discrete", 2), ("continuous", 2)):
        logits, w, cont = DigitClassifier(kind, alpha=alpha, n_side=8)(data.images)
        assert logits.shape == (6, 10) and w.shape == (6, 64)
        torch.testing.assert_close(w.sum(-1), torch.ones(6))
        assert (cont is None) == (kind == "discrete")
    docs = span_documents(4, 32, span=6, seed=0)
    assert (
        docs.tokens.shape == (4, 32) and ((docs.start >= 0) & (docs.start <= 26)).all()
    )
    logits, w, cont = DocumentClassifier(48, "combined", alpha=2, n_basis=8)(
        docs.tokens
    )
    assert logits.shape == (4, 2) and w.shape == (4, 32) and cont.r.shape == (4, 8)


# ------------------------------------------------------------------ bad inputs


def test_bad_inputs():
    with pytest.raises(ValueError, match="sigma2"):
        gaussian_pdf(0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="sigma2"):
        truncated_parabola_pdf(0.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="b must be positive"):
        triangular_pdf(0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="sigma"):
        location_scale_pdf(0.0, 0.0, 0.0, g=lambda u: u**2)
    with pytest.raises(ValueError, match=r"g \(and dg, if given\) must be"):
        location_scale_pdf(0.0, 0.0, 1.0, g=None)
    with pytest.raises(ValueError, match="is g strongly convex"):
        location_scale_pdf(0.0, 0.0, 1.0, g=lambda u: 0.0 * u)
    with pytest.raises(ValueError, match="Sigma"):
        truncated_paraboloid_pdf([0.0, 0.0], [0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="mu must not be empty"):
        GaussianRBF([], 0.1)
    with pytest.raises(ValueError, match="sigma2"):
        GaussianRBF([0.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="sigma2"):
        continuous_attention_1d(MU_1D, _t([0.1, 0.0]), BASIS_1D)
    with pytest.raises(ValueError, match="alpha"):
        continuous_attention_1d(MU_1D, S2_1D, BASIS_1D, alpha=1.5)
    with pytest.raises(ValueError, match="basis"):
        continuous_attention_1d(MU_1D, S2_1D, BASIS_2D)
    with pytest.raises(ValueError, match="Sigma"):
        continuous_attention_2d(MU_2D, -SIGMA_2D, BASIS_2D)
    with pytest.raises(ValueError, match="positions"):
        ridge_value_coefficients(torch.randn(5, 3), torch.rand(4), BASIS_1D)
    with pytest.raises(ValueError, match="lam must be a finite positive"):
        ridge_value_coefficients(torch.randn(5, 3), torch.rand(5), BASIS_1D, lam=0)
    with pytest.raises(ValueError, match="pass weights"):
        ContinuousAttention1D(BASIS_1D)(torch.randn(2, 5, 3))
    # The constructors' private path keeps their refusals: a flag for a number, and
    # variances that round to 0 or overflow the default dtype (float32).
    with pytest.raises(ValueError, match="sigmas must hold numbers"):
        GaussianRBF.linspace(4, (True, 0.5))
    with pytest.raises(ValueError, match="sigmas"):
        GaussianRBF.linspace(4, (1e-30, 0.5))
    with pytest.raises(ValueError, match="sigma2"):
        GaussianRBF.grid(3, 1e39)
    with pytest.raises(ValueError, match="sigma2"):
        GaussianRBF.grid(3, 1e-50)
    # ... and centres that high - low overflows (each of low and high finite).
    with pytest.raises(ValueError, match="low and high"):
        GaussianRBF.linspace(4, (0.1,), -3e38, 3e38)
    with pytest.raises(ValueError, match="low and high"):
        GaussianRBF.grid(2, 1e-3, -2e38, 2e38)
    # A 2-D basis reads positions (L, 2), whatever the private path behind it.
    with pytest.raises(ValueError, match=r"positions must have shape \(L, 2\)"):
        ridge_value_coefficients(torch.randn(2, 5, 3), torch.rand(5, 1), BASIS_2D)
    with pytest.raises(ValueError, match="kind"):
        DigitClassifier("grid")
    with pytest.raises(ValueError, match="kind"):
        DocumentClassifier(48, "global")
    with pytest.raises(ValueError, match="size"):
        cluttered_digits(3, size=4)
    with pytest.raises(ValueError, match="span"):
        span_documents(3, 10, span=20)


@pytest.mark.parametrize("two_d", [False, True])
def test_a_module_refuses_a_density_that_overflows(two_d):
    """The modules attend through trusted code: the density that their head makes of
    too large an H is refused there, naming H, rather than read out."""
    if two_d:
        module = ContinuousAttention2D(BASIS_2D, in_features=3)
        H = torch.full((1, 2, 2, 3), 3e38)
    else:
        module = ContinuousAttention1D(BASIS_1D, in_features=3)
        H = torch.full((1, 5, 3), 3e38)
    with torch.no_grad():
        module.head.weight.fill_(1.0)
    with pytest.raises(ValueError, match="H is too large"):
        module(H)


def test_a_module_refuses_a_variance_its_dtype_rounds_to_zero():
    """σ² = var + min_var with a min_var below float32's range is 0: refused, not a
    point mass whose gradients are NaN."""
    module = ContinuousAttention1D(BASIS_1D, min_var=1e-46)
    with pytest.raises(ValueError, match="variance is 0"):
        module(torch.randn(2, 5, 3), torch.eye(5)[:2])


@pytest.mark.parametrize(
    "two_d, name, value, message",
    [
        (False, "alpha", 3, "alpha must be 1"),
        (False, "alpha", True, "alpha must be 1"),
        (False, "lam", 0.0, "lam must be a finite positive"),
        (False, "lam", math.nan, "lam must be a finite positive"),
        (False, "min_var", -1.0, "min_var must be a finite positive"),
        (True, "n_angles", 2, "n_angles must be an integer at least 8"),
    ],
)
def test_a_hyperparameter_is_checked_when_set(two_d, name, value, message):
    """Checked once, where it is set: in the constructor and on assignment, since the
    forward pass trusts it."""
    basis = BASIS_2D if two_d else BASIS_1D
    module = (ContinuousAttention2D if two_d else ContinuousAttention1D)(basis)
    with pytest.raises(ValueError, match=message):
        setattr(module, name, value)
    with pytest.raises(ValueError, match=message):
        type(module)(basis, **{name: value})


def test_a_subclass_of_the_basis_is_built_by_its_own_constructor():
    class Tagged(GaussianRBF):
        def __init__(self, mu, sigma2):
            super().__init__(mu, sigma2)
            self.tag = "built"

    assert Tagged.linspace(4).tag == Tagged.grid(2).tag == "built"


# ----------------------------------------------- moment matching (mutation campaign)
def test_1d_moment_matching_gives_the_weights_mean_and_variance():
    """Combined variant: μ = E_w[t], σ² = E_w[t²] - μ² + min_var, t = linspace(0, 1)."""
    w = torch.softmax(
        torch.randn(3, 20, dtype=D64, generator=torch.Generator().manual_seed(9)), -1
    )
    H = torch.randn(3, 20, 5, dtype=D64)
    out = ContinuousAttention1D(GaussianRBF.linspace(8), min_var=1e-3)(H, weights=w)
    t, wn = np.linspace(0, 1, 20), w.numpy()
    mu = wn @ t
    var = (wn * (t[None] - mu[:, None]) ** 2).sum(1)  # centred: a NumPy restatement
    np.testing.assert_allclose(out.mu.numpy(), mu, rtol=1e-12)
    np.testing.assert_allclose(out.sigma2.numpy(), var + 1e-3, rtol=1e-10)


def test_grid_positions_are_the_cell_centres_row_major():
    """A 2 x 4 grid on [0, 1]²: row centres 1/4, 3/4 and column centres 1/8 ... 7/8."""
    pos = ContinuousAttention2D.grid_positions(2, 4, dtype=D64).numpy()
    rows, cols = [0.25, 0.75], [0.125, 0.375, 0.625, 0.875]
    np.testing.assert_array_equal(pos, [[r, c] for r in rows for c in cols])


def test_2d_moment_matching_gives_the_weights_mean_and_covariance():
    """Combined variant: μ = E_w[p], Σ = E_w[(p - μ)(p - μ)ᵀ] + min_var I, cells p."""
    w = torch.softmax(
        torch.randn(2, 12, dtype=D64, generator=torch.Generator().manual_seed(10)), -1
    )
    img = torch.randn(2, 3, 4, 5, dtype=D64)
    module = ContinuousAttention2D(GaussianRBF.grid(3, 0.05), min_var=1e-3)
    out = module(img, weights=w)
    r, c = np.meshgrid(
        (np.arange(3) + 0.5) / 3, (np.arange(4) + 0.5) / 4, indexing="ij"
    )
    p, wn = np.stack([r.ravel(), c.ravel()], 1), w.numpy()
    mu = wn @ p
    d = p[None] - mu[:, None]
    cov = np.einsum("bl,bli,blj->bij", wn, d, d) + 1e-3 * np.eye(2)
    np.testing.assert_allclose(out.mu.numpy(), mu, rtol=1e-12)
    np.testing.assert_allclose(out.sigma2.numpy(), cov, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    "name", ["gaussian_pdf", "truncated_parabola_pdf", "triangular_pdf"]
)
@pytest.mark.parametrize(
    "dtype, scale",
    [(torch.float32, 1e-30), (torch.float32, 1e-38), (torch.float64, 1e-300)],
)
def test_1d_density_has_zero_gradient_where_it_is_zero_at_a_tiny_scale(
    name, dtype, scale
):
    """Issue 52: at σ² = 1e-30 in float32, x²/σ⁴ overflowed in the backward pass and the
    gradient of a zero density was NaN; the true derivative there is 0 (the density is 0
    on a neighbourhood). Inside the support the value stays the closed form's."""
    import attnlib.continuous.densities as D

    f = getattr(D, name)
    t = torch.tensor([0.5, -2.0], dtype=dtype, requires_grad=True)
    mu = torch.tensor(0.0, dtype=dtype, requires_grad=True)
    s = torch.tensor(scale, dtype=dtype, requires_grad=True)
    y = f(t, mu, s)
    assert (y == 0).all()
    y.sum().backward()
    for g in (t.grad, mu.grad, s.grad):
        assert torch.equal(g, torch.zeros_like(g))
    # ordinary scale: the value and gradient of the plain expression, in float64
    x = np.array([0.1, -0.4, 2.0])
    s2 = 0.3
    plain = {
        "gaussian_pdf": np.exp(-(x**2) / (2 * s2)) / np.sqrt(2 * np.pi * s2),
        "truncated_parabola_pdf": np.maximum(
            -(x**2) / (2 * s2) + 0.5 * (1.5 / np.sqrt(s2)) ** (2 / 3), 0
        ),
        "triangular_pdf": np.maximum(1 / np.sqrt(s2) - np.abs(x) / s2, 0),
    }[name]
    got = f(torch.tensor(x), 0.0, torch.tensor(s2, dtype=torch.float64))
    np.testing.assert_allclose(got.numpy(), plain, rtol=1e-13, atol=1e-15)
    s = torch.tensor(s2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: f(torch.tensor(x), 0.0, v), (s,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_densities_far_from_the_mean_are_zero_not_nan(dtype):
    """Issue 52 reported NaN from the truncated paraboloid at t or μ near 1e29; over
    this grid every density is finite (0 far from the mean), in both dtypes."""
    import itertools

    import attnlib.continuous.densities as D

    big = [0.0, 1e29, -1e29, 1e30, 3e38] + (
        [1e154, 1e200] if dtype == torch.float64 else []
    )
    for t, mu, s in itertools.product(big, big, [1.0, 1e-30, 1e29, 1e38]):
        T = torch.tensor([t], dtype=dtype)
        M = torch.tensor(mu, dtype=dtype)
        S = torch.tensor(s, dtype=dtype)
        for y in (
            D.truncated_paraboloid_pdf(T[None], M[None], S.reshape(1, 1)),
            D.truncated_parabola_pdf(T, M, S),
            D.gaussian_pdf(T, M, S),
            D.triangular_pdf(T, M, S),
        ):
            assert torch.isfinite(y).all(), (t, mu, s)
