"""attnlib.lle against scikit-learn's LocallyLinearEmbedding and a NumPy restatement."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_s_curve, make_swiss_roll
from sklearn.manifold import LocallyLinearEmbedding as SklearnLLE
from sklearn.manifold._locally_linear import barycenter_kneighbors_graph

from attnlib.lle import (
    LocallyLinearEmbedding,
    barycenter_weights,
    lle_attention,
    lle_embedding,
    lle_weights,
)


def swiss_roll(n=300, seed=0):
    return make_swiss_roll(n, random_state=seed)[0]


def match_signs(A, B):
    """B with each column's sign flipped to agree with A's."""
    return B * np.sign((A * B).sum(0))


def naive_weights(X, K, reg):
    """Eq. (9) one query at a time: least squares, sum-to-one by a KKT system."""
    n = len(X)
    W = np.zeros((n, n))
    for j in range(n):
        d = np.linalg.norm(X - X[j], axis=1)
        d[j] = np.inf
        nb = np.argsort(d, kind="stable")[:K]
        Z = X[nb] - X[j]
        G = Z @ Z.T
        G += (reg * np.trace(G) if np.trace(G) > 0 else reg) * np.eye(K)
        kkt = np.block([[2 * G, np.ones((K, 1))], [np.ones((1, K)), np.zeros((1, 1))]])
        W[j, nb] = np.linalg.solve(kkt, np.r_[np.zeros(K), 1.0])[:K]
    return W


@pytest.mark.parametrize(
    "make", [swiss_roll, lambda: make_s_curve(250, random_state=1)[0]]
)
@pytest.mark.parametrize("K", [6, 12])
def test_embedding_equals_sklearn_dense(make, K):
    X = make()
    ours = LocallyLinearEmbedding(
        n_neighbors=K, n_components=2, eigen_solver="dense"
    ).fit(X)
    ref = SklearnLLE(
        n_neighbors=K, n_components=2, method="standard", eigen_solver="dense"
    ).fit(X)
    np.testing.assert_allclose(
        ours.embedding_, match_signs(ours.embedding_, ref.embedding_), atol=1e-6, rtol=0
    )
    assert ours.reconstruction_error_ == pytest.approx(
        ref.reconstruction_error_, rel=1e-6, abs=1e-12
    )


def test_arpack_agrees_with_dense_and_with_sklearn_arpack():
    X = swiss_roll(600)
    dense = LocallyLinearEmbedding(10, 2, eigen_solver="dense").fit_transform(X)
    arpack = LocallyLinearEmbedding(
        10, 2, eigen_solver="arpack", random_state=0
    ).fit_transform(X)
    ref = SklearnLLE(
        n_neighbors=10, n_components=2, eigen_solver="arpack", random_state=0
    ).fit_transform(X)
    np.testing.assert_allclose(arpack, match_signs(arpack, dense), atol=1e-6, rtol=0)
    np.testing.assert_allclose(arpack, match_signs(arpack, ref), atol=1e-6, rtol=0)


def test_transform_equals_sklearn():
    X = swiss_roll(300)
    new = X[:20] + np.random.default_rng(0).normal(scale=0.05, size=(20, 3))
    ours = LocallyLinearEmbedding(8, 2, eigen_solver="dense").fit(X)
    ref = SklearnLLE(n_neighbors=8, n_components=2, eigen_solver="dense").fit(X)
    signs = np.sign((ours.embedding_ * ref.embedding_).sum(0))
    np.testing.assert_allclose(
        ours.transform(new), ref.transform(new) * signs, atol=1e-8, rtol=0
    )


def test_weights_equal_sklearn_graph_and_naive_kkt_solution():
    X = swiss_roll(120)
    W, mask, ind = lle_weights(X, 7, reg=1e-3)
    assert sp.issparse(W) and W.shape == (120, 120) and ind.shape == (120, 7)
    np.testing.assert_allclose(
        W.toarray(), barycenter_kneighbors_graph(X, 7, reg=1e-3).toarray(), atol=1e-10
    )
    np.testing.assert_allclose(W.toarray(), naive_weights(X, 7, 1e-3), atol=1e-8)
    np.testing.assert_array_equal(mask.toarray(), W.toarray() != 0)
    assert (mask.sum(1) == 7).all() and not mask.diagonal().any()


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(8, 40),
    d=st.integers(1, 5),
    K=st.integers(1, 6),
    seed=st.integers(0, 10**6),
)
def test_weights_are_affine_and_masked(n, d, K, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    W, mask, _ = lle_weights(X, K, dense=True)
    np.testing.assert_allclose(W.sum(1), 1.0, atol=1e-9)
    assert (W[~mask] == 0).all() and (mask.sum(1) == K).all()


def test_weights_reproduce_points_in_the_affine_span_of_their_neighbours():
    # In 2-D with reg -> 0, three non-collinear neighbours reconstruct any point
    # exactly.
    X = np.random.default_rng(1).normal(size=(30, 2))
    W, _, _ = lle_weights(X, 3, reg=0.0, dense=True)
    np.testing.assert_allclose(W @ X, X, atol=1e-8)


def test_weights_to_separate_keys_equal_sklearn_transform_weights():
    from sklearn.manifold._locally_linear import barycenter_weights as sk_bary
    from sklearn.neighbors import NearestNeighbors

    keys, queries = swiss_roll(200), swiss_roll(15, seed=3)
    W, mask, ind = lle_weights(queries, 5, keys=keys, dense=True)
    ref_ind = (
        NearestNeighbors(n_neighbors=5)
        .fit(keys)
        .kneighbors(queries, return_distance=False)
    )
    np.testing.assert_array_equal(ind, ref_ind)
    np.testing.assert_allclose(
        np.take_along_axis(W, ind, 1), sk_bary(queries, keys, ind), atol=1e-10
    )


def test_lle_attention_is_masked_attention_with_lle_weights(float64):
    X = torch.from_numpy(swiss_roll(80))
    out, W = lle_attention(X, 6)
    ref = lle_weights(X.numpy(), 6, dense=True)
    assert W.dtype == torch.float64
    np.testing.assert_allclose(W.numpy(), ref.weights, atol=1e-10)
    torch.testing.assert_close(out, W @ X)


def test_lle_attention_keeps_float32_and_is_differentiable():
    X = torch.randn(
        40, 3, generator=torch.Generator().manual_seed(0), requires_grad=True
    )
    out, W = lle_attention(X, 5)
    assert out.dtype == W.dtype == torch.float32
    out.square().sum().backward()
    assert X.grad is not None and torch.isfinite(X.grad).all()


def test_barycenter_weights_gradcheck():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True)
    nb = torch.randn(4, 5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b: barycenter_weights(a, b, 1e-2), (q, nb)
    )


def test_embedding_is_centred_orthonormal_and_accepts_any_row_stochastic_matrix():
    X = swiss_roll(250)
    # Softmax attention on the same kNN mask is also row-stochastic: Eq. (10) still
    # applies.
    _, mask, _ = lle_weights(X, 10, dense=True)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    S = np.where(mask, np.exp(-D / np.median(D[mask])), 0.0)
    S /= S.sum(1, keepdims=True)
    for W in (S, torch.from_numpy(S), sp.csr_matrix(S)):
        Y, values = lle_embedding(W, 3, eigen_solver="dense")
        np.testing.assert_allclose(Y.T @ Y, np.eye(3), atol=1e-10)
        np.testing.assert_allclose(Y.sum(0), 0, atol=1e-8)
        assert np.all(np.diff(values) >= 0)
        M = (np.eye(250) - S).T @ (np.eye(250) - S)
        np.testing.assert_allclose(
            np.einsum("ik,ij,jk->k", Y, M, Y), values, atol=1e-10
        )


def test_estimator_follows_sklearn_api():
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = swiss_roll(150)
    pipe = make_pipeline(
        StandardScaler(), LocallyLinearEmbedding(n_neighbors=8, eigen_solver="dense")
    )
    Y = pipe.fit_transform(X)
    assert Y.shape == (150, 2)
    est = clone(pipe[-1])
    assert est.get_params()["n_neighbors"] == 8 and not hasattr(est, "embedding_")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda X: lle_weights(X, 30), "n_neighbors"),  # n_neighbors >= n_samples
        (lambda X: lle_weights(X, 0), "n_neighbors"),
        (lambda X: lle_weights(X, 2.5), "n_neighbors"),
        (
            lambda X: lle_weights(np.vstack([X, X[:1]]), 3),
            "X contains duplicate points",
        ),
        (
            lambda X: lle_weights(np.where(np.eye(30, 3) > 0, np.nan, X), 3),
            "X contains NaN",
        ),
        (lambda X: lle_weights(X[0], 3), "X must have 2 dimensions"),
        (lambda X: lle_weights(X, 3, reg=-1.0), "reg must be"),
        (lambda X: lle_weights(X, 3, keys=X[:, :2]), "keys"),
        (lambda X: lle_weights(X, 31, keys=X), "n_neighbors"),
        (lambda X: lle_attention(X, 30), "n_neighbors"),
        (
            lambda X: lle_attention(np.vstack([X, X[:1]]), 3),
            "X contains duplicate points",
        ),
        (lambda X: barycenter_weights(X, X[:5, None], 1e-3), "neighbors"),
        (lambda X: barycenter_weights(X, X, 1e-3), "neighbors"),
        (lambda X: LocallyLinearEmbedding(n_neighbors=40).fit(X), "n_neighbors"),
        (
            lambda X: LocallyLinearEmbedding(5).fit(np.r_[X, [[np.inf] * 3]]),
            "Input X contains infinity",
        ),
        (
            lambda X: (
                LocallyLinearEmbedding(5, eigen_solver="dense")
                .fit(X)
                .transform(X[:, :2])
            ),
            "X has 2 features",
        ),
    ],
)
def test_bad_input_raises(call, match):
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match=match):
        call(X)


@pytest.mark.parametrize(
    "W, kwargs, match",
    [
        (np.ones((4, 5)) / 5, {}, "W must be a square"),
        (np.full((4, 4), np.nan), {}, "W contains NaN"),
        (np.ones((6, 6)) / 6, {"n_components": 5}, "n_components"),
        (np.ones((6, 6)) / 6, {"n_components": 0}, "n_components"),
        (np.ones((6, 6)) / 6, {"eigen_solver": "lobpcg"}, "eigen_solver"),
        (np.ones((6, 6)) / 6, {"tol": -1.0}, "tol must be"),
        (np.ones((6, 6)) / 6, {"max_iter": 0}, "max_iter"),
    ],
)
def test_embedding_bad_input_raises(W, kwargs, match):
    with pytest.raises(ValueError, match=match):
        lle_embedding(W, **kwargs)


def test_transform_before_fit_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="instance is not fitted yet"):
        LocallyLinearEmbedding().transform(np.zeros((3, 3)))


# -------------------------------------------------- sign convention (mutation campaign)
def test_embedding_columns_follow_the_sign_convention_exactly():
    """Eigenvectors are defined up to sign; lle_embedding makes each column's largest
    entry (in absolute value) positive, so that a fit is reproducible. Checked against
    SciPy's eigh of M = (I - W)ᵀ(I - W) with that convention applied, signs included."""
    import scipy.linalg

    X = swiss_roll(150, seed=3)
    W = naive_weights(X, 8, 1e-3)
    Y, values = lle_embedding(W, 2, eigen_solver="dense")
    A = np.eye(150) - W
    ref_values, ref = scipy.linalg.eigh(A.T @ A, subset_by_index=(1, 2))
    ref = ref * np.sign(ref[np.abs(ref).argmax(0), [0, 1]])
    np.testing.assert_allclose(Y, ref, atol=1e-6)
    np.testing.assert_allclose(values, ref_values, atol=1e-10)
    assert (Y[np.abs(Y).argmax(0), [0, 1]] > 0).all()
