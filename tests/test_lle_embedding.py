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
