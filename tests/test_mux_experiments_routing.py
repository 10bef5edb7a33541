"""Tests of chapter 08's controls (attnlib.mux.experiments.routing)."""

import math

import numpy as np
import pytest
import torch
from draws import differ, equal, inits_differ, same_numbers
from scipy.linalg import toeplitz

from attnlib.mux import ConvRouter, conv_matrix
from attnlib.mux.experiments import runs as routing_runs
from attnlib.mux.experiments.routing import (
    best_convolution,
    dirichlet_laplacian,
    fit_linear_stack,
    green_function,
    layers_to_see_everything,
    pointer_task,
)


def test_pointer_task_targets_are_the_values_of_the_pointed_tokens():
    t = pointer_task(30, length=10, n_values=4, n_labels=12, seed=3)
    x = t.x.numpy()
    labels, pointer, values = (
        x[..., :12].argmax(-1),
        x[..., 12:24].argmax(-1),
        x[..., 24:].argmax(-1),
    )
    for b in range(30):
        assert len(set(labels[b])) == 10  # distinct labels
        for i in range(10):
            j = list(labels[b]).index(pointer[b, i])
            assert j == t.source[b, i] and values[b, j] == t.target[b, i]
    again = pointer_task(30, length=10, n_values=4, n_labels=12, seed=3)
    assert torch.equal(again.x, t.x) and not torch.equal(
        pointer_task(30, 10, 4, n_labels=12, seed=4).x, t.x
    )


def test_pointer_task_has_many_answers_per_sequence():
    t = pointer_task(200, length=24, n_values=6, seed=0)
    best_single = [np.bincount(row, minlength=6).max() / 24 for row in t.target.numpy()]
    assert np.mean(best_single) < 0.5


@pytest.mark.parametrize("length,kernel", [(24, 5), (8, 5), (10, 3), (1000, 5), (7, 7)])
def test_layers_to_see_everything_matches_the_closed_form_and_a_conv_stack(
    length, kernel
):
    layers = layers_to_see_everything(length, kernel)
    assert layers == math.ceil(2 * (length - 1) / (kernel - 1))
    # a real stack: the last output feels the first input only at that depth
    if length <= 24:
        for depth, feels in [(layers - 1, False), (layers, True)]:
            if depth == 0:
                continue
            torch.manual_seed(0)
            cnn = ConvRouter(1, 1, kernel_size=kernel, depth=depth, width=4).double()
            x = torch.randn(1, length, 1, dtype=torch.float64, requires_grad=True)
            cnn(x)[0, -1].sum().backward()
            assert (x.grad[0, 0, 0] != 0).item() == feels


def test_green_function_inverts_the_laplacian_and_is_dense():
    for n in (2, 5, 24):
        np.testing.assert_allclose(
            green_function(n), np.linalg.inv(dirichlet_laplacian(n)), atol=1e-12
        )
        assert (green_function(n) > 0).all()


def test_best_convolution_is_toeplitz_and_optimal():
    rng = np.random.default_rng(0)
    target = rng.normal(size=(9, 9))
    kernel, matrix = best_convolution(target, 5)
    col = np.r_[kernel[2::-1], np.zeros(6)]  # matrix[j, j + o] = kernel[o + 2]
    row = np.r_[kernel[2:], np.zeros(6)]
    np.testing.assert_allclose(matrix, toeplitz(col, row), atol=1e-12)
    best = np.linalg.norm(matrix - target)
    for _ in range(20):  # no other kernel of that width does better
        _, other = best_convolution(target + 0.0, 5)
        perturbed = other + sum(
            e * np.eye(9, k=o) for e, o in zip(1e-3 * rng.normal(size=5), range(-2, 3))
        )
        assert np.linalg.norm(perturbed - target) >= best
    exact = toeplitz(np.r_[1.0, 2.0, np.zeros(7)], np.r_[1.0, -1.0, np.zeros(7)])
    np.testing.assert_allclose(
        best_convolution(exact, 3)[0], [2.0, 1.0, -1.0], atol=1e-12
    )


def test_fit_linear_stack_is_a_product_of_zero_padded_convolutions():
    target = green_function(10)
    kernels, matrix = fit_linear_stack(target, 3, seeds=(0,), max_iter=50)
    product = np.eye(10)
    for w in kernels:  # first layer first: M_3 M_2 M_1
        product = conv_matrix(torch.tensor(w), 10).numpy() @ product
    np.testing.assert_allclose(matrix, product, atol=1e-12)
    # the zero padding cuts the bands: the product is not Toeplitz at the borders
    assert not np.allclose(np.diag(matrix), np.diag(matrix)[0])


def test_fit_linear_stack_recovers_a_reachable_target_and_beats_one_convolution():
    rng = np.random.default_rng(1)
    kernels = [rng.normal(size=3) for _ in range(2)]
    reachable = (
        conv_matrix(torch.tensor(kernels[1]), 8).numpy()
        @ conv_matrix(torch.tensor(kernels[0]), 8).numpy()
    )
    _, fitted = fit_linear_stack(reachable, 2, kernel_size=3, seeds=(0, 1, 2, 3))
    assert np.linalg.norm(fitted - reachable) < 1e-6 * np.linalg.norm(reachable)
    # and a single convolution of the stack's width cannot reach it (it is not Toeplitz)
    assert np.linalg.norm(best_convolution(reachable, 5)[1] - reachable) > 1e-3


def test_bad_inputs_raise_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="n_labels"):
        pointer_task(2, length=5, n_labels=4)
    with pytest.raises(ValueError, match="length"):
        pointer_task(2, length=1)
    with pytest.raises(ValueError, match="n_values"):
        pointer_task(2, n_values=1)
    with pytest.raises(ValueError, match="kernel_size"):
        layers_to_see_everything(5, 4)
    with pytest.raises(ValueError, match="length"):
        layers_to_see_everything(1, 3)
    with pytest.raises(ValueError, match="n must be an integer"):
        dirichlet_laplacian(1)
    with pytest.raises(ValueError, match="target"):
        best_convolution(np.zeros((2, 3)), 3)
    with pytest.raises(ValueError, match="width"):
        best_convolution(np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="target"):
        fit_linear_stack(np.zeros((2, 3)), 2)
    with pytest.raises(ValueError, match="kernel_size"):
        fit_linear_stack(np.zeros((3, 3)), 2, kernel_size=4)
    with pytest.raises(ValueError, match="depth"):
        fit_linear_stack(np.zeros((3, 3)), 0)


def test_reach_bound_is_the_norm_outside_the_band():
    from attnlib.mux.experiments.runs import reach_bound

    G = green_function(24)
    i = np.arange(24)
    far = np.abs(i[:, None] - i[None, :]) > 4
    expected = np.sqrt((G[far] ** 2).sum() / (G**2).sum())
    assert reach_bound(G, 4) == pytest.approx(expected, rel=1e-12)
    assert reach_bound(G, 23) == 0 and reach_bound(np.eye(5), 0) == 0
    assert reach_bound(np.ones((3, 3)), 0) == pytest.approx(np.sqrt(6 / 9))


def test_reach_bound_holds_for_the_best_banded_linear_map():
    # the least-squares banded map is the row-wise truncation: it meets the bound
    from attnlib.mux.experiments.runs import reach_bound

    G = green_function(12)
    i = np.arange(12)
    banded = np.where(np.abs(i[:, None] - i[None, :]) <= 3, G, 0)
    f = np.random.default_rng(0).normal(size=(20000, 12))
    err = np.linalg.norm(f @ (banded - G).T) / np.linalg.norm(f @ G.T)
    assert err == pytest.approx(reach_bound(G, 3), rel=0.02)


@pytest.mark.parametrize(
    "target, reach, match",
    [(np.ones((2, 3)), 1, "target"), (np.eye(3), -1, "reach")],
)
def test_reach_bound_bad_input(target, reach, match):
    from attnlib.mux.experiments.runs import reach_bound

    with pytest.raises(ValueError, match=match):
        reach_bound(target, reach)


def test_equivariant_reach_bound_adds_the_spread_of_the_interior_bands():
    from attnlib.mux.experiments.runs import equivariant_reach_bound, reach_bound

    G = green_function(24)
    assert equivariant_reach_bound(G, 4) == pytest.approx(0.5729, abs=1e-4)
    assert equivariant_reach_bound(G, 6) == pytest.approx(0.4229, abs=1e-4)
    for r in range(24):
        assert equivariant_reach_bound(G, r) >= reach_bound(G, r) - 1e-15
    # a Toeplitz target costs a shared kernel nothing; no interior output, no extra
    T = toeplitz(np.arange(10.0)[::-1] + 1)
    assert equivariant_reach_bound(T, 3) == pytest.approx(reach_bound(T, 3), rel=1e-12)
    assert equivariant_reach_bound(G, 12) == reach_bound(G, 12)


def test_equivariant_reach_bound_is_attained_by_a_shared_interior_kernel():
    from attnlib.mux.experiments.runs import equivariant_reach_bound

    G, r, n = green_function(12), 2, 12
    f_fit, f_new = np.random.default_rng(0).normal(size=(2, 20000, n))
    inner = range(r, n - r)
    windows = np.concatenate([f_fit[:, j - r : j + r + 1] for j in inner])
    k = np.linalg.lstsq(
        windows, np.concatenate([f_fit @ G[j] for j in inner]), rcond=None
    )[0]
    pred = f_new @ np.where(np.abs(np.subtract.outer(range(n), range(n))) <= r, G, 0).T
    for j in inner:
        pred[:, j] = f_new[:, j - r : j + r + 1] @ k
    err = np.linalg.norm(pred - f_new @ G.T) / np.linalg.norm(f_new @ G.T)
    assert err == pytest.approx(equivariant_reach_bound(G, r), rel=0.02)


# ------------------------------------------------ one seed of chapter 08's sweep
# Each run at its smallest (a step or two per model), and where its test set shows:
# the call of a data helper with 1 000 examples, or the CNN's input of 2 000 (the
# wide stack draws its noise itself). ``(owner, name, pick)``: ``pick(args)`` says
# which call of ``owner.name`` draws the test set, ``args[index]`` or its result.
RUNS = {
    "routing_run": (
        lambda seed: routing_runs.routing_run(seed, n_steps=2),
        (routing_runs, "routing_task", lambda args: args[0] == 1000, None),
    ),
    "pointer_run": (
        lambda seed: routing_runs.pointer_run(seed, n_steps=1),
        (routing_runs, "pointer_task", lambda args: args[0] == 1000, None),
    ),
    "weekday_run": (
        lambda seed: routing_runs.weekday_run(seed, n_steps=2),
        (routing_runs, "weekday_task", lambda args: args[0] == 1000, None),
    ),
    "wide_stack_run": (
        lambda seed: routing_runs.wide_stack_run(seed, 2, width=4, n=8, n_steps=2),
        (routing_runs.ConvRouter, "forward", lambda args: len(args[1]) == 2000, 1),
    ),
}


@pytest.mark.parametrize("name", RUNS)
def test_a_seed_draws_the_runs_data_and_initialisations_alone(
    name, record_calls, reseed_globals
):
    """The same seed under two global states gives the same numbers, initialisations
    and data; another seed gives other numbers, another initialisation of every model,
    another first training batch and another test set, each of their tensors apart
    (a weekday rota, a routing marker, the targets)."""
    run, (owner, helper, is_test, index) = RUNS[name]
    trainings = record_calls(routing_runs, "train")
    drawn = record_calls(owner, helper)
    seen = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        trainings.clear()
        drawn.clear()
        reseed_globals(state)
        result = run(seed)
        starts = [args[0].state_dict() for args, _, _ in trainings]
        first_batch = trainings[0][0][2](0)  # what the models train on first
        tests = [
            out if index is None else args[index]
            for args, _, out in drawn
            if is_test(args)
        ]
        assert len(tests) == 1
        seen.append((result, starts, first_batch, tests[0]))
    (r0, init0, batch0, test0), (r1, init1, batch1, test1), after = seen
    assert same_numbers(r1, r0)
    assert equal(init1, init0) and equal(batch1, batch0) and equal(test1, test0)
    r2, init2, batch2, test2 = after
    assert not same_numbers(r2, r0)
    assert len(init2) == len(init0) >= 1
    for a, b in zip(init0, init2):
        assert inits_differ(a, b), "two seeds, one initialisation"
    assert differ(batch2, batch0), "two seeds, one training batch"
    assert differ(test2, test0), "two seeds, one test set"


def test_weekday_run_chooses_among_n_friends(record_calls):
    """Every task the run draws (rota, batches, test set) and every model it trains
    has ``n_friends`` inputs; fewer than two is refused."""
    drawn = record_calls(routing_runs, "weekday_task")
    out = routing_runs.weekday_run(0, n_friends=4, n_steps=1)
    assert {args[1] for args, _, _ in drawn} == {4}
    assert {tuple(task.friends.shape[1:]) for _, _, task in drawn} == {(4, 4 + 5)}
    assert set(out) == {
        f"{m} {q}"
        for m in ("softmax", "straight_through", "hardmax")
        for q in ("accuracy", "Q moved", "rota")
    }
    with pytest.raises(ValueError, match="n_friends"):
        routing_runs.weekday_run(0, n_friends=1)
