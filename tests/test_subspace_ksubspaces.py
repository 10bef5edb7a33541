"""Tests of attnlib.subspace.ksubspaces against NumPy restatements (eigh, lstsq)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.data import union_of_subspaces
from attnlib.subspace import SubspaceClustering, clustering_accuracy
from attnlib.subspace.ksubspaces import k_subspaces, subspace_dimension


def _one_round(X, labels, dim):
    """One K-subspaces round restated: the top-dim eigenvectors of each cluster's XᵀX,
    and the residual of every point by least squares on that basis."""
    res = []
    for k in np.unique(labels):
        Xk = X[labels == k]
        basis = np.linalg.eigh(Xk.T @ Xk)[1][:, ::-1][:, :dim]  # (D, dim)
        coef = np.linalg.lstsq(basis, X.T, rcond=None)[0]
        res.append(((X.T - basis @ coef) ** 2).sum(0))
    return np.unique(labels)[np.argmin(res, axis=0)]


def _flip(labels, share, seed):
    rng = np.random.default_rng(seed)
    out = labels.copy()
    moved = rng.choice(len(labels), int(share * len(labels)), replace=False)
    out[moved] = (out[moved] + rng.integers(1, labels.max() + 1, moved.size)) % (
        labels.max() + 1
    )
    return out


def test_one_round_matches_the_restatement():
    d = union_of_subspaces(3, 2, 5, 30, noise=0.05, seed=3)
    start = _flip(d.labels, 0.3, 0)
    refined, n_iter = k_subspaces(d.X, start, dim=2, max_iter=1)
    np.testing.assert_array_equal(refined, _one_round(d.X, start, 2))
    assert n_iter == 1


def test_recovers_intersecting_subspaces_from_a_corrupted_start():
    # 4 subspaces of dimension 4 in R⁶ meet pairwise in 2 dimensions; a fifth of the
    # labels are wrong at the start, noiseless points end on their own subspace.
    d = union_of_subspaces(4, 4, 6, 60, seed=1)
    start = _flip(d.labels, 0.2, 1)
    for dim in (None, 4):
        refined, n_iter = k_subspaces(d.X, start, dim=dim)
        assert clustering_accuracy(d.labels, refined) == 1.0 and n_iter >= 1
    # labels keep their names, and a right start is left as it is
    same, n_iter = k_subspaces(d.X, d.labels + 10)
    np.testing.assert_array_equal(same, d.labels + 10)
    assert n_iter == 0


@settings(deadline=None, max_examples=15)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_no_round_raises_the_total_residual(seed, dim):
    d = union_of_subspaces(3, 3, 6, 20, noise=0.3, seed=seed)
    labels = _flip(d.labels, 0.4, seed)

    def total(lab):
        out = 0.0
        for k in np.unique(lab):
            Xk = d.X[lab == k]
            s = np.linalg.svd(Xk, compute_uv=False)
            out += (s[dim:] ** 2).sum()  # residual of a cluster's own best subspace
        return out

    before = total(labels)
    after = total(k_subspaces(d.X, labels, dim=dim, max_iter=1)[0])
    assert after <= before + 1e-9


def test_subspace_dimension_is_the_explained_energy_rule():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3)) @ rng.standard_normal((3, 8))
    assert subspace_dimension(X) <= 3 and subspace_dimension(X, energy=1.0) == 3
    for energy in (0.5, 0.8, 0.9, 0.99):
        eig = np.sort(np.linalg.eigvalsh(X.T @ X))[::-1]
        ref = int(np.argmax(np.cumsum(eig) >= energy * eig.sum() * (1 - 1e-12))) + 1
        assert subspace_dimension(X, energy=energy) == ref
    assert subspace_dimension(np.ones((1, 4))) == 1  # one point: a line
    assert subspace_dimension(rng.standard_normal((40, 5)), energy=1.0) == 4  # < D


def test_estimator_refines_by_default_and_refine_false_is_plain_ssc():
    # A seed the defaults were not designed on; pure SSC errs near the intersections.
    d = union_of_subspaces(5, 6, 9, 200, seed=450)
    model = SubspaceClustering(5).fit(d.X)
    plain = SubspaceClustering(5, refine=False).fit(d.X)
    np.testing.assert_array_equal(plain.labels_, plain.spectral_labels_)
    np.testing.assert_array_equal(model.spectral_labels_, plain.labels_)
    assert clustering_accuracy(d.labels, plain.labels_) < 0.99
    assert clustering_accuracy(d.labels, model.labels_) == 1.0
    assert model.n_refine_iter_ >= 1 and plain.n_refine_iter_ == 0
    given_dim = SubspaceClustering(5, subspace_dim=6).fit(d.X)
    assert clustering_accuracy(d.labels, given_dim.labels_) == 1.0


def test_bad_inputs():
    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match="labels"):
        k_subspaces(X, np.zeros(9))
    with pytest.raises(ValueError, match="dim must be an integer"):
        k_subspaces(X, np.zeros(10), dim=3)
    with pytest.raises(ValueError, match="max_iter"):
        k_subspaces(X, np.zeros(10), max_iter=-1)
    with pytest.raises(ValueError, match="X contains NaN"):
        k_subspaces(np.full((4, 3), np.nan), np.zeros(4))
    with pytest.raises(ValueError, match="energy"):
        subspace_dimension(X, energy=0.0)
    with pytest.raises(ValueError, match="subspace_dim"):
        SubspaceClustering(2, subspace_dim=3).fit(X)


def test_a_point_on_an_intersection_keeps_its_label():
    # Two planes of R³ that share the x-axis; points on the axis fit both exactly, so
    # the tie must leave them where they are, in either cluster, and stop at once.
    rng = np.random.default_rng(0)
    a, b, t = rng.standard_normal((3, 20))
    plane_xy = np.c_[a, b, 0 * a]
    plane_xz = np.c_[a, 0 * a, b]
    axis = np.c_[t[:4], np.zeros((4, 2))]
    X = np.vstack([plane_xy, plane_xz, axis])
    for axis_label in (0, 1):
        start = np.r_[np.zeros(20), np.ones(20), np.full(4, axis_label)].astype(int)
        refined, n_iter = k_subspaces(X, start, dim=2)
        np.testing.assert_array_equal(refined, start)
        assert n_iter == 0


def test_residuals_keep_their_digits_near_a_subspace():
    # A point 1e-9 off a plane: its squared residual 1e-18 is far below the rounding
    # of ‖x‖² − ‖Bᵀx‖² (about 1e-16 ‖x‖²), so the subtraction would lose it.
    from attnlib.subspace.ksubspaces import _residuals

    rng = np.random.default_rng(1)
    X = np.c_[rng.standard_normal((30, 2)), np.zeros(30)]
    X[0, 2] = 1e-9
    res = _residuals(X, np.zeros(30, dtype=int), 1, 2)[:, 0]
    basis = np.linalg.svd(X, full_matrices=False)[2][:2]
    coef = np.linalg.lstsq(basis.T, X[0], rcond=None)[0]
    ref = ((X[0] - basis.T @ coef) ** 2).sum()
    np.testing.assert_allclose(res[0], ref, rtol=1e-6)
    assert 0.5e-18 < res[0] < 2e-18


def test_a_chance_level_start_suffices_on_its_own_model():
    # What the module docstring and chapter 05 say: on noise-free linear subspaces of
    # one dimension K-subspaces needs no good start; k-means labels are near chance.
    from sklearn.cluster import KMeans

    d = union_of_subspaces(5, 6, 9, 200, seed=7)
    km = KMeans(5, n_init=10, random_state=0).fit_predict(d.X)
    assert clustering_accuracy(d.labels, km) < 0.4
    assert clustering_accuracy(d.labels, k_subspaces(d.X, km)[0]) >= 0.99


def test_stopping_at_max_iter_with_labels_moving_warns():
    """A refinement cut short says so (scikit-learn's ConvergenceWarning); one that
    settled within max_iter, or was asked for no rounds, does not."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    d = union_of_subspaces(3, 2, 6, 40, seed=0)
    start = _flip(d.labels, 0.3, seed=1)
    _, n_iter = k_subspaces(d.X, start, dim=2)
    assert n_iter >= 1  # this start moves labels
    with pytest.warns(ConvergenceWarning, match=f"max_iter={n_iter}"):
        k_subspaces(d.X, start, dim=2, max_iter=n_iter)  # no round left to settle
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        k_subspaces(d.X, start, dim=2, max_iter=n_iter + 1)
        k_subspaces(d.X, start, dim=2, max_iter=0)
