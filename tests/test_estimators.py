"""scikit-learn conformance of attnlib's estimators, by scikit-learn's own checks."""

import numpy as np
import pytest
from sklearn import datasets
from sklearn.manifold import LocallyLinearEmbedding as SklearnLLE
from sklearn.model_selection import cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from attnlib.kernel_regression import MetricNadarayaWatson, NadarayaWatson
from attnlib.lle import LocallyLinearEmbedding

ESTIMATORS = [
    NadarayaWatson(),
    NadarayaWatson(kernel="laplace", bandwidth=0.5),
    MetricNadarayaWatson(n_steps=5),
    LocallyLinearEmbedding(),
]


@parametrize_with_checks(ESTIMATORS)
def test_check_estimator(estimator, check):
    """No expected failures: a user's plain ``check_estimator`` passes (scikit-learn
    1.6+ has no tag that declares one, so nothing may fail)."""
    check(estimator)


def test_lle_accepts_duplicate_rows_like_scikit_learn():
    X = datasets.load_iris().data  # holds duplicate rows
    assert len(np.unique(X, axis=0)) < len(X)
    ours = LocallyLinearEmbedding(
        n_neighbors=10, n_components=2, eigen_solver="dense"
    ).fit(X)
    theirs = SklearnLLE(n_neighbors=10, n_components=2, eigen_solver="dense").fit(X)
    assert np.isfinite(ours.embedding_).all()
    np.testing.assert_allclose(
        ours.reconstruction_error_, theirs.reconstruction_error_, rtol=0, atol=1e-10
    )
    # At 10 neighbours setosa is cut off from the other species, so the null space of M
    # = (I - W)ᵀ(I - W) has dimension > 1 and any basis of it is a valid embedding: the
    # two libraries need not return the same vectors (scikit-learn's is not even
    # centred). What is basis-free: ours is orthonormal and centred, and it is as low in
    # scikit-learn's own quadratic form as scikit-learn's embedding is.
    from sklearn.manifold._locally_linear import barycenter_kneighbors_graph

    W = barycenter_kneighbors_graph(X, n_neighbors=10, reg=1e-3).toarray()
    M = (np.eye(len(X)) - W).T @ (np.eye(len(X)) - W)
    Y, Y_sk = ours.embedding_, theirs.embedding_
    np.testing.assert_allclose(Y.T @ Y, np.eye(2), atol=1e-10)
    np.testing.assert_allclose(Y.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(
        np.trace(Y.T @ M @ Y), np.trace(Y_sk.T @ M @ Y_sk), atol=1e-10
    )


def test_lle_set_output_and_feature_names():
    pd = pytest.importorskip("pandas")
    X = datasets.make_swiss_roll(120, random_state=0)[0]
    lle = LocallyLinearEmbedding(n_neighbors=8).set_output(transform="pandas")
    out = lle.fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["locallylinearembedding0", "locallylinearembedding1"]
    assert list(lle.get_feature_names_out()) == list(out.columns)
    assert isinstance(lle.transform(X[:5]), pd.DataFrame)


def test_metric_nw_random_state_none_verbose_and_n_iter(capsys):
    X, y = datasets.make_regression(60, 3, noise=0.1, random_state=0)
    model = MetricNadarayaWatson(n_steps=4, random_state=None).fit(X, y)
    assert model.n_iter_ == 4 and np.isfinite(model.predict(X)).all()
    cross_val_score(MetricNadarayaWatson(n_steps=3), X, y, cv=2)
    # quiet by default, also inside cross-validation
    assert capsys.readouterr().err == ""
    MetricNadarayaWatson(n_steps=3, verbose=1).fit(X, y)
    captured = capsys.readouterr()
    assert "metric NW" in captured.err + captured.out
    a = MetricNadarayaWatson(n_steps=3, random_state=0).fit(X, y).W_
    np.testing.assert_array_equal(
        a, MetricNadarayaWatson(n_steps=3, random_state=0).fit(X, y).W_
    )


def test_nadaraya_watson_keeps_float32_and_weights_count_as_repeats():
    rng = np.random.default_rng(0)
    X, noise = rng.standard_normal((80, 3)), 0.1 * rng.standard_normal(80)
    y = np.sin(X[:, 0]) + noise
    f64 = NadarayaWatson().fit(X, y)
    f32 = NadarayaWatson().fit(X.astype(np.float32), y)
    pred32 = f32.predict(X.astype(np.float32))
    assert pred32.dtype == np.float32 and f32.X_fit_.dtype == np.float32
    np.testing.assert_allclose(pred32, f64.predict(X), atol=1e-5)
    assert f64.predict(X.astype(np.float32)).dtype == np.float64  # the fitted dtype
    w = rng.integers(0, 3, 80)
    repeats = np.repeat(np.arange(80), w)
    weighted = NadarayaWatson(bandwidth=0.5).fit(X, y, sample_weight=w)
    repeated = NadarayaWatson(bandwidth=0.5).fit(X[repeats], y[repeats])
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), atol=1e-12)
    # leave-one-out with weights: a weighted mean of the left-out errors, each point's
    # w - 1 other copies left in (at distance 0, kernel value 1)
    loo = NadarayaWatson(bandwidths=[0.3, 0.6]).fit(X, y, sample_weight=w + 1)
    for h, mse in zip(loo.bandwidths_, loo.loo_mse_):
        K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / (2 * h * h))
        np.fill_diagonal(K, 0)
        pred = (K @ ((w + 1) * y) + w * y) / (K @ (w + 1) + w)
        np.testing.assert_allclose(mse, np.average((pred - y) ** 2, weights=w + 1))
    with pytest.raises(ValueError, match="at least one non-zero"):
        NadarayaWatson().fit(X, y, sample_weight=np.zeros(80))
    with pytest.raises(ValueError, match="[Nn]egative"):
        NadarayaWatson().fit(X, y, sample_weight=-np.ones(80))
    with pytest.raises(ValueError, match="sample_weight 0"):
        only_far = np.r_[np.ones(40), np.zeros(40)]
        NadarayaWatson(kernel="boxcar", bandwidth=0.1).fit(
            X, y, sample_weight=only_far
        ).predict(X[40:])


def test_a_compact_kernel_in_a_grid_search_scores_minus_infinity_quietly():
    """A bandwidth that leaves test points without neighbours is passed over, with no
    'Scoring failed' traceback per fold."""
    import warnings

    from sklearn.model_selection import GridSearchCV

    from attnlib.errors import EmptySupportError

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (60, 1))
    y = np.sin(6 * X[:, 0])
    grid = {"kernel": ["gaussian", "epanechnikov"], "bandwidth": [0.01, 0.2]}
    search = GridSearchCV(NadarayaWatson(), grid, cv=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    assert not [w for w in caught if "Scoring failed" in str(w.message)]
    scores = dict(zip(map(str, search.cv_results_["params"]), search.cv_results_[
        "mean_test_score"]))  # fmt: skip
    assert scores[str({"bandwidth": 0.01, "kernel": "epanechnikov"})] == -np.inf
    assert search.best_params_["kernel"] == "gaussian" or search.best_score_ > 0.9
    model = NadarayaWatson(kernel="epanechnikov", bandwidth=0.01).fit(X, y)
    with pytest.raises(EmptySupportError, match="X: x_query row"):
        model.predict(np.array([[5.0]]))  # far from every training point
