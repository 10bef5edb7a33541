"""lle_embedding is centred with YᵀY = I, also when M's null space is larger than 1."""

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import make_blobs, make_swiss_roll
from sklearn.manifold import LocallyLinearEmbedding as SklearnLLE

from attnlib.lle import lle_embedding, lle_weights


def _two_blobs():
    B, which = make_blobs(300, centers=[[-20, 0], [20, 0]], random_state=0)
    return lle_weights(B, 8).weights, which


@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_embedding_is_centred_and_orthonormal_with_two_closed_groups(solver):
    W, which = _two_blobs()
    Y = lle_embedding(W, 2, eigen_solver=solver, random_state=0).embedding
    np.testing.assert_allclose(Y.mean(0), 0, atol=1e-8)
    np.testing.assert_allclose(Y.T @ Y, np.eye(2), atol=1e-8)


def test_two_blobs_first_coordinate_is_the_centred_indicator():
    W, which = _two_blobs()
    y = lle_embedding(W, 1, eigen_solver="dense").embedding[:, 0]
    indicator = (which == 0) - (which == 0).mean()
    expected = indicator / np.linalg.norm(indicator)  # independent closed form
    np.testing.assert_allclose(np.abs(y), np.abs(expected), atol=1e-8)


def test_embedding_minimises_the_constrained_objective():
    # Reference: the bottom eigenvectors of P M P with P the centring projector, from
    # SciPy.
    W, _ = _two_blobs()
    A = np.eye(W.shape[0]) - W.toarray()
    M = A.T @ A
    P = np.eye(len(M)) - 1 / len(M)
    best = scipy.linalg.eigh(
        P @ M @ P + 10 * (1 / len(M)) * np.ones_like(M),
        eigvals_only=True,
        subset_by_index=(0, 2),
    )
    res = lle_embedding(W, 3, eigen_solver="dense")
    np.testing.assert_allclose(res.eigenvalues, best, atol=1e-10)
    np.testing.assert_allclose(
        np.trace(res.embedding.T @ M @ res.embedding), best.sum(), atol=1e-10
    )


def test_connected_graph_still_matches_scikit_learn():
    X, _ = make_swiss_roll(400, random_state=0)
    W = lle_weights(X, 10).weights
    ours = lle_embedding(W, 2, eigen_solver="dense").embedding
    ref = SklearnLLE(
        n_neighbors=10, n_components=2, eigen_solver="dense"
    ).fit_transform(X)
    ref = ref * np.sign((ours * ref).sum(0))
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def test_the_estimator_refuses_more_components_than_features_as_scikit_learn():
    from attnlib.lle import LocallyLinearEmbedding

    X = np.random.default_rng(0).normal(size=(60, 3))
    with pytest.raises(ValueError, match="output dimension"):  # scikit-learn refuses
        SklearnLLE(n_neighbors=8, n_components=4).fit(X)
    with pytest.raises(ValueError, match=r"n_components must be at most .*\(3\)"):
        LocallyLinearEmbedding(n_neighbors=8, n_components=4).fit(X)
    assert LocallyLinearEmbedding(n_neighbors=8, n_components=3).fit_transform(
        X
    ).shape == (60, 3)


@pytest.mark.parametrize("algorithm", ["auto", "brute", "kd_tree", "ball_tree"])
def test_neighbors_algorithm_and_n_jobs_reach_scikit_learns_search(algorithm):
    from attnlib.lle import LocallyLinearEmbedding

    X, _ = make_swiss_roll(300, random_state=0)
    kw = dict(n_neighbors=10, n_components=2, eigen_solver="dense")
    ours = LocallyLinearEmbedding(**kw, neighbors_algorithm=algorithm, n_jobs=2).fit(X)
    theirs = SklearnLLE(**kw, neighbors_algorithm=algorithm, n_jobs=2).fit(X)
    assert ours.nbrs_.algorithm == algorithm and ours.nbrs_.n_jobs == 2
    np.testing.assert_allclose(
        ours.reconstruction_error_, theirs.reconstruction_error_, rtol=1e-6
    )
    # the embedding up to each column's sign
    Y, Y_sk = ours.embedding_, theirs.embedding_
    np.testing.assert_allclose(np.abs(Y.T @ Y_sk), np.eye(2), atol=1e-6)
    with pytest.raises(ValueError, match="neighbors_algorithm must be one of"):
        LocallyLinearEmbedding(neighbors_algorithm="octree").fit(X)
    with pytest.raises(ValueError, match="neighbors_algorithm"):  # theirs too
        SklearnLLE(neighbors_algorithm="octree").fit(X)


@pytest.mark.parametrize("method", ["modified", "hessian", "ltsa"])
def test_other_methods_are_refused_naming_scikit_learns_estimator(method):
    from attnlib.lle import LocallyLinearEmbedding

    X, _ = make_swiss_roll(100, random_state=0)
    SklearnLLE(n_neighbors=12, method=method, eigen_solver="dense").fit(
        X
    )  # theirs runs
    with pytest.raises(
        ValueError,
        match=rf"sklearn\.manifold\.LocallyLinearEmbedding\(method='{method}'\)",
    ):
        LocallyLinearEmbedding(n_neighbors=12, method=method).fit(X)
    with pytest.raises(ValueError, match="method must be 'standard'"):
        LocallyLinearEmbedding(method="isomap").fit(X)
    assert (
        LocallyLinearEmbedding(method="standard").get_params()["method"] == "standard"
    )
