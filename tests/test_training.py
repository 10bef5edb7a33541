from collections import namedtuple

import numpy as np
import pytest
import torch
from torch import nn

from attnlib.training import evaluating, to_device, train


def _regression(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(200, 3, generator=g)
    return X, X @ torch.tensor([1.0, -2.0, 0.5]) + 0.3


def _mse(model, batch):
    X, y = batch
    return nn.functional.mse_loss(model(X).squeeze(-1), y)


def test_train_fits_a_linear_model_against_least_squares():
    X, y = _regression()
    model = nn.Linear(3, 1)
    history = train(model, _mse, [(X, y)], n_steps=400, lr=0.05, progress=False)
    assert len(history) == 400 and history[-1] < 1e-3 * history[0]
    A = torch.cat([X, torch.ones(200, 1)], 1)
    ref = torch.linalg.lstsq(A, y[:, None]).solution.squeeze()
    torch.testing.assert_close(
        torch.cat([model.weight.squeeze(), model.bias]).detach(), ref, atol=1e-3, rtol=0
    )


def test_train_is_seeded_and_accepts_a_batch_function():
    X, y = _regression()

    def run():
        torch.manual_seed(1)
        model = nn.Linear(3, 1)
        return train(
            model,
            _mse,
            lambda step: (X[step % 10 :: 10], y[step % 10 :: 10]),
            n_steps=20,
            progress=False,
        )

    assert run() == run()


def test_train_rejects_divergence_and_bad_arguments():
    X, y = _regression()
    with pytest.raises(ValueError, match="lower the learning rate lr="):
        train(
            nn.Linear(3, 1),
            lambda m, b: m(b[0]).sum() * float("inf"),
            [(X, y)],
            n_steps=2,
            progress=False,
        )
    with pytest.raises(ValueError, match="n_steps"):
        train(nn.Linear(3, 1), _mse, [(X, y)], n_steps=0)
    with pytest.raises(ValueError, match="lr must be"):
        train(nn.Linear(3, 1), _mse, [(X, y)], n_steps=1, lr=-1)


def test_to_device_handles_nested_batches():
    Pair = namedtuple("Pair", "x y")
    batch = {
        "x": torch.ones(2),
        "pair": (torch.zeros(1), [torch.ones(1)]),
        "name": "a",
        "nt": Pair(torch.ones(1), 2),
    }
    # the meta device: a move that really happens shows, even on a CPU-only machine
    moved = to_device(batch, torch.device("meta"))
    assert (
        moved["name"] == "a"
        and isinstance(moved["pair"], tuple)
        and isinstance(moved["pair"][1], list)
    )
    assert isinstance(moved["nt"], Pair) and moved["nt"].y == 2
    tensors = [moved["x"], moved["pair"][0], moved["pair"][1][0], moved["nt"].x]
    assert all(t.device.type == "meta" for t in tensors)
    assert batch["x"].device.type == "cpu"  # the input is left where it was
    assert to_device(batch, None)["pair"][1][0] is batch["pair"][1][0]


def test_summary_mode_prints_one_final_line(monkeypatch, capsys):
    X, y = _regression()
    monkeypatch.setenv("ATTNLIB_PROGRESS", "summary")
    history = train(nn.Linear(3, 1), _mse, [(X, y)], n_steps=25, desc="fitting")
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("fitting: 100%") and "25/25" in lines[0]
    )
    assert f"loss={history[-1]:.4g}" in lines[0] and out.err == ""


def test_off_mode_prints_nothing_and_still_trains(monkeypatch, capsys):
    """``make book`` builds the pages with ATTNLIB_PROGRESS=off: no progress line."""
    X, y = _regression()
    monkeypatch.setenv("ATTNLIB_PROGRESS", "off")
    history = train(nn.Linear(3, 1), _mse, [(X, y)], n_steps=25, desc="fitting")
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert len(history) == 25 and history[-1] < history[0]


def test_to_device_moves_every_tensor_in_nested_batches():
    """On the "meta" device (present without a GPU), every tensor moves: in dicts,
    tuples, lists and named tuples alike; other values are left alone."""
    Pair = namedtuple("Pair", "x y")
    batch = {"x": torch.ones(2), "pair": (torch.zeros(1), [torch.ones(1)])}
    batch["nt"] = Pair(torch.ones(1), 2)
    moved = to_device(batch, "meta")
    tensors = [moved["x"], moved["pair"][0], moved["pair"][1][0], moved["nt"].x]
    assert all(t.device.type == "meta" for t in tensors)
    assert isinstance(moved["nt"], Pair) and moved["nt"].y == 2


def test_gradient_clipping_comes_before_the_step():
    """With SGD at lr 1, one step moves the parameters by the clipped gradient."""
    X, y = _regression()
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    start = [p.detach().clone() for p in model.parameters()]
    grads = torch.autograd.grad(_mse(model, (X, y)), list(model.parameters()))
    norm = torch.sqrt(sum((g * g).sum() for g in grads))
    assert norm > 0.5  # so that clipping at 0.5 acts
    train(model, _mse, [(X, y)], n_steps=1, lr=1.0, optimizer=torch.optim.SGD,
          clip_grad_norm=0.5, progress=False)  # fmt: skip
    for p, p0, g in zip(model.parameters(), start, grads):
        torch.testing.assert_close(
            p0 - p.detach(), g * 0.5 / norm, rtol=1e-5, atol=1e-6
        )


def test_the_seed_reaches_the_draws_and_leaves_the_callers_stream_alone():
    """Issue 38: train() reseeded the global generator and left it so; now the seeded
    stream lives for the training only and the caller's stream is where it was."""
    X, y = _regression()
    drawn = []

    def batches(step):  # draws from torch's global generator, as many tasks do
        drawn.append(torch.randint(0, 200, (8,)))
        return X[drawn[-1]], y[drawn[-1]]

    model = nn.Linear(3, 1)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    train(model, _mse, batches, n_steps=2, progress=False)  # seed=0
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(0)
    for batch in drawn:  # the batches drew the stream of torch.manual_seed(0)
        assert torch.equal(batch, torch.randint(0, 200, (8,)))
    # seed=None trains on the caller's stream, as it stands, and advances it
    torch.manual_seed(123)
    drawn.clear()
    train(model, _mse, batches, n_steps=2, seed=None, progress=False)
    assert not torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(123)
    assert torch.equal(drawn[0], torch.randint(0, 200, (8,)))


def test_dropout_draws_from_the_seeded_stream():
    """Two trainings of one initial model with one seed agree, dropout included, and
    differ with another seed: dropout's masks come from the seeded generator."""
    X, y = _regression()

    def run(seed):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 16), nn.Dropout(0.5), nn.Linear(16, 1))
        torch.manual_seed(999)  # a caller's stream that must not matter
        train(model, _mse, [(X, y)], n_steps=5, seed=seed, progress=False)
        return torch.cat([p.detach().ravel() for p in model.parameters()])

    assert torch.equal(run(0), run(0))
    assert not torch.allclose(run(0), run(1))


def test_an_iterable_of_batches_is_cycled_in_order():
    X, y = _regression()
    seen = []
    parts = [(X[:50], y[:50]), (X[50:100], y[50:100])]

    def loss(model, batch):
        seen.append(int(batch[0][0, 0].item() == X[0, 0].item()))
        return _mse(model, batch)

    train(nn.Linear(3, 1), loss, parts, n_steps=5, progress=False)
    assert seen == [1, 0, 1, 0, 1]


def test_divergence_names_the_first_bad_step_with_few_read_backs(monkeypatch):
    """The losses come back to the host every ten steps, not twice a step."""
    X, y = _regression()
    reads = []
    real_cpu = torch.Tensor.cpu
    monkeypatch.setattr(
        torch.Tensor, "cpu", lambda t, *a, **k: reads.append(1) or real_cpu(t, *a, **k)
    )
    history = train(nn.Linear(3, 1), _mse, [(X, y)], n_steps=35, progress=False)
    assert len(history) == 35 and len(reads) == 5  # steps 0, 10, 20, 30 and 34
    calls = []

    def blows_up(model, batch):
        calls.append(1)
        scale = float("nan") if len(calls) == 14 else 1.0
        return _mse(model, batch) * scale

    with pytest.raises(ValueError, match="nan at step 13; lower the learning rate"):
        train(nn.Linear(3, 1), blows_up, [(X, y)], n_steps=35, progress=False)


def test_evaluating_scores_in_eval_mode_and_restores_each_submodules_mode():
    """Dropout off and batch norm on its running statistics inside the block (the
    output equals eval mode's, and no gradient is recorded); every submodule gets its
    own mode back, also when the block raises."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Dropout(0.9))
    x = torch.randn(16, 3)
    model.train()
    model(x)  # moves the running statistics away from their start
    model[2].eval()  # a mixed model: one submodule already in eval mode
    stats = model[1].running_mean.clone()
    with evaluating(model):
        inside = model(x)
        assert not inside.requires_grad
    torch.testing.assert_close(model[1].running_mean, stats)  # not updated
    assert [m.training for m in model] == [True, True, False] and model.training
    expected = nn.Sequential(*model).eval()(x).detach()
    model.train()
    torch.testing.assert_close(inside, expected, rtol=0, atol=0)
    with pytest.raises(RuntimeError), evaluating(model):
        raise RuntimeError("a scorer failed")
    assert all(m.training for m in model.modules())
    with evaluating(lambda t: 2 * t):  # any callable: gradients off, nothing else
        assert not torch.is_grad_enabled()


def test_seed_takes_numpy_integers_and_refuses_other_types_by_name():
    """Issue 52: ``seed=np.int64(3)`` raised torch's "an integer is required", and 1.5,
    "3" and True reached torch's RuntimeError without naming ``seed``."""

    def run(seed):
        model = nn.Sequential(nn.Dropout(0.5), nn.Linear(2, 1))  # draws from the seed
        with torch.no_grad():
            model[1].weight.fill_(0.5)
            model[1].bias.fill_(0.1)
        x = torch.ones(8, 2)
        return train(
            model, lambda m, b: m(b).pow(2).mean(), [x], n_steps=2, seed=seed,
            progress=False,
        )  # fmt: skip

    assert run(np.int64(3)) == run(3)
    for bad in (1.5, "3", True, -1, 2**64):
        with pytest.raises(ValueError, match="seed must be an integer"):
            run(bad)
