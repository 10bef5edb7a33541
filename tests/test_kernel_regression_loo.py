"""NadarayaWatson's leave-one-out choice, streamed, against its plain NumPy restatement.

The estimator scores every candidate bandwidth in one pass over the pairs
(``attnlib.kernel_regression._loo_sums``). Restated here as it was computed before, one
``n × n`` kernel matrix per candidate, the diagonal zeroed: the errors and the choice
must agree, for every built-in kernel, in float32 and float64, with and without
``sample_weight``. Integer weights count as copies: the weighted choice equals the one
on the repeated data (the check that scikit-learn's ``check_estimator`` runs).
"""

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist

from attnlib.kernel_regression import KERNELS, NadarayaWatson


def kernel_matrix(name, X, h, copies):
    """κ((x_i - x_j) / h) from the textbook formulas, float64, the diagonal zero, and
    κ(0) for each row (the value of a copy of the point itself).

    The exponential kernels' rows are divided by their largest value over the other
    points and the copies (as the softmax did), so that a tiny bandwidth gives the
    nearest neighbour, not 0/0.
    """
    sq = cdist(X, X, "sqeuclidean") / h**2
    if name in ("gaussian", "laplace"):
        log_k = -sq / 2 if name == "gaussian" else -cdist(X, X, "cityblock") / h
        np.fill_diagonal(log_k, -np.inf)
        top = np.maximum(log_k.max(1), np.where(copies > 0, 0.0, -np.inf))
        return np.exp(log_k - top[:, None]), np.exp(np.minimum(-top, 0))
    if name == "boxcar":
        K = (sq <= 1).astype(float)
    else:
        power = {"epanechnikov": 1, "biweight": 2, "triweight": 3}[name]
        K = np.maximum(0, 1 - sq) ** power
    np.fill_diagonal(K, 0)
    return K, np.ones(len(X))


def old_grid(X):
    """The default candidates: 30 around the median pairwise distance."""
    d = pdist(X[np.random.default_rng(0).permutation(len(X))[:1000]])
    return np.median(d[d > 0]) * np.geomspace(1e-2, 3.0, 30)


def restated_loo_mse(name, X, y, grid, weights=None):
    """One kernel matrix per candidate; a point of weight w leaves w - 1 copies in."""
    X = X.astype(np.float64)
    w = np.ones(len(X)) if weights is None else weights.astype(np.float64)
    copies = np.maximum(w - 1, 0)
    errors = []
    for h in grid:
        K, itself = kernel_matrix(name, X, h, copies)
        with np.errstate(invalid="ignore", divide="ignore"):
            den = K @ w + copies * itself
            pred = (K @ (w * y) + copies * itself * y) / den
        errors.append(
            np.average((pred - y) ** 2, weights=w) if (den > 0).all() else np.inf
        )
    return np.array(errors)


def data(n=70, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    return X, np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_streamed_choice_is_the_old_one(kernel, dtype):
    X, y = data()
    X = X.astype(dtype)
    model = NadarayaWatson(kernel=kernel).fit(X, y)
    grid = old_grid(X.astype(np.float64))
    np.testing.assert_allclose(model.bandwidths_, grid, rtol=1e-6)
    expected = restated_loo_mse(kernel, X, y.astype(dtype), model.bandwidths_)
    assert np.isinf(expected).tolist() == np.isinf(model.loo_mse_).tolist()
    finite = np.isfinite(expected)
    np.testing.assert_allclose(model.loo_mse_[finite], expected[finite], rtol=1e-6)
    assert model.bandwidth_ == model.bandwidths_[np.argmin(expected)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", KERNELS)
def test_weights_up_to_one_keep_the_old_weighted_choice(kernel, dtype):
    """With weights in (0, 1] no copy stays in: today's weighted leave-one-out."""
    X, y = data(seed=1)
    X = X.astype(dtype)
    w = np.random.default_rng(2).uniform(0.05, 1, len(X))
    grid = old_grid(X.astype(np.float64))
    model = NadarayaWatson(kernel=kernel, bandwidths=grid).fit(X, y, sample_weight=w)
    expected = restated_loo_mse(kernel, X, y.astype(dtype), grid, w.astype(dtype))
    assert np.isinf(expected).tolist() == np.isinf(model.loo_mse_).tolist()
    finite = np.isfinite(expected)
    np.testing.assert_allclose(model.loo_mse_[finite], expected[finite], rtol=1e-5)
    assert model.bandwidth_ == grid[np.argmin(expected)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_integer_weights_choose_as_the_repeated_data_would(kernel):
    X, y = data(n=40, seed=3)
    w = np.random.default_rng(4).integers(0, 4, len(X))
    repeats = np.repeat(np.arange(len(X)), w)
    weighted = NadarayaWatson(kernel=kernel).fit(X, y, sample_weight=w)
    repeated = NadarayaWatson(kernel=kernel).fit(X[repeats], y[repeats])
    np.testing.assert_allclose(weighted.bandwidths_, repeated.bandwidths_, rtol=1e-12)
    np.testing.assert_allclose(weighted.loo_mse_, repeated.loo_mse_, rtol=1e-9)
    assert weighted.bandwidth_ == repeated.bandwidth_
    expected = restated_loo_mse(kernel, X, y, weighted.bandwidths_, w)
    np.testing.assert_allclose(weighted.loo_mse_, expected, rtol=1e-9)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), atol=1e-12)


def test_a_tiny_bandwidth_gives_the_nearest_neighbour_not_nan():
    X, y = data(n=30)
    model = NadarayaWatson(bandwidths=[1e-200, 1e-6]).fit(X, y)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    nearest = ((y[D.argmin(1)] - y) ** 2).mean()
    np.testing.assert_allclose(model.loo_mse_, nearest, rtol=1e-12)


def test_a_point_whose_other_neighbours_weigh_zero_makes_the_candidate_infinite():
    X = np.array([[0.0], [0.1], [5.0], [5.1]])
    y = np.arange(4.0)
    w = np.array([1.0, 1.0, 1.0, 0.0])  # point 2's only neighbour weighs nothing
    model = NadarayaWatson(kernel="boxcar", bandwidths=[0.2, 10.0])
    model.fit(X, y, sample_weight=w)
    assert np.isinf(model.loo_mse_[0]) and np.isfinite(model.loo_mse_[1])


@pytest.mark.parametrize("seed", range(5))
def test_the_weighted_default_grid_is_the_repeated_datas(seed):
    """The median of the pairwise distances, pair (i, j) counted w_i w_j times."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 2)) * rng.uniform(0.1, 3, 30)[:, None]
    w = rng.integers(0, 6, 30)
    repeated = X[np.repeat(np.arange(30), w)]
    model = NadarayaWatson(bandwidth="loo")
    weighted = model.fit(X, X[:, 0], sample_weight=w).bandwidths_
    np.testing.assert_allclose(weighted, old_grid(repeated), rtol=1e-12)
