import numpy as np
import pytest
from sklearn.datasets import make_swiss_roll
from sklearn.neighbors import NearestNeighbors

from attnlib.experiments.manifolds import closed_groups, knn_softmax_weights


def test_knn_softmax_weights_match_a_numpy_restatement(np_softmax):
    X, _ = make_swiss_roll(150, random_state=0)
    K = 6
    W = knn_softmax_weights(X, K)
    _, ind = NearestNeighbors(n_neighbors=K + 1).fit(X).kneighbors(X)
    nbr = ind[:, 1:]
    d2 = ((X[:, None] - X[nbr]) ** 2).sum(-1)
    tau = np.median(d2)
    expected = np.zeros((150, 150))
    np.put_along_axis(expected, nbr, np_softmax(-d2 / (2 * tau), axis=1), axis=1)
    np.testing.assert_allclose(W, expected, atol=1e-12)


def test_closed_groups_on_a_hand_made_graph():
    # 0 <-> 1 closed; 2 <-> 3 closed; 4 -> 0 leaks into the first group; 5 -> 4.
    edges = [(0, 1), (1, 0), (2, 3), (3, 2), (4, 0), (5, 4)]
    mask = np.zeros((6, 6), bool)
    for j, i in edges:
        mask[j, i] = True
    labels, n = closed_groups(mask)
    assert n == 2
    assert labels[0] == labels[1] != labels[2] == labels[3]
    assert (labels[4:] == -1).all()


def test_closed_groups_bad_mask():
    with pytest.raises(ValueError, match="mask"):
        closed_groups(np.zeros((3, 4), bool))


def test_knn_softmax_bad_input():
    with pytest.raises(ValueError, match="X must have 2 dimensions"):
        knn_softmax_weights(np.zeros(5), 2)
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_softmax_weights(np.zeros((5, 2)), 0)
