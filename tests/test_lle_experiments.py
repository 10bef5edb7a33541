import numpy as np
import pytest
from draws import differ, equal, same_numbers
from sklearn.datasets import make_swiss_roll
from sklearn.neighbors import NearestNeighbors

from attnlib.lle import experiments as manifolds
from attnlib.lle.experiments import (
    closed_groups,
    crossing_planes,
    knn_softmax_weights,
    manifold_sample,
    swiss_roll_sheets,
)


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


def test_swiss_roll_sheets_unroll_by_arc_length():
    from scipy.integrate import quad

    from attnlib.lle.experiments import swiss_roll_sheets

    roll, flat, chart = swiss_roll_sheets(50, 3)
    X, t = make_swiss_roll(50, random_state=3)
    np.testing.assert_allclose(roll, X)
    for j in (0, 17, 49):  # arc length of (t cos t, t sin t) from 0, by quadrature
        arc = quad(
            lambda u: np.hypot(np.cos(u) - u * np.sin(u), np.sin(u) + u * np.cos(u)),
            0,
            t[j],
        )[0]
        np.testing.assert_allclose(chart[j, 0], arc, rtol=1e-10)
    np.testing.assert_allclose(chart[:, 1], X[:, 1])
    np.testing.assert_allclose(flat, np.column_stack([chart, np.zeros(50)]))


def test_convex_weights_match_a_constrained_solver():
    from scipy.optimize import minimize

    from attnlib.lle.experiments import convex_weights

    rng = np.random.default_rng(0)
    keys, queries = rng.normal(size=(6, 2)), rng.normal(size=(4, 2)) * 2
    nbr = np.tile(np.arange(6), (4, 1))
    W = convex_weights(queries, keys, nbr)
    assert (W >= 0).all()
    np.testing.assert_allclose(W.sum(1), 1, atol=1e-6)
    for q, w in zip(queries, W):
        ref = minimize(
            lambda v, q=q: ((v @ keys - q) ** 2).sum(),
            np.full(6, 1 / 6),
            bounds=[(0, 1)] * 6,
            method="SLSQP",
            constraints={"type": "eq", "fun": lambda v: v.sum() - 1},
            options={"ftol": 1e-14, "maxiter": 500},
        )
        np.testing.assert_allclose(((w @ keys - q) ** 2).sum(), ref.fun, atol=1e-6)
    inside = keys[:3].mean(0, keepdims=True)  # inside the hull: exact
    w_in = convex_weights(inside, keys, nbr[:1])
    np.testing.assert_allclose(w_in @ keys, inside, atol=1e-6)
    with pytest.raises(ValueError, match="neighbors"):
        convex_weights(queries, keys, nbr[:2])


def test_fill_in_blanks_flat_sheet_and_bad_input():
    from attnlib.lle.experiments import fill_in_blanks

    roll = fill_in_blanks(0, n=400, n_held=50)
    flat = fill_in_blanks(0, sheet="flat", n=400, n_held=50)
    # on the flat sheet the chart is the sheet: affine weights are exact up to reg
    assert flat["error"]["LLE (affine)"] < 1e-3 < roll["error"]["LLE (affine)"]
    np.testing.assert_allclose(flat["chart_error"]["softmax"], flat["error"]["softmax"])
    assert 0 < roll["negative"] < 1 and 0 < roll["inside_hull"] <= 1
    for name, axes in roll["error_by_axis"].items():  # the split sums to the error
        np.testing.assert_allclose(sum(axes), roll["error"][name])
    # the chart's height is the y coordinate: weights reproducing the chart get it free
    assert roll["error_by_axis"]["LLE (affine)"][1] < 1e-3  # up to the regulariser
    assert roll["error_by_axis"]["softmax"][1] > 1e-2
    with pytest.raises(ValueError, match="sheet"):
        fill_in_blanks(0, sheet="sphere")
    with pytest.raises(ValueError, match="temperature_scale"):
        fill_in_blanks(0, n=100, n_held=10, temperature_scale=0)


def test_crossing_planes_and_samples():
    from attnlib.lle.experiments import (
        crossing_planes,
        manifold_sample,
        trust_scores,
    )

    P, plane, weights = crossing_planes(0, n_per_plane=15, n_neighbors=4)
    assert P.shape == (30, 3) and (np.bincount(plane) == 15).all()
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1)
    for W in weights.values():
        assert W.shape == (30, 30) and (W.diagonal() == 0).all()
    knn = weights["LLE, kNN mask"] != 0
    assert not (weights["sparse, kNN mask"][~knn]).any()  # same mask, other penalty
    data, labels = manifold_sample("digits", 1, n=60)
    assert data.shape == (60, 64) and len(np.unique(data, axis=0)) > 50
    scores = trust_scores(data, 8)
    assert set(scores) == {"residual", "LLE, reg=0.001", "softmax"}
    with pytest.raises(ValueError, match="name"):
        manifold_sample("torus", 0)


# ----------------------------------------------------------------- seeds of the draws
# Each data set with the outputs its seed draws (``plane`` is the fixed labelling).
SAMPLES = {
    "swiss roll": (lambda seed: manifold_sample("swiss roll", seed, n=40), (0, 1)),
    "S-curve": (lambda seed: manifold_sample("S-curve", seed, n=40), (0, 1)),
    "digits": (lambda seed: manifold_sample("digits", seed, n=40), (0, 1)),
    "swiss_roll_sheets": (lambda seed: swiss_roll_sheets(40, seed), (0, 1, 2)),
    "crossing_planes": (
        lambda seed: crossing_planes(seed, n_per_plane=8, n_neighbors=3),
        (0, 2),
    ),
}


@pytest.mark.parametrize("name", SAMPLES)
def test_a_data_set_draws_from_its_seed_alone(name, reseed_globals):
    make, drawn = SAMPLES[name]
    out = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        reseed_globals(state)
        out.append(make(seed))
    assert equal(out[1], out[0])
    for i in drawn:  # each output apart
        assert differ(out[2][i], out[0][i]), i


def test_fill_in_blanks_draws_its_sheet_and_split_from_its_seed_alone(
    record_calls, reseed_globals
):
    sheets = record_calls(manifolds, "swiss_roll_sheets")
    weights = record_calls(manifolds, "lle_weights")
    seen = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        sheets.clear()
        weights.clear()
        reseed_globals(state)
        result = manifolds.fill_in_blanks(seed, n=60, n_held=10, n_neighbors=5)
        (_, _, (roll, _, chart)), (args, _, _) = sheets[0], weights[0]
        held = {int(np.flatnonzero((chart == z).all(1))[0]) for z in args[0]}
        seen.append((result, roll, held))
    (r0, roll0, held0), (r1, roll1, held1), (r2, roll2, held2) = seen
    assert same_numbers(r1, r0) and equal(roll1, roll0) and held1 == held0
    assert not same_numbers(r2, r0)
    assert differ(roll2, roll0), "two seeds, one sheet"
    assert len(held0) == len(held2) == 10 and held2 != held0, "two seeds, one split"
