"""Tests of attnlib.kernel_regression against independent restatements.

NumPy, SciPy, scikit-learn, PyTorch.
"""

import os
from unittest import mock

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from attnlib import kernel_regression as kr
from attnlib.kernel_regression import (
    KERNELS,
    MetricNadarayaWatson,
    NadarayaWatson,
    loo_predictions,
    nadaraya_watson,
)


def make_data(n=40, n_query=9, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d))
    y = np.sin(3 * x[:, 0]) + 0.1 * rng.standard_normal(n)
    return rng.uniform(-1, 1, (n_query, d)), x, y


def numpy_kernel(name, xq, xt, h):
    """Kernel matrices written out from their textbook definitions."""
    if name == "gaussian":
        return rbf_kernel(xq, xt, gamma=1 / (2 * h**2))
    if name == "laplace":
        return laplacian_kernel(xq, xt, gamma=1 / h)
    u = cdist(xq, xt) / h
    powers = {"epanechnikov": 1, "biweight": 2, "triweight": 3}
    if name in powers:
        return np.maximum(0, 1 - u**2) ** powers[name]
    assert name == "boxcar", name
    return (u <= 1).astype(float)


@pytest.mark.parametrize("kernel", KERNELS)
def test_matches_textbook_formula(kernel):
    xq, xt, y = make_data()
    K = numpy_kernel(kernel, xq, xt, 0.6)
    args = torch.from_numpy(xq), torch.from_numpy(xt), torch.from_numpy(y)
    pred, weights = nadaraya_watson(
        *args, kernel=kernel, bandwidth=0.6, return_weights=True
    )
    np.testing.assert_allclose(
        weights.numpy(), K / K.sum(1, keepdims=True), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(pred.numpy(), K @ y / K.sum(1), rtol=1e-10)
    assert pred.dtype == torch.float64 and pred.shape == (9,)
    # fused or blockwise: no weights
    alone = nadaraya_watson(*args, kernel=kernel, bandwidth=0.6)
    np.testing.assert_allclose(alone.numpy(), K @ y / K.sum(1), rtol=1e-10)


def test_callable_kernel_and_vector_targets():
    xq, xt, y = make_data(d=3)
    Y = np.stack([y, y**2], 1)
    cauchy = lambda q, k: 1 / (1 + torch.cdist(q, k) ** 2)  # noqa: E731
    pred = nadaraya_watson(
        torch.tensor(xq, dtype=torch.float32), xt, Y, kernel=cauchy, bandwidth=0.5
    )
    K = 1 / (1 + (cdist(xq, xt) / 0.5) ** 2)
    np.testing.assert_allclose(pred.numpy(), K @ Y / K.sum(1, keepdims=True), rtol=1e-5)
    # float32 queries, float64 training data: their common dtype, never a cast down
    assert pred.shape == (9, 2) and pred.dtype == torch.float64


def test_one_dimensional_inputs_are_points():
    xq, xt, y = make_data(d=1)
    a = nadaraya_watson(xq[:, 0], xt[:, 0], y, bandwidth=0.3)
    b = nadaraya_watson(xq, xt, y, bandwidth=0.3)
    torch.testing.assert_close(a, b)


def test_gaussian_is_scaled_dot_attention_on_the_sphere():
    """Eq. (7): on unit vectors the Gaussian kernel is softmax(x·x_j / σ²).

    Computed here by PyTorch.
    """
    xq, xt, y = make_data(d=4)
    xq, xt = (
        torch.from_numpy(a / np.linalg.norm(a, axis=1, keepdims=True)) for a in (xq, xt)
    )
    sigma = 0.7
    ref = F.scaled_dot_product_attention(
        xq, xt, torch.from_numpy(y)[:, None], scale=1 / sigma**2
    )[:, 0]
    torch.testing.assert_close(nadaraya_watson(xq, xt, y, bandwidth=sigma), ref)


def test_limits_nearest_neighbour_and_mean():
    xq, xt, y = make_data()
    knn = KNeighborsRegressor(n_neighbors=1).fit(xt, y).predict(xq)
    np.testing.assert_allclose(
        nadaraya_watson(xq, xt, y, bandwidth=1e-3).numpy(), knn, rtol=1e-5
    )
    np.testing.assert_allclose(
        nadaraya_watson(xq, xt, y, bandwidth=1e4).numpy(),
        np.full(9, y.mean()),
        rtol=1e-4,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
@pytest.mark.parametrize("path", ["fused", "blockwise", "weights", "loo"])
def test_tiny_bandwidth_is_the_nearest_neighbour_not_nan(dtype, kernel, path):
    xq, xt, y = (torch.tensor(a, dtype=dtype) for a in make_data())
    p = 1 if kernel == "laplace" else 2
    if path == "loo":  # each training point predicted by its nearest other point
        knn = KNeighborsRegressor(n_neighbors=2, p=p).fit(xt.double(), y.double())
        knn = y.double().numpy()[
            knn.kneighbors(xt.double(), return_distance=False)[:, 1]
        ]
    else:
        knn = (
            KNeighborsRegressor(n_neighbors=1, p=p)
            .fit(xt.double(), y.double())
            .predict(xq.double())
        )
    if (
        path == "blockwise"
    ):  # inputs that require gradients take the blockwise attention path
        xq.requires_grad_()
    for h in (1e-6, 1e-30, 1e-300):
        if path == "weights":
            pred, weights = nadaraya_watson(
                xq, xt, y, kernel=kernel, bandwidth=h, return_weights=True
            )
            assert torch.isfinite(weights).all()
        elif path == "loo":
            pred = loo_predictions(xt, y, kernel=kernel, bandwidth=h)
        else:
            pred = nadaraya_watson(xq, xt, y, kernel=kernel, bandwidth=h)
        np.testing.assert_allclose(pred.detach().double().numpy(), knn, rtol=1e-6)


def test_compact_kernel_without_neighbours_raises():
    xq, xt, y = make_data()
    for kernel in ("epanechnikov", "biweight", "triweight", "boxcar"):
        with pytest.raises(ValueError, match="x_query row 0 has no training point"):
            nadaraya_watson(xq + 10, xt, y, kernel=kernel, bandwidth=0.5)
        with pytest.raises(ValueError, match="x_query row 0 .*support"):
            nadaraya_watson(
                xq + 10, xt, y, kernel=kernel, bandwidth=0.5, return_weights=True
            )
    far = np.concatenate([xq, xq[:2] + 10])
    with pytest.raises(ValueError, match="x_query row 9 .*support"):
        nadaraya_watson(far, xt, y, kernel="boxcar", bandwidth=0.5)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 3000),
    n_query=st.integers(1, 20),
    d=st.integers(1, 5),
    kernel=st.sampled_from(["gaussian", "laplace", "epanechnikov"]),
    seed=st.integers(0, 10_000),
)
def test_fused_and_blockwise_paths_equal_the_dense_weights(n, n_query, d, kernel, seed):
    # n up to 3000 crosses the fused kernel's key blocks (512 to 1024 keys here); a
    # budget of 64 elements makes the blockwise path take several blocks of queries.
    with mock.patch.object(kr.core, "_BLOCK_ELEMENTS", 64):
        check_paths_agree(n, n_query, d, kernel, seed)


def check_paths_agree(n, n_query, d, kernel, seed):
    rng = np.random.default_rng(seed)
    xq, xt = rng.normal(size=(n_query, d)), rng.normal(size=(n, d)) + 3.0
    y = rng.normal(size=(n, 2))
    h = float(rng.uniform(0.05, 3))
    if kernel == "epanechnikov":  # compact: every query keeps its nearest point inside
        nearest = np.sqrt(((xq[:, None] - xt[None]) ** 2).sum(-1)).min(1).max()
        h = max(10.0, 1.01 * nearest)  # (n=1, d=5, seed 12 had a query 10.1 away)
    dense, _ = nadaraya_watson(
        xq, xt, y, kernel=kernel, bandwidth=h, return_weights=True
    )
    fused = nadaraya_watson(xq, xt, y, kernel=kernel, bandwidth=h)
    blockwise = nadaraya_watson(
        torch.tensor(xq, requires_grad=True), xt, y, kernel=kernel, bandwidth=h
    )
    np.testing.assert_allclose(fused.numpy(), dense.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        blockwise.detach().numpy(), dense.numpy(), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
def test_fused_float32_matches_a_float64_numpy_restatement(kernel):
    rng = np.random.default_rng(3)
    xt, xq = rng.random((5000, 3)), rng.random((50, 3))
    y = np.stack([np.sin(6 * xt[:, 0]), xt[:, 1]], 1)
    K = numpy_kernel(kernel, xq, xt, 0.05)
    ref = K @ y / K.sum(1, keepdims=True)
    ours = nadaraya_watson(
        xq.astype(np.float32),
        xt.astype(np.float32),
        y.astype(np.float32),
        kernel=kernel,
        bandwidth=0.05,
    )
    assert ours.dtype == torch.float32
    np.testing.assert_allclose(ours.numpy(), ref, rtol=0, atol=2e-6)


def test_threads_split_the_queries():
    xq, xt, y = make_data(n=300, n_query=17)
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        threaded = nadaraya_watson(xq, xt, y, bandwidth=0.2)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    K = numpy_kernel("gaussian", xq, xt, 0.2)
    np.testing.assert_allclose(threaded.numpy(), K @ y / K.sum(1), rtol=1e-10)


def _peak_growth_mib(fn):
    """Growth of the process's peak resident set during ``fn()`` (Linux), in MiB."""

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024

    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident set
    fn()
    return status("VmHWM") - before


@pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"),
    reason="needs Linux's /proc/self/clear_refs",
)
@pytest.mark.parametrize("kernel, n_query", [("gaussian", 2000), ("epanechnikov", 300)])
def test_memory_stays_bounded_without_weights(kernel, n_query):
    # 2000 x 300 000 weights would be 2.4 GB in float32 (7 GB to compute): the call must
    # stay far below. The compact kernel takes the blockwise path: blocks of 2^21
    # weights.
    g = np.random.default_rng(0)
    xt, xq = g.random(300_000, dtype=np.float32), g.random(n_query, dtype=np.float32)
    y = np.sin(6 * xt)
    growth = _peak_growth_mib(
        lambda: nadaraya_watson(xq, xt, y, kernel=kernel, bandwidth=0.05)
    )
    assert growth < 300, f"grew by {growth:.0f} MiB"


def test_weights_that_do_not_fit_raise_before_allocating(monkeypatch):
    monkeypatch.setattr(kr.core, "available_memory", lambda: 10**6)
    xq, xt, y = make_data(n=1000, n_query=100)
    with pytest.raises(
        ValueError, match="return_weights=True needs the 100 x 1000 weight matrix"
    ):
        nadaraya_watson(xq, xt, y, return_weights=True)
    # without weights nothing large is needed
    assert nadaraya_watson(xq, xt, y).shape == (100,)


def test_gaussian_equals_pytorch_sdpa_on_augmented_vectors():
    """-|x - x_j|²/(2σ²) = [x, 1]·[x_j, -|x_j|²/2] / σ² - |x|²/(2σ²).

    The last term cancels in PyTorch's softmax.
    """
    rng = np.random.default_rng(1)
    xq, xt, y = (
        torch.from_numpy(a)
        for a in (
            rng.normal(size=(30, 3)),
            rng.normal(size=(500, 3)),
            rng.normal(size=(500, 1)),
        )
    )
    sigma = 0.4
    q = torch.cat([xq, torch.ones(30, 1, dtype=xq.dtype)], 1)
    k = torch.cat([xt, -0.5 * (xt**2).sum(1, keepdim=True)], 1)
    ref = F.scaled_dot_product_attention(q, k, y, scale=1 / sigma**2)
    torch.testing.assert_close(nadaraya_watson(xq, xt, y, bandwidth=sigma), ref)


def test_far_query_is_finite():
    """A query far from every training point is still predicted, never NaN.

    By its nearest neighbour.
    """
    xt = torch.linspace(0, 1, 50)[:, None]
    y = xt[:, 0] ** 2
    pred = nadaraya_watson(torch.tensor([[100.0]]), xt, y, bandwidth=0.01)
    torch.testing.assert_close(pred, y[-1:])
    pred = nadaraya_watson(
        torch.tensor([[100.0]], requires_grad=True), xt, y, bandwidth=0.01
    )
    torch.testing.assert_close(pred.detach(), y[-1:])


@settings(max_examples=20, deadline=None)
@given(shift=st.floats(-50, 50), seed=st.integers(0, 1000))
def test_translation_invariance(shift, seed):
    xq, xt, y = make_data(seed=seed)
    a = nadaraya_watson(xq, xt, y, bandwidth=0.5)
    b = nadaraya_watson(xq + shift, xt + shift, y, bandwidth=0.5)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-9)


def test_gradcheck_float64():
    xq, xt, y = (
        torch.from_numpy(a).requires_grad_() for a in make_data(n=8, n_query=3)
    )
    for kernel in ("gaussian", "laplace", "epanechnikov"):
        fn = lambda q, x, v, kernel=kernel: nadaraya_watson(
            q, x, v, kernel=kernel, bandwidth=2.0
        )  # noqa: E731
        assert torch.autograd.gradcheck(fn, (xq, xt, y))
        fn = lambda q, x, v, kernel=kernel: nadaraya_watson(
            q, x, v, kernel=kernel, bandwidth=2.0, return_weights=True
        )[1]  # noqa: E731
        assert torch.autograd.gradcheck(fn, (xq, xt, y))


@pytest.mark.parametrize("kernel", ["gaussian", "boxcar"])
def test_loo_equals_refitting(kernel):
    _, xt, y = make_data(n=25)
    explicit = [
        nadaraya_watson(
            xt[i : i + 1],
            np.delete(xt, i, 0),
            np.delete(y, i),
            kernel=kernel,
            bandwidth=0.8,
        ).item()
        for i in range(len(y))
    ]
    np.testing.assert_allclose(
        loo_predictions(xt, y, kernel=kernel, bandwidth=0.8).numpy(),
        explicit,
        rtol=1e-10,
    )


def test_loo_bandwidth_is_the_grid_minimiser():
    _, X, y = make_data(n=60, d=1)
    grid = np.geomspace(0.01, 2, 12)
    model = NadarayaWatson(bandwidths=grid).fit(X, y)
    errors = [
        np.mean([(refit_prediction(X, y, h, i) - y[i]) ** 2 for i in range(len(y))])
        for h in grid
    ]
    np.testing.assert_allclose(model.loo_mse_, errors, rtol=1e-8)
    assert model.bandwidth_ == grid[np.argmin(errors)]


def refit_prediction(X, y, h, i):
    K = rbf_kernel(X[i : i + 1], np.delete(X, i, 0), gamma=1 / (2 * h**2))[0]
    return K @ np.delete(y, i) / K.sum()


def test_estimator_predicts_like_the_function_and_works_with_sklearn():
    xq, X, y = make_data(n=80, d=2)
    model = NadarayaWatson(bandwidth=0.3).fit(X, y)
    np.testing.assert_allclose(
        model.predict(xq), nadaraya_watson(xq, X, y, bandwidth=0.3).numpy(), rtol=1e-10
    )
    assert clone(model).get_params()["bandwidth"] == 0.3
    scores = cross_val_score(
        make_pipeline(StandardScaler(), NadarayaWatson()), X, y, cv=3
    )
    assert np.all(scores > 0.5)


def test_compact_kernel_loo_skips_bandwidths_without_neighbours():
    X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1]])
    y = np.arange(5.0)
    model = NadarayaWatson(kernel="boxcar", bandwidths=[0.01, 0.15, 10.0]).fit(X, y)
    assert np.isinf(model.loo_mse_[0]) and np.isfinite(model.loo_mse_[1:]).all()
    with pytest.raises(ValueError, match="bandwidths"):
        NadarayaWatson(kernel="boxcar", bandwidths=[0.01]).fit(X, y)


def test_metric_learning_finds_the_relevant_direction():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    y = np.sin(2 * X[:, 0])
    Xq = rng.normal(size=(100, 5))
    iso = NadarayaWatson().fit(X, y)
    metric = MetricNadarayaWatson(n_steps=50, lr=0.05).fit(X, y)
    assert metric.loss_history_[-1] < metric.loss_history_[0]
    assert (
        metric.score(Xq, np.sin(2 * Xq[:, 0]))
        > iso.score(Xq, np.sin(2 * Xq[:, 0])) + 0.2
    )
    M = metric.metric_
    np.testing.assert_allclose(M, M.T)
    assert np.argmax(np.diag(M)) == 0
    low = MetricNadarayaWatson(n_components=2, n_steps=5, batch_size=32).fit(X, y)
    assert low.W_.shape == (2, 5) and low.predict(Xq).shape == (100,)


@pytest.mark.parametrize("fn", [nadaraya_watson])
def test_bad_inputs(fn):
    xq, xt, y = make_data()
    with pytest.raises(
        ValueError, match="x_query and x_train must have the same number of features"
    ):
        fn(xq[:, :1], xt, y)
    with pytest.raises(ValueError, match="y_train"):
        fn(xq, xt, y[:-1])
    with pytest.raises(ValueError, match="bandwidth"):
        fn(xq, xt, y, bandwidth=0.0)
    with pytest.raises(ValueError, match="bandwidth"):
        fn(xq, xt, y, bandwidth=-1.0)
    with pytest.raises(ValueError, match="x_train"):
        fn(xq, np.zeros((0, 2)), np.zeros(0))
    bad = xt.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="x_train"):
        fn(xq, bad, y)
    with pytest.raises(ValueError, match="kernel"):
        fn(xq, xt, y, kernel="triangle")
    with pytest.raises(ValueError, match="kernel"):
        fn(xq, xt, y, kernel=lambda q, k: -torch.ones(len(q), len(k), dtype=q.dtype))
    with pytest.raises(ValueError, match="x_query"):
        fn(np.zeros((2, 2, 2)), xt, y)
    with pytest.raises(ValueError, match="kernel must return finite"):
        fn(
            xq,
            xt,
            y,
            kernel=lambda q, k: torch.full((len(q), len(k)), np.inf, dtype=q.dtype),
        )


def test_bad_inputs_loo():
    xq, xt, y = make_data()
    with pytest.raises(ValueError, match="x_train needs at least 2"):
        loo_predictions(xt[:1], y[:1])
    with pytest.raises(ValueError, match="bandwidth"):
        loo_predictions(xt, y, bandwidth=float("nan"))


@pytest.mark.parametrize("Model", [NadarayaWatson, MetricNadarayaWatson])
def test_estimators_bad_inputs(Model):
    _, X, y = make_data()
    kw = {"n_steps": 2} if Model is MetricNadarayaWatson else {}
    with pytest.raises(
        ValueError, match="inconsistent numbers of samples"
    ):  # scikit-learn's message
        Model(**kw).fit(X, y[:-1])
    with pytest.raises(ValueError, match="Input X contains NaN"):
        Model(**kw).fit(np.where(X > 0.9, np.nan, X), y)
    with pytest.raises(ValueError, match=r"Found array with 0 sample\(s\)"):
        Model(**kw).fit(np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(NotFittedError, match="instance is not fitted yet"):
        Model(**kw).predict(X)
    with pytest.raises(ValueError, match="X has 1 features"):
        Model(**kw).fit(X, y).predict(X[:, :1])


def test_estimator_bad_hyperparameters():
    _, X, y = make_data()
    with pytest.raises(ValueError, match="bandwidth"):
        NadarayaWatson(bandwidth=0).fit(X, y)
    for grid in ([0.1, -1], [0.1, 0.0], [np.nan, 0.1]):
        with pytest.raises(ValueError, match="bandwidths"):
            NadarayaWatson(bandwidths=grid).fit(X, y)
    with pytest.raises(ValueError, match="kernel"):
        NadarayaWatson(kernel="tricube").fit(X, y)
    with pytest.raises(ValueError, match="n_components"):
        MetricNadarayaWatson(n_components=3).fit(X, y)
    with pytest.raises(ValueError, match="n_steps"):
        MetricNadarayaWatson(n_steps=0).fit(X, y)


@pytest.mark.parametrize("return_weights", [False, True])
def test_overflowing_inputs_raise_naming_them(return_weights):
    """Distances beyond float32 (inputs near 1e30) raise a ValueError, never NaN.

    Fused path or not.
    """
    xq, xt, y = (torch.as_tensor(a, dtype=torch.float32) for a in make_data())
    with pytest.raises(ValueError, match="x_query and x_train are too large"):
        nadaraya_watson(xq * 1e30, xt, y, return_weights=return_weights)
    with pytest.raises(ValueError, match="x_query and x_train are too large"):
        loo_predictions(xt * 1e30, y)
    out = nadaraya_watson(xq.double() * 1e30, xt.double(), y.double())  # fits float64
    assert torch.isfinite(out).all()


# ------------------------------------------- boundaries and initial values (mutation)
def test_boxcar_includes_points_exactly_at_the_bandwidth():
    """The boxcar kernel is 1{|x - x_j| <= h}: a point at distance exactly h counts."""
    xt, y = np.array([0.0, 1.0, 2.5, -3.0]), np.array([1.0, 2.0, 3.0, 4.0])
    xq = np.array([0.0, 2.0])
    inside = np.abs(xq[:, None] - xt[None]) <= 1.0  # NumPy restatement
    expected = (inside * y).sum(1) / inside.sum(1)
    pred = nadaraya_watson(xq, xt, y, kernel="boxcar", bandwidth=1.0)
    np.testing.assert_allclose(pred.numpy(), expected, rtol=1e-12)
    assert expected.tolist() == [1.5, 2.5]


def test_metric_nadaraya_watson_starts_at_the_loo_bandwidth():
    """W starts at I / h with h the isotropic leave-one-out choice over the documented
    grid (0.01 to 3 times the median pairwise distance), checked by a NumPy restatement;
    one step of lr 1e-12 leaves the start in place."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    model = MetricNadarayaWatson(n_steps=1, lr=1e-12).fit(X, y)
    sq = cdist(X, X, "sqeuclidean")
    grid = np.median(np.sqrt(sq[np.triu_indices(40, 1)])) * np.geomspace(1e-2, 3.0, 30)
    off = sq + np.diag(np.full(40, np.inf))  # leave-one-out: no point sees itself
    gaps = off - off.min(1, keepdims=True)  # shifted rows: no underflow at small h

    def loo_mse(h):
        K = np.exp(-gaps / (2 * h * h))
        return np.mean((K @ y / K.sum(1) - y) ** 2)

    h = grid[np.argmin([loo_mse(h) for h in grid])]
    assert model.init_bandwidth_ == pytest.approx(h, rel=1e-12)
    np.testing.assert_allclose(model.W_, np.eye(2) / h, atol=1e-8)
    Xq = rng.normal(size=(7, 2))
    K = rbf_kernel(Xq, X, gamma=1 / (2 * h * h))
    np.testing.assert_allclose(model.predict(Xq), K @ y / K.sum(1), rtol=1e-6)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_predict_checks_its_queries_once(kernel, check_calls):
    # X goes from the public boundary to the fused engine (gaussian) or to blockwise
    # attention (epanechnikov) with one check: sklearn's validate_data in predict.
    X, y = make_data()[1:]
    model = NadarayaWatson(kernel=kernel, bandwidth=2.0).fit(X, y)
    check_calls.clear()
    pred = model.predict(X[:7].tolist())
    assert pred.shape == (7,) and np.isfinite(pred).all()
    # (host_array brings a tensor to the host for validate_data: one check with it)
    assert [(c.where, c.helper) for c in check_calls if not c.paired] == [
        ("attnlib.kernel_regression.estimators", "validate_data")
    ]
    # The same prediction as the public function, which checks its own inputs.
    ref = nadaraya_watson(X[:7], X, y, kernel=kernel, bandwidth=2.0).numpy()
    np.testing.assert_allclose(pred, ref, rtol=1e-12)


@pytest.mark.parametrize(
    "kernel, conversions", [("gaussian", 0), ("laplace", 0), ("epanechnikov", 1)]
)
@pytest.mark.parametrize("weighted", [False, True])
def test_predict_converts_once_and_copies_no_training_data(
    kernel, conversions, weighted, monkeypatch
):
    # NumPy in, NumPy out: the fused engine reads the arrays as they are, the compact
    # kernels convert the queries to a tensor and the prediction back, once each. The
    # training set took the layout predict reads at fit time (no copy per call).
    X, y = make_data()[1:]
    w = np.linspace(0.5, 2.0, len(y)) if weighted else None
    model = NadarayaWatson(kernel=kernel, bandwidth=2.0).fit(X, y, sample_weight=w)
    ref = model.predict(X[:7])
    counts = {"to torch": 0, "to numpy": 0}

    def counted(fn, key):
        def wrapper(*args, **kwargs):
            counts[key] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(torch, "from_numpy", counted(torch.from_numpy, "to torch"))
    monkeypatch.setattr(torch.Tensor, "numpy", counted(torch.Tensor.numpy, "to numpy"))
    monkeypatch.setattr(kr.core, "key_lanes", None)  # must not be called again,
    monkeypatch.setattr(kr.estimators, "_weighted_values", None)  # nor this
    pred = model.predict(X[:7])
    assert counts == {"to torch": conversions, "to numpy": conversions}
    np.testing.assert_array_equal(pred, ref)
