"""Tests of attnlib.subspace.experiments (chapter 05's data and models)."""

import numpy as np
import pytest
import torch

from attnlib.subspace import experiments as se
from attnlib.subspace.sparse_coding import sparse_coding_attention


def test_motion_trajectories_lie_in_4d_subspaces():
    X, labels = se.motion(n_bodies=2, n_points=12, frames=5, seed=3)
    assert X.shape == (24, 10) and np.bincount(labels).tolist() == [12, 12]
    assert [np.linalg.matrix_rank(X[labels == b]) for b in (0, 1)] == [4, 4]


def test_faces_are_nonnegative_images():
    X, labels = se.faces(n_faces=2, n_images=5, pixels=30, seed=0)
    assert X.shape == (10, 30) and X.min() >= 0 and labels.tolist() == [0] * 5 + [1] * 5


def test_sparse_combination_batch_targets_are_the_codes_applied_to_values():
    q, k, v, target, right = se.sparse_combination_batch(3, size=4)
    assert right.sum(-1).eq(2).all()
    np.testing.assert_allclose(torch.linalg.norm(k, dim=-1).numpy(), 1, atol=1e-6)
    # the codes are the least-squares solution on the two right keys
    C = torch.zeros(right.shape)
    for b in range(4):
        for i in range(right.shape[1]):
            idx = right[b, i].nonzero()[:, 0]
            C[b, i, idx] = torch.linalg.lstsq(k[b, idx].T, q[b, i]).solution
    torch.testing.assert_close(C @ v, target, atol=1e-4, rtol=1e-4)
    # reproducible
    torch.testing.assert_close(se.sparse_combination_batch(3, size=4)[0], q)


def test_attention_stacks_have_equal_sizes_up_to_the_ista_scalars():
    sizes = {
        kind: sum(p.numel() for p in se.AttentionStack(kind, 8, 2).parameters())
        for kind in ("softmax", "sparsemax", "ista")
    }
    assert sizes["softmax"] == sizes["sparsemax"] == sizes["ista"] - 2 * 3 * 2
    q, k, v, *_ = se.sparse_combination_batch(0, size=2)
    out, W = se.AttentionStack("ista", 8, 2)(q, k, v)
    assert out.shape == q.shape and W.shape == (2, 8, 12)
    with pytest.raises(ValueError, match="kind"):
        se.AttentionStack("relu")


def test_learned_ista_at_initialisation_is_plain_ista():
    g = torch.Generator().manual_seed(0)
    q, k = (
        torch.randn(3, 5, generator=g, dtype=torch.float64),
        torch.randn(9, 5, generator=g, dtype=torch.float64),
    )
    model = se.LearnedISTACodes(n_iter=4, lam=0.1).double()
    ref = sparse_coding_attention(q, k, k, lam=0.1, n_iter=4).weights
    torch.testing.assert_close(model(q, k), ref)
    X = torch.randn(6, 5, generator=g, dtype=torch.float64)
    assert torch.all(torch.diagonal(model(X, X, exclude_self=True)) == 0)


def test_fitted_models_lower_their_loss_and_code_new_points():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    model, losses = se.fit_learned_ista(X, n_iter=3, lam=0.01, n_steps=20)
    assert losses[-1] < losses[0]
    net, losses = se.fit_self_expressive_net(X, hidden=8, n_steps=20)
    assert losses[-1] < losses[0]
    assert net(torch.ones(2, 6), torch.as_tensor(X, dtype=torch.float32)).shape == (
        2,
        40,
    )


def test_normalized_self_expression_rows_on_the_simplex():
    X = np.random.default_rng(1).standard_normal((12, 4))
    for name in ("softmax", "sparsemax"):
        C = se.normalized_self_expression(X, name, n_steps=10)
        np.testing.assert_allclose(C.sum(1), 1, atol=1e-10)
        assert C.min() >= 0 and np.all(np.diag(C) == 0)
    with pytest.raises(ValueError, match="normalizer"):
        se.normalized_self_expression(X, "entmax")


def test_assign_by_coefficients():
    C = np.array([[0.0, -2.0, 0.5], [1.0, 0.1, 0.2]])
    assert se.assign_by_coefficients(C, [0, 1, 0], 2).tolist() == [1, 0]


def test_self_expressive_net_excludes_only_the_diagonal():
    """exclude_self=True zeroes c(x_i, x_i) and keeps every other coefficient."""
    torch.manual_seed(0)
    net = se.SelfExpressiveNet(4, hidden=8).double()
    with torch.no_grad():
        net.raw_b.fill_(-20.0)  # a negligible threshold: every coefficient non-zero
    X = torch.randn(
        6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    full = net(X, X).detach().numpy()
    excluded = net(X, X, exclude_self=True).detach().numpy()
    assert (np.diag(full) != 0).all() and (np.diag(excluded) == 0).all()
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_array_equal(excluded[off], full[off])
