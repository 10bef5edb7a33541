"""Tests of attnlib.subspace.lasso: the row-wise solvers against scikit-learn."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Lasso

from attnlib.subspace.lasso import lasso_codes, soft_threshold, ssc_rows


def test_lasso_codes_match_sklearn():
    rng = np.random.default_rng(0)
    K, Y = rng.standard_normal((40, 7)), rng.standard_normal((6, 7))
    C = lasso_codes(Y, K, 0.2)
    for i in range(
        len(Y)
    ):  # scikit-learn's loss is ours divided by the number of features
        ref = Lasso(alpha=0.2 / 7, fit_intercept=False, tol=1e-14, max_iter=10**6).fit(
            K.T, Y[i]
        )
        np.testing.assert_allclose(C[i], ref.coef_, atol=1e-9)
    assert (C != 0).sum(1).max() <= 7  # at most n_features non-zeros per row


def test_ssc_rows_zero_diagonal_and_gap():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((25, 5))
    C, info = ssc_rows(X, 0.1)
    assert np.all(np.diag(C) == 0) and info.converged and info.rel_gap < 1e-7


def test_soft_threshold_numpy_and_torch_agree():
    x = np.linspace(-2, 2, 9)
    expected = np.array([-1.5, -1.0, -0.5, 0, 0, 0, 0.5, 1.0, 1.5])
    np.testing.assert_allclose(soft_threshold(x, 0.5), expected)
    np.testing.assert_allclose(soft_threshold(torch.tensor(x), 0.5).numpy(), expected)


@settings(deadline=None, max_examples=40)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=20), st.floats(0, 3))
def test_soft_threshold_is_the_l1_prox(values, t):
    x = np.array(values)
    z = soft_threshold(x, t)
    # brute-force prox of t|z| + ½(z − x)² on a grid around each point
    grid = x[:, None] + np.linspace(-6, 6, 24001)[None]
    ref = grid[
        np.arange(len(x)),
        np.argmin(t * np.abs(grid) + 0.5 * (grid - x[:, None]) ** 2, axis=1),
    ]
    np.testing.assert_allclose(z, ref, atol=1e-3)
    torch.testing.assert_close(soft_threshold(torch.tensor(x), t), torch.tensor(z))


def test_bad_inputs():
    with pytest.raises(ValueError, match="solver"):
        ssc_rows(np.ones((4, 2)), 0.1, solver="cd")
    with pytest.raises(ValueError, match="lam must be"):
        ssc_rows(np.ones((4, 2)), -1.0)
    with pytest.raises(ValueError, match="Y and K"):
        lasso_codes(np.ones((2, 3)), np.ones((4, 2)), 0.1)
    with pytest.raises(ValueError, match="lam must be"):
        lasso_codes(np.ones((2, 3)), np.ones((4, 3)), 0.0)


def test_the_public_module_hands_off_to_the_engines():
    from attnlib.subspace import lasso
    from attnlib.subspace._lasso import common, homotopy, iterative

    assert lasso.homotopy_rows is homotopy.homotopy_rows
    assert lasso.lasso_rows is iterative.lasso_rows
    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(soft_threshold(x, 1.0), common.soft_threshold(x, 1.0))


def test_ssc_stopped_short_raises_scikit_learns_convergence_warning():
    """Chapters and sweeps turn this category into an error (one filter for both)."""
    from sklearn.exceptions import ConvergenceWarning

    from attnlib.subspace import self_expressive

    X = np.random.default_rng(0).standard_normal((30, 6))
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        self_expressive(X, "ssc", 0.05, solver="ista", max_iter=3, tol=1e-12)
