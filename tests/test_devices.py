"""Device discipline, checked on the CPU with a simulated CUDA device.

tests/simulated_cuda.py makes ``cuda:0`` exist on every machine: tensors there are CPU
tensors tagged as CUDA's, and mixing them with CPU tensors raises CUDA's error. Every
check here would fail on code that moves a model behind the caller's back or builds a
target on the CPU beside a prediction on the caller's device (the four chapter crashes
and the twelve test failures of issue 29 all did).
"""

import inspect
import re

import numpy as np
import pytest
import torch
from simulated_cuda import SimulatedCuda, is_simulated_cuda
from torch import nn

from attnlib.training import train
from attnlib.utils import device_or_cpu, get_device

CUDA = torch.device("cuda", 0)


@pytest.fixture
def cuda():
    with SimulatedCuda():
        yield get_device()


# -- device=None: the CPU, even where an accelerator is present --


def test_device_or_cpu_keeps_none_on_the_cpu_even_with_cuda_present(cuda):
    assert get_device() == cuda and device_or_cpu(None) == torch.device("cpu")
    assert device_or_cpu() == torch.device("cpu")
    assert device_or_cpu("cuda") == torch.device("cuda")
    assert device_or_cpu("cuda:1") == torch.device("cuda", 1)  # named, not checked
    assert device_or_cpu(cuda) is cuda
    for bad in ("no-such-device", 0.5, True, ["cpu"]):
        with pytest.raises(ValueError, match="device must be a device name"):
            device_or_cpu(bad)


# -- the guard itself: it catches what CUDA would refuse, and lets the rest compute --


def test_guard_refuses_what_cuda_refuses(cuda):
    assert cuda.type == "cuda"
    a, b = torch.randn(3, device=cuda), torch.randn(3)
    assert a.device == CUDA and a.is_cuda and is_simulated_cuda(a * 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        b[a.argsort()]  # CUDA indices into a CPU tensor
    with pytest.raises(TypeError, match="numpy"):
        a.numpy()
    with pytest.raises(TypeError, match="numpy"):
        np.asarray(a)
    model = nn.Linear(3, 2).to(cuda)
    with pytest.raises(RuntimeError, match="same device"):
        model(torch.randn(4, 3))


def test_guard_allows_what_cuda_allows(cuda):
    a, b = torch.randn(3, device=cuda), torch.randn(3)
    assert is_simulated_cuda(a + torch.tensor(1.0))  # a CPU scalar joins
    assert is_simulated_cuda(a[b.argsort()])  # CPU indices into a CUDA tensor
    assert not is_simulated_cuda(a.cpu()) and a.cpu().device.type == "cpu"
    assert is_simulated_cuda(b.to(a)) and is_simulated_cuda(b.cuda())
    assert is_simulated_cuda(torch.zeros(2, device=a.device))
    assert is_simulated_cuda(torch.zeros_like(a)) and is_simulated_cuda(a[1:])
    torch.testing.assert_close(a.cpu() * 2, (a * 2).cpu())  # it really computes


def test_guard_follows_autograd_and_optimisers(cuda):
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1)).to(cuda)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    x = torch.randn(16, 3, device=cuda)
    for _ in range(3):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert all(is_simulated_cuda(p.grad) for p in model.parameters())
    assert all(is_simulated_cuda(p) for p in model.parameters())
    assert np.isfinite(loss.item())


# -- train(): the model stays where the caller put it (the twelve failures' cause) --


def _regression(device="cpu"):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, generator=g)
    return x.to(device), (x @ torch.tensor([1.0, -2.0, 0.5]))[:, None].to(device)


def _mse(model, batch):
    return ((model(batch[0]) - batch[1]) ** 2).mean()


def test_train_keeps_a_cpu_model_on_the_cpu_when_cuda_is_present(cuda):
    """Issue 29's twelve failures: train() sent the model to get_device() (CUDA)
    while the caller's data and evaluation stayed on the CPU."""
    model, (x, y) = nn.Linear(3, 1), _regression()
    history = train(model, _mse, [(x, y)], n_steps=20, lr=0.1, progress=False)
    assert not any(is_simulated_cuda(p) for p in model.parameters())
    assert history[-1] < history[0]
    assert _mse(model, (x, y)).item() == pytest.approx(history[-1], rel=0.5)


def test_train_moves_batches_to_the_model(cuda):
    model, batch = nn.Linear(3, 1).to(cuda), _regression()
    history = train(model, _mse, [batch], n_steps=20, lr=0.1, progress=False)
    assert all(is_simulated_cuda(p) for p in model.parameters())
    assert history[-1] < history[0]
    with pytest.raises(ValueError, match="does not move the model"):
        train(model, _mse, [batch], n_steps=1, device="cpu", progress=False)


def test_train_same_losses_on_both_devices(cuda):
    """Same data, same start: the simulated device gives the CPU's numbers, so a
    chapter's claims cannot depend on which device the guard ran."""
    torch.manual_seed(0)
    cpu_model = nn.Linear(3, 1)
    cuda_model = nn.Linear(3, 1)
    cuda_model.load_state_dict(cpu_model.state_dict())
    cuda_model.to(cuda)
    kw = dict(n_steps=10, lr=0.1, progress=False)
    on_cpu = train(cpu_model, _mse, [_regression()], **kw)
    on_cuda = train(cuda_model, _mse, [_regression()], **kw)
    np.testing.assert_allclose(on_cuda, on_cpu, rtol=1e-6)


# -- the four chapter crash sites of issue 29 --


def test_translation_pairs_take_indices_from_the_model_device(cuda):
    """Chapter 01: a batch of indices moved to the model's device by train()."""
    from attnlib import attention
    from attnlib.data import shuffled_translation

    for where in ("cpu", cuda):  # the chapter's device (indices are drawn on the CPU)
        pairs = shuffled_translation(100, length=6, dim=16, seed=0, device=where)
        model = nn.Linear(16, 16, bias=False).to(where)

        def loss(m, idx, pairs=pairs):
            d = pairs.take(idx)
            wanted = torch.gather(d.tgt, 1, d.perm[..., None].expand_as(d.tgt))
            return ((attention(m(d.src), d.tgt, d.tgt).output - wanted) ** 2).mean()

        draws = torch.Generator().manual_seed(0)
        batches = [torch.randint(0, 100, (8,), generator=draws) for _ in range(3)]
        history = train(model, loss, batches, n_steps=3, progress=False)
        assert len(history) == 3 and np.isfinite(history).all()
    moved = shuffled_translation(10, seed=3, device=cuda)
    torch.testing.assert_close(moved.src.cpu(), shuffled_translation(10, seed=3).src)


def test_symmetry_sample_efficiency_on_a_device(cuda):
    """Chapter 06: relative_error, reached from sample_efficiency -> fit_and_score."""
    from attnlib.symmetry.experiments import relative_error, sample_efficiency

    kw = dict(
        learners=("MLP", "KnowledgeAttention", "MultiHeadAttention"),
        grid={"lr": (1e-2,), "weight_decay": (0.0,), "n_steps": (3,)},
        n_test=8,
        test_lengths=(6,),
        progress=False,
    )
    rows = sample_efficiency([16], [0], device=cuda, **kw)
    assert len(rows) == 3 and all(np.isfinite(r["test_n6"]) for r in rows)
    model = nn.Linear(4, 4).to(cuda)
    x = torch.randn(2, 5, 4, device=cuda)  # a CPU target beside a CUDA prediction
    assert np.isfinite(relative_error(model, x, torch.randn(2, 5, 4)))


def test_classify_accuracy_with_the_model_on_a_device(cuda):
    """Chapter 07b: labels on the CPU, logits on the model's device."""
    from attnlib.continuous.experiments.classify import accuracy, fit_classifier

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x):
            return (self.lin(x),)

    model = Head().to(cuda)
    x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
    fit_classifier(model.to(cuda), x.to(cuda), y, n_steps=2, progress=False)
    fit_classifier(model, x, y, n_steps=2, progress=False)
    assert 0 <= accuracy(model, x, y) <= 1
    assert accuracy(model, x.to(cuda), y) == accuracy(model, x, y.to(cuda))


def test_routing_cells_with_models_on_a_device(cuda):
    """Chapter 08's routing section: models on the device, tasks built there or not."""
    from attnlib.mux import AttentionRouter, ConvRouter, routing_task
    from attnlib.mux.experiments.routing import pointer_task
    from attnlib.mux.experiments.scores import (
        accuracy_by_distance,
        accuracy_by_offset,
        pointer_loss,
        routing_loss,
    )

    for where in (None, cuda):
        m = AttentionRouter(5, 4, d_model=8).to(cuda)
        batches = lambda s: routing_task(8, 12, 4, seed=s)  # noqa: E731
        train(m, routing_loss, batches, n_steps=2, progress=False)
        test = routing_task(20, 12, 4, seed=1)
        assert accuracy_by_distance(m, test).shape == (12,)
        n_in = 2 * 12 + 4
        c = ConvRouter(n_in, 4, kernel_size=5, depth=1, width=8).to(cuda)
        ptr = pointer_task(16, 12, 4, seed=0, device=where)
        train(c, pointer_loss, [ptr], n_steps=2, progress=False)
        assert accuracy_by_offset(c, ptr).shape == (12,)
        with torch.no_grad():
            pred = c(ptr.x).argmax(-1)
        assert 0 <= (pred == ptr.target.to(pred.device)).float().mean().item() <= 1


# -- every experiment function with a device= builds on it, and trains there --


def test_generators_build_on_the_device_and_agree_with_the_cpu(cuda):
    from attnlib.continuous.experiments.alignment import monotone_alignment
    from attnlib.continuous.experiments.digits import cluttered_digits
    from attnlib.continuous.experiments.documents import span_documents
    from attnlib.mux.experiments.routing import pointer_task
    from attnlib.subspace.experiments import sparse_combination_batch

    makers = [
        lambda device: monotone_alignment(4, seed=1, device=device),
        lambda device: cluttered_digits(3, seed=1, device=device),
        lambda device: span_documents(3, 64, span=8, seed=1, device=device),
        lambda device: pointer_task(3, 8, 4, seed=1, device=device),
        lambda device: sparse_combination_batch(1, size=3, device=device),
    ]
    for make in makers:
        here, there = make(None), make(cuda)
        for a, b in zip(here, there):
            if isinstance(a, torch.Tensor):
                assert is_simulated_cuda(b) and not is_simulated_cuda(a)
                torch.testing.assert_close(b.cpu(), a)


def test_experiment_fits_on_a_device(cuda):
    from attnlib.continuous.experiments.alignment import (
        AlignmentModel,
        alignment_accuracy,
        fit_alignment,
        monotone_alignment,
    )
    from attnlib.subspace.experiments import (
        fit_learned_ista,
        fit_self_expressive_net,
        normalized_self_expression,
    )

    X = np.random.default_rng(0).normal(size=(12, 5))
    net, losses = fit_self_expressive_net(X, n_steps=2, device=cuda)
    assert all(is_simulated_cuda(p) for p in net.parameters()) and len(losses) == 2
    lista, _ = fit_learned_ista(X, n_steps=2, device=cuda)
    assert all(is_simulated_cuda(p) for p in lista.parameters())
    C = normalized_self_expression(X, n_steps=2, device=cuda)
    np.testing.assert_allclose(C, normalized_self_expression(X, n_steps=2), atol=1e-6)
    task = monotone_alignment(8, seed=0)
    for kind in ("discrete", "continuous"):
        model = AlignmentModel(20, 16, 8, kind, dim=8, n_basis=8).to(cuda)
        fit_alignment(model, task, n_steps=2, batch=4, progress=False)
        assert 0 <= alignment_accuracy(model, task) <= 1


# -- attention() validates on the device: no synchronisation on valid input --

_SYNCS = {
    "__bool__",
    "item",
    "tolist",
    "__float__",
    "__int__",
    "__index__",
    "nonzero",
    "numpy",
    "__array__",
    "masked_select",
    "unique",
    "__repr__",
    "__format__",
}


class _CountSyncs(torch.overrides.TorchFunctionMode):
    """Count the calls that copy a (simulated) CUDA tensor's values to the host."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _SYNCS and any(is_simulated_cuda(a) for a in args):
            self.calls.append(name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("normalizer", ["softmax", "sparsemax", "entmax"])
def test_attention_on_a_device_does_not_synchronise(cuda, normalizer):
    from attnlib import attention

    q, k, v = (torch.randn(2, 5, 4, device=cuda, requires_grad=True) for _ in range(3))
    mask = torch.rand(2, 5, 5, device=cuda) > 0.3
    mask[..., 0] = True
    with _CountSyncs() as counter:
        out = attention(q, k, v, mask=mask, normalizer=normalizer)
        out.output.sum().backward()
    assert counter.calls == [], counter.calls
    assert is_simulated_cuda(out.output) and is_simulated_cuda(q.grad)
    # the counter counts: the same checks on the host side read values back
    with _CountSyncs() as counter:
        bool(out.output.sum() > 0)
    assert counter.calls == ["__bool__"]


def test_attention_on_a_device_still_rejects_bad_input(cuda):
    from attnlib import attention

    q = torch.randn(5, 4, device=cuda)
    bad = q.clone()
    bad[0, 0] = float("nan")
    with pytest.raises((ValueError, RuntimeError), match="q contains NaN"):
        attention(bad, q, q)
    # A fully masked row is not bad input (issue 38): zeros, as SDPA gives.
    empty = attention(q, q, q, mask=torch.zeros(5, 5, dtype=torch.bool, device=cuda))
    assert (empty.weights == 0).all() and (empty.output == 0).all()
    huge = torch.full((5, 4), 1e30, device=cuda)
    with pytest.raises((ValueError, RuntimeError), match="score"):
        attention(huge, huge, huge)


# -- sparsemax and entmax off the CPU: the sort-based engine, exact to the package --


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scale", [1, 10])
@pytest.mark.parametrize("shape", [(64, 256), (512, 64), (8, 3, 33)])
def test_engine_matches_the_entmax_package(cuda, dtype, scale, shape):
    """What sparsemax/entmax dispatch to on CUDA (normalizers._entmax), run on the
    CPU under the simulated device, against the entmax package on the CPU."""
    entmax_pkg = pytest.importorskip("entmax")
    from attnlib.normalizers import entmax, sparsemax

    g = torch.Generator().manual_seed(scale)
    x = (scale * torch.randn(shape, generator=g)).to(dtype)
    ref_x = x.float()
    atol = 1e-6 if dtype == torch.float32 else 8e-3  # bfloat16's own rounding of p
    pairs = [
        (sparsemax(x.to(cuda)), entmax_pkg.sparsemax(ref_x, -1)),
        (entmax(x.to(cuda), 1.5), entmax_pkg.entmax15(ref_x, -1)),
        (entmax(x.to(cuda), 1.3), entmax_pkg.entmax_bisect(ref_x, 1.3, -1, n_iter=60)),
        (entmax(x.to(cuda), 1.5, dim=0), entmax_pkg.entmax15(ref_x, 0)),
    ]
    for ours, ref in pairs:
        assert is_simulated_cuda(ours) and ours.dtype == dtype
        torch.testing.assert_close(ours.cpu().float(), ref, atol=atol, rtol=0)


def test_engine_masks_and_gradients(cuda):
    from attnlib.normalizers import entmax, sparsemax

    x = torch.randn(6, 9, dtype=torch.float64)
    x[:, 4:] = -torch.inf  # masked keys
    x[0, 1:] = -torch.inf  # a row with one key
    for fn in (sparsemax, lambda t: entmax(t, 1.5), lambda t: entmax(t, 1.25)):
        torch.testing.assert_close(fn(x.to(cuda)).cpu(), fn(x), atol=1e-12, rtol=0)
    for alpha in (2.0, 1.5, 1.25, 3.0):
        xg = torch.randn(4, 7, dtype=torch.float64, device=cuda, requires_grad=True)
        # check_undefined_grad: autograd materialises zeros on the real (CPU) device,
        # which the simulation cannot tag; CUDA materialises them on CUDA.
        assert torch.autograd.gradcheck(
            lambda t, a=alpha: entmax(t, a),
            (xg,),
            check_undefined_grad=False,
            fast_mode=True,  # a random projection: 2 calls of the engine, not 2 n
        )
    a = torch.full((4, 1), 1.4, dtype=torch.float64, device=cuda, requires_grad=True)
    xg = torch.randn(4, 7, dtype=torch.float64, device=cuda, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t, al: entmax(t, al), (xg, a), check_undefined_grad=False, fast_mode=True
    )


# -- every public callable of the battery, its valid call with tensors on the device --

#: Specs that build a module on the CPU inside the call and feed it the device's input:
#: the caller's mix, refused as nn.Linear refuses it (KnowledgeAttention reads its
#: input where it is, like PyTorch's own layers).
CALLER_MIX = {"symmetry.KnowledgeAttention"}


def _battery_specs():
    import test_battery

    return test_battery.SPECS


@pytest.mark.filterwarnings("ignore")
def test_every_public_callable_runs_on_a_device():
    """The battery's valid baseline of every public callable (tests/test_battery.py),
    with its tensor arguments moved to the simulated device and ``device="cuda"``
    where it takes one: no device mixing inside (issue 29 found conv_matrix, hardmax,
    RidgeBaseline.fit and LearnedISTACodes building CPU tensors beside their inputs; a
    GPU run found baseline_run training a CPU model with ``device="cuda"``)."""
    mixed = []
    for name, spec in _battery_specs().items():
        args = spec.args()
        with SimulatedCuda():
            moved = {
                k: v.to("cuda") if isinstance(v, torch.Tensor) else v
                for k, v in args.items()
            }
            if _takes_device(spec.call) and "device" not in moved:
                moved["device"] = "cuda"  # as a chapter's setup cell passes it on
            try:
                spec.call(**moved)
            except (RuntimeError, ValueError) as err:
                if re.search("same device|but the model is on", str(err)):
                    mixed.append(name)
    assert sorted(mixed) == sorted(CALLER_MIX)


@pytest.mark.filterwarnings("ignore")
def test_every_experiment_run_trains_on_a_device():
    """The experiment runs (the battery walks none: tests/test_validate_once.py lists
    them), one step each with ``device="cuda"`` where they take one: their data, models
    and metrics are built there (issue 29's GPU run found baseline_run training a CPU
    model with ``device="cuda"``)."""
    from test_validate_once import RUNS

    ran = []
    for name, run in RUNS.items():
        if _takes_device(run.fn):
            args = run.args() | (run.steps(1) if run.steps else {})
            with SimulatedCuda():
                run.fn(**args, device="cuda")
            ran.append(name)
    assert len(ran) >= 8, ran


def _takes_device(fn) -> bool:
    try:
        return "device" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def test_check_on_device_raises_at_once_on_the_cpu_and_asserts_elsewhere():
    from attnlib.utils import check_on_device

    check_on_device(torch.tensor(False), "never")
    with pytest.raises(ValueError, match="x is bad"):
        check_on_device(torch.tensor(True), "x is bad")
    with SimulatedCuda():
        check_on_device(torch.tensor(False, device="cuda"), "never")
        # torch._assert_async: at once on this CPU, at the next synchronisation on CUDA
        with pytest.raises(RuntimeError, match="x is bad"):
            check_on_device(torch.tensor(True, device="cuda"), "x is bad")


def test_captioned_images_take_indices_from_any_device(cuda):
    """Chapter 01's grounding: indices moved to the model's device by train() select
    NumPy images (on the host) and tensors (wherever they live)."""
    from attnlib.data import captioned_images

    scenes = captioned_images(6, n_objects=2, seed=0)
    idx = torch.tensor([4, 1])
    here = scenes.take(idx)
    there = scenes.take(idx.to(cuda))
    np.testing.assert_array_equal(there.images, here.images)
    torch.testing.assert_close(there.region_features, here.region_features)
