"""Tests of attnlib.mux: tasks, multiplexers, and the conv / attention routers."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.mux import (
    AttentionRouter,
    ConvRouter,
    RoutingTask,
    WeekdayMux,
    conv_matrix,
    hard_mux,
    hardmax,
    routing_task,
    shift_tokens,
    soft_mux,
    straight_through_hardmax,
    translation_sequences,
    weekday_task,
)
from attnlib.mux.experiments.scores import accuracy_by_distance, routing_loss
from attnlib.training import to_device, train

# ----------------------------------------------------------------------------- tasks


def test_routing_task_is_deterministic_and_consistent():
    a, b, c = (
        routing_task(20, 12, 5, seed=3),
        routing_task(20, 12, 5, seed=3),
        routing_task(20, 12, 5, seed=4),
    )
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)
    assert not torch.equal(a.x, c.x)
    x = a.x.numpy()
    assert x.shape == (20, 12, 6)
    np.testing.assert_array_equal(x[..., :5].sum(-1), 1)  # one value per token
    np.testing.assert_array_equal(x[..., 5].sum(-1), 1)  # one marked token per sequence
    np.testing.assert_array_equal(np.argmax(x[..., 5], 1), a.marker.numpy())
    values = np.argmax(x[..., :5], -1)
    np.testing.assert_array_equal(
        values[np.arange(20), a.marker.numpy()], a.target.numpy()
    )


def test_weekday_task_target_is_the_preference_of_the_friend_on_the_rota():
    n, nf, nr = 50, 7, 5
    a, b = weekday_task(n, nf, nr, seed=1), weekday_task(n, nf, nr, seed=1)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)
    friends, day = a.friends.numpy(), a.day.numpy()
    ids, prefs = np.argmax(friends[..., :nf], -1), np.argmax(friends[..., nf:], -1)
    for s in range(n):
        # every friend once
        np.testing.assert_array_equal(np.sort(ids[s]), np.arange(nf))
        decider = a.rota.numpy()[np.argmax(day[s])]
        assert prefs[s, list(ids[s]).index(decider)] == a.target[s]
    assert not torch.equal(a.friends, weekday_task(n, nf, nr, seed=2).friends)


def test_weekday_task_accepts_an_explicit_rota():
    rota = [6, 5, 4, 3, 2, 1, 0]
    t = weekday_task(5, seed=0, rota=rota)
    assert t.rota.tolist() == rota


def test_weekday_task_accepts_a_shared_rota():
    rota = [0, 1, 2, 3, 4, 5, 0]  # friend 0 decides twice, friend 6 never
    t = weekday_task(200, seed=3, rota=rota)
    ids, prefs = t.friends[..., :7].argmax(-1), t.friends[..., 7:].argmax(-1)
    decider = torch.tensor(rota)[t.day.argmax(-1)]
    slot = (ids == decider[:, None]).float().argmax(1)
    torch.testing.assert_close(t.target, prefs.gather(1, slot[:, None])[:, 0])
    assert set(decider.tolist()) == set(range(6))


def test_translation_sequences_have_zero_margins():
    x = translation_sequences(3, 20, 2, margin=5, seed=0)
    assert x.shape == (3, 20, 2)
    assert (x[:, :5] == 0).all() and (x[:, 15:] == 0).all() and (x[:, 5:15] != 0).all()
    torch.testing.assert_close(x, translation_sequences(3, 20, 2, margin=5, seed=0))


@given(shift=st.integers(-9, 9))
@settings(max_examples=20, deadline=None)
def test_shift_tokens_matches_a_numpy_shift(shift):
    x = np.random.default_rng(0).standard_normal((2, 10, 3))
    expected = np.zeros_like(x)
    for j in range(10):
        if 0 <= j - shift < 10:
            expected[:, j] = x[:, j - shift]
    np.testing.assert_array_equal(
        shift_tokens(torch.from_numpy(x), shift).numpy(), expected
    )


# -------------------------------------------------------------------------- convolution


@given(half=st.integers(0, 3), length=st.integers(1, 12), seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_conv_matrix_equals_numpy_correlate_and_torch_conv1d(half, length, seed):
    rng = np.random.default_rng(seed)
    kernel, x = rng.standard_normal(2 * half + 1), rng.standard_normal(length)
    M = conv_matrix(torch.from_numpy(kernel), length).numpy()
    padded = np.concatenate([np.zeros(half), x, np.zeros(half)])
    # cross-correlation
    expected = np.array([padded[j : j + 2 * half + 1] @ kernel for j in range(length)])
    np.testing.assert_allclose(M @ x, expected, atol=1e-12)
    torch_out = F.conv1d(
        torch.from_numpy(x)[None, None],
        torch.from_numpy(kernel)[None, None],
        padding=half,
    )
    np.testing.assert_allclose(M @ x, torch_out[0, 0].numpy(), atol=1e-12)


def test_conv_router_is_translation_equivariant_away_from_the_borders():
    torch.manual_seed(0)
    model = ConvRouter(4, 3, kernel_size=5, depth=3, width=8).double()
    half = model.receptive_field // 2
    assert model.receptive_field == 13
    x = translation_sequences(2, 40, 4, margin=5, seed=1).double()
    y = model(x)
    for s in (1, 3, 5):
        ys = model(shift_tokens(x, s))
        torch.testing.assert_close(
            ys[:, s + half : 40 - half], y[:, half : 40 - half - s]
        )


def test_conv_router_is_local():
    """An output does not change when an input outside its receptive field does."""
    torch.manual_seed(0)
    model = ConvRouter(4, 3, kernel_size=3, depth=2, width=8).double()
    x = translation_sequences(1, 20, 4, margin=0, seed=2).double()
    x2 = x.clone()
    x2[0, 10] += 5.0
    changed = (model(x2) - model(x)).abs().sum(-1)[0] > 0
    assert changed.nonzero().flatten().tolist() == [8, 9, 10, 11, 12]


def test_attention_router_is_permutation_equivariant_without_positions_only():
    torch.manual_seed(0)
    x = torch.randn(2, 9, 5, dtype=torch.float64)
    perm = torch.randperm(9)
    plain = AttentionRouter(5, 3, 8).double()
    torch.testing.assert_close(plain(x[:, perm]), plain(x)[:, perm])
    positional = AttentionRouter(5, 3, 8, max_len=9).double()
    with torch.no_grad():
        positional.pos.mul_(10)
    assert (positional(x[:, perm]) - positional(x)[:, perm]).abs().max() > 1e-3


def test_attention_router_weights_are_softmax_of_projected_scores(np_softmax):
    torch.manual_seed(1)
    m = AttentionRouter(4, 2, 6).double()
    x = torch.randn(3, 7, 4, dtype=torch.float64)
    res = m.attend(x)
    W = {
        name: (
            getattr(m, name).weight.detach().numpy(),
            getattr(m, name).bias.detach().numpy(),
        )
        for name in "qkv"
    }
    q, k, v = ((x.numpy() @ W[n][0].T + W[n][1]) for n in "qkv")
    w = np_softmax(q @ k.transpose(0, 2, 1) / np.sqrt(6))
    np.testing.assert_allclose(res.weights.detach().numpy(), w, atol=1e-12)
    np.testing.assert_allclose(res.output.detach().numpy(), w @ v, atol=1e-12)


# ------------------------------------------------------------------------- multiplexers


def test_hard_mux_picks_the_controlled_input():
    h = torch.arange(24.0).reshape(2, 4, 3)
    out = hard_mux(h, torch.tensor([3, 1]))
    np.testing.assert_array_equal(out.numpy(), h.numpy()[[0, 1], [3, 1]])


@given(seed=st.integers(0, 10_000), t=st.floats(0.05, 20.0))
@settings(max_examples=30, deadline=None)
def test_soft_mux_equals_numpy_softmax_average(seed, t, np_softmax):
    rng = np.random.default_rng(seed)
    h, a = rng.standard_normal((3, 6, 2)), rng.standard_normal((3, 6))
    out, w = soft_mux(torch.from_numpy(h), torch.from_numpy(a), temperature=t)
    expected_w = np_softmax(a / t)
    np.testing.assert_allclose(w.numpy(), expected_w, atol=1e-12)
    np.testing.assert_allclose(
        out.numpy(), np.einsum("bn,bnd->bd", expected_w, h), atol=1e-12
    )


def test_soft_mux_tends_to_hard_mux_as_the_temperature_falls():
    g = torch.Generator().manual_seed(0)
    h, a = (
        torch.randn(5, 7, 3, generator=g, dtype=torch.float64),
        torch.randn(5, 7, generator=g, dtype=torch.float64),
    )
    hard = hard_mux(h, a.argmax(-1))
    errors = [
        (soft_mux(h, a, temperature=t).output - hard).abs().max().item()
        for t in (1.0, 0.1, 1e-4)
    ]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-10
    torch.testing.assert_close(soft_mux(h, a, normalizer="hardmax").output, hard)


def test_hardmax_is_one_hot_at_the_first_maximum_and_blocks_gradients():
    s = torch.tensor(
        [[0.0, 2.0, 2.0, -1.0], [float("-inf"), -5.0, -6.0, float("-inf")]],
        requires_grad=True,
    )
    w = hardmax(s)
    np.testing.assert_array_equal(w.detach().numpy(), [[0, 1, 0, 0], [0, 1, 0, 0]])
    assert not w.requires_grad


def test_straight_through_is_hard_forward_and_softmax_backward():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(4, 6, generator=g, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(4, 6, generator=g, dtype=torch.float64)
    w = straight_through_hardmax(s)
    torch.testing.assert_close(w.detach(), hardmax(s.detach()))
    (grad,) = torch.autograd.grad((w * upstream).sum(), s)
    (soft_grad,) = torch.autograd.grad((torch.softmax(s, -1) * upstream).sum(), s)
    torch.testing.assert_close(grad, soft_grad)


def test_weekday_mux_scores_are_the_bilinear_form(np_softmax):
    torch.manual_seed(0)
    m = WeekdayMux(7, 5, 4).double()
    t = weekday_task(6, seed=0)
    friends, day = t.friends.double(), t.day.double()
    M = m.bilinear_form().detach().numpy()
    Q, K = m.Q.weight.detach().numpy(), m.K.weight.detach().numpy()
    np.testing.assert_allclose(M, Q.T @ K, atol=1e-12)
    scores = np.einsum("bc,cf,bnf->bn", day.numpy(), M, friends.numpy())
    out, w = m.attend(friends, day)
    np.testing.assert_allclose(w.detach().numpy(), np_softmax(scores), atol=1e-12)
    np.testing.assert_allclose(
        out.detach().numpy(),
        np.einsum("bn,bnf->bf", np_softmax(scores), friends.numpy()),
        atol=1e-12,
    )
    # the slot order of the friends does not matter
    perm = torch.randperm(7)
    torch.testing.assert_close(m(friends[:, perm], day), m(friends, day))


def test_hard_routing_gets_no_gradient_and_straight_through_does():
    t = weekday_task(16, seed=0)
    grads = {}
    for name in ("hardmax", "straight_through", "softmax"):
        torch.manual_seed(0)
        m = WeekdayMux(normalizer=name)
        F.cross_entropy(m(t.friends, t.day), t.target).backward()
        grads[name] = (
            0.0 if m.Q.weight.grad is None else m.Q.weight.grad.abs().sum().item()
        )
    assert (
        grads["hardmax"] == 0.0
        and grads["straight_through"] > 0
        and grads["softmax"] > 0
    )


@pytest.mark.usefixtures("one_thread")  # a tiny model: threads only wait for each other
def test_one_attention_layer_learns_routing_at_every_distance():
    torch.manual_seed(0)
    model = AttentionRouter(7, 6, 8)
    batches = lambda step: routing_task(32, 16, 6, seed=100 + step)  # noqa: E731
    train(model, routing_loss, batches, n_steps=80, lr=2e-2, progress=False)
    acc = accuracy_by_distance(model, routing_task(200, 16, 6, seed=0))
    assert acc.min() > 0.95


def test_to_device_keeps_named_tuples():
    t = routing_task(2, 4, 3, seed=0)
    moved = to_device(t, torch.device("meta"))
    assert isinstance(moved, RoutingTask)
    assert all(f.device.type == "meta" for f in moved if isinstance(f, torch.Tensor))
    torch.testing.assert_close(to_device(t, "cpu").x, t.x)


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: routing_task(0), "n must be"),
        (lambda: routing_task(3, length=1), "length"),
        (lambda: routing_task(3, n_values=1), "n_values"),
        (lambda: weekday_task(0), "n must be"),
        (lambda: weekday_task(3, n_friends=1), "n_friends"),
        (lambda: weekday_task(3, n_restaurants=1), "n_restaurants"),
        (lambda: weekday_task(3, rota=[0, 7, 1, 2, 3, 4, 5]), "rota"),
        (lambda: weekday_task(3, rota=[0, 1, 2]), "rota"),
        (lambda: translation_sequences(2, 10, margin=5), "margin"),
        (lambda: translation_sequences(2, 10, dim=0), "dim must be"),
        (lambda: shift_tokens(torch.zeros(2, 5, 1), 5), "shift"),
        (lambda: shift_tokens(torch.zeros(2, 5, 1), 1.5), "shift"),
        (lambda: shift_tokens(torch.zeros(5), 1), "x must have at least 2"),
        (lambda: conv_matrix([1.0, 2.0], 5), "kernel"),
        (lambda: conv_matrix([1.0], 0), "length"),
        (lambda: conv_matrix([float("nan")], 3), "kernel"),
        (lambda: hard_mux(torch.zeros(2, 3, 1), torch.tensor([0, 3])), "control"),
        (lambda: hard_mux(torch.zeros(2, 3, 1), torch.tensor([0.0, 1.0])), "control"),
        (lambda: hard_mux(torch.zeros(2, 3, 1), torch.tensor(0)), "control"),
        (
            lambda: hard_mux(torch.full((2, 3, 1), float("nan")), torch.tensor([0, 1])),
            "inputs",
        ),
        (lambda: soft_mux(torch.zeros(2, 3, 1), torch.zeros(2, 4)), "importance"),
        (
            lambda: soft_mux(torch.zeros(2, 3, 1), torch.zeros(2, 3), temperature=0.0),
            "temperature",
        ),
        (
            lambda: soft_mux(torch.zeros(2, 3, 1), torch.zeros(2, 3), normalizer="max"),
            "normalizer",
        ),
        (lambda: hardmax(torch.tensor([float("nan"), 1.0])), "scores"),
        (lambda: straight_through_hardmax(torch.tensor([float("nan"), 1.0])), "scores"),
        (lambda: ConvRouter(3, 2, kernel_size=4), "kernel_size"),
        (lambda: ConvRouter(3, 2, depth=0), "depth"),
        (lambda: ConvRouter(3, 2)(torch.zeros(4, 3)), "x must have 3 dim"),
        (lambda: AttentionRouter(3, 2, normalizer="argmax"), "normalizer"),
        (lambda: AttentionRouter(3, 2, d_model=0), "d_model"),
        (
            lambda: AttentionRouter(3, 2, max_len=4)(torch.zeros(1, 5, 3)),
            "x has 5 tokens, more than max_len",
        ),
        (lambda: WeekdayMux(d_key=0), "d_key"),
        (
            lambda: WeekdayMux()(torch.zeros(2, 7, 12), torch.zeros(3, 7)),
            "day and friends",
        ),
        (
            lambda: WeekdayMux()(torch.zeros(2, 7, 12), torch.zeros(7)),
            "day must have 2 dim",
        ),
        (
            lambda: WeekdayMux()(torch.zeros(2, 7, 5), torch.zeros(2, 7)),
            "friends must have 12 features",
        ),
        (
            lambda: WeekdayMux()(torch.zeros(2, 7, 12), torch.zeros(2, 5)),
            "day must have 7 features",
        ),
    ],
)
def test_bad_inputs_raise_value_errors_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --------------------------------------------------- wiring (the mutation campaign)
def test_attention_router_adds_positions_to_queries_and_keys(np_softmax):
    """With max_len the encoding P enters both sides: softmax((q + P)(k + P)ᵀ / √d)."""
    torch.manual_seed(2)
    m = AttentionRouter(4, 2, 6, max_len=9).double()
    x = torch.randn(3, 7, 4, dtype=torch.float64)
    res = m.attend(x)
    P = m.pos.detach().numpy()[:7]
    q, k, v = (
        x.numpy() @ getattr(m, n).weight.detach().numpy().T
        + getattr(m, n).bias.detach().numpy()
        for n in "qkv"
    )
    w = np_softmax((q + P) @ (k + P).transpose(0, 2, 1) / np.sqrt(6))
    np.testing.assert_allclose(res.weights.detach().numpy(), w, atol=1e-12)
    np.testing.assert_allclose(res.output.detach().numpy(), w @ v, atol=1e-12)


def test_conv_router_layers_after_the_first_are_residual():
    """h₁ = relu(conv₁ x), h_l = h_{l-1} + relu(conv_l h_{l-1}), logits = readout h_L,
    restated with torch.nn.functional.conv1d and the module's weights."""
    torch.manual_seed(3)
    m = ConvRouter(4, 3, kernel_size=3, depth=3, width=5).double()
    x = torch.randn(2, 10, 4, dtype=torch.float64)
    h = x.transpose(1, 2)
    for i, conv in enumerate(m.convs):
        step = torch.relu(F.conv1d(h, conv.weight, conv.bias, padding=1))
        h = step if i == 0 else h + step
    ref = F.conv1d(h, m.readout.weight, m.readout.bias).transpose(1, 2)
    torch.testing.assert_close(m(x), ref, rtol=0, atol=1e-12)
