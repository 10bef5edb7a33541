"""Tests of attnlib.subspace.experiments (chapter 05's data and models)."""

import numpy as np
import pytest
import torch
from draws import differ, equal, inits_differ, same_numbers

from attnlib.subspace import experiments as se
from attnlib.subspace.experiments import runs
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


# ------------------------------------------------ one seed of chapter 05's sweep


def _runs(run, reseed_globals, draws, recorded):
    """``run(seed)`` for seed 0 under two global states and seed 1, each followed by
    ``draws()``, what it drew; the ``recorded`` calls are cleared before each run."""
    seen = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        for calls in recorded:
            calls.clear()
        reseed_globals(state)
        seen.append((run(seed), draws()))
    return seen


def _seeds_of(calls):
    return [kwargs["seed"] for _, kwargs, _ in calls]


def test_held_out_run_draws_data_split_and_initialisation_from_its_seed(
    record_calls, reseed_globals
):
    data = record_calls(runs, "union_of_subspaces")
    senets = record_calls(runs, "fit_self_expressive_net")
    listas = record_calls(runs, "fit_learned_ista")

    def draws():
        ((_, _, drawn),), ((args, _, _),) = data, senets
        rows = [np.flatnonzero((drawn.X == x).all(1))[0] for x in args[0]]
        return drawn.X, drawn.bases, sorted(rows), _seeds_of(senets + listas)

    (r0, d0), (r1, d1), (r2, d2) = _runs(
        lambda seed: runs.held_out_run(seed, n_per_subspace=10),
        reseed_globals,
        draws,
        (data, senets, listas),
    )
    assert same_numbers(r1, r0) and equal(d1[:3], d0[:3]) and d1[3] == d0[3]
    assert not same_numbers(r2, r0)
    assert differ(d2[:2], d0[:2]), "two seeds, one union of subspaces"
    assert d2[2] != d0[2], "two seeds, one split into fitted and new points"
    # each fit is seeded by the run's seed (the fits' own tests show they follow it)
    assert d0[3] == [0, 0] and d2[3] == [1, 1]


def test_normalized_run_draws_data_and_initial_logits_from_its_seed(
    record_calls, reseed_globals
):
    data = record_calls(runs, "union_of_subspaces")
    fits = record_calls(runs, "normalized_self_expression")

    def draws():
        return data[0][2].X, data[0][2].bases, _seeds_of(fits)

    (r0, d0), (r1, d1), (r2, d2) = _runs(
        lambda seed: runs.normalized_run(seed, n_per_subspace=6),
        reseed_globals,
        draws,
        (data, fits),
    )
    assert same_numbers(r1, r0) and equal(d1[:2], d0[:2])
    assert not same_numbers(r2, r0) and differ(d2[:2], d0[:2])
    assert d0[2] == [0, 0] and d2[2] == [1, 1]


def test_stack_run_draws_batches_test_set_and_initialisations_from_its_seed(
    record_calls, reseed_globals
):
    trainings = record_calls(runs, "train")
    batches = record_calls(runs, "sparse_combination_batch")

    def draws():
        starts = [args[0].state_dict() for args, _, _ in trainings]
        (test,) = [out for args, _, out in batches if args[1:] == (512,)]
        first = [out for args, _, out in batches if args[1:] == ()][0]
        return starts, first, test

    (r0, d0), (r1, d1), (r2, d2) = _runs(
        lambda seed: runs.stack_run(seed, n_steps=1),
        reseed_globals,
        draws,
        (trainings, batches),
    )
    assert same_numbers(r1, r0) and equal(d1, d0)
    assert not same_numbers(r2, r0)
    for a, b in zip(d0[0], d2[0]):  # softmax, sparsemax and ISTA stacks
        assert inits_differ(a, b), "two seeds, one initialisation"
    assert differ(d2[1], d0[1]), "two seeds, one first training batch"
    assert differ(d2[2], d0[2]), "two seeds, one test set"
    assert not equal(d0[1], d0[2][:64])  # no test task is a training task


def test_the_fits_initialise_from_their_seed_alone(reseed_globals):
    """One step from the start: the same seed under two global states gives the same
    model or coefficients, another seed others."""
    X = np.random.default_rng(1).standard_normal((8, 4))
    nets, coefs = [], []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        reseed_globals(state)
        net, _ = se.fit_self_expressive_net(X, hidden=4, n_steps=1, seed=seed)
        nets.append(net.state_dict())
        reseed_globals(state + 10)
        coefs.append(se.normalized_self_expression(X, n_steps=1, seed=seed))
    assert equal(nets[1], nets[0]) and inits_differ(nets[2], nets[0])
    assert equal(coefs[1], coefs[0]) and differ(coefs[2], coefs[0])


@pytest.mark.parametrize(
    "make, drawn",
    [
        (lambda seed: se.motion(2, 6, 3, seed=seed), (0,)),
        (lambda seed: se.faces(2, 4, 12, seed=seed), (0,)),
        # the step seeds a batch: keys, values, codes and which keys are right
        (lambda seed: se.sparse_combination_batch(seed, 4), (0, 1, 2, 3, 4)),
        (lambda seed: se.sparse_combination_batch(-1 - seed, 4), (0, 1, 2, 3, 4)),
    ],
    ids=["motion", "faces", "training batch", "held-out batch"],
)
def test_a_data_set_draws_from_its_seed_alone(make, drawn, reseed_globals):
    out = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        reseed_globals(state)
        out.append(make(seed))
    assert equal(out[1], out[0])
    for i in drawn:  # each output apart (the labels are the fixed grouping)
        assert differ(out[2][i], out[0][i]), i
