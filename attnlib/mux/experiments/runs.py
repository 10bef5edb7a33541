"""Chapter 08's trained experiments, one seed at a time, for the committed sweep.

The seed draws the training and test data and initialises every model, and each
function returns a flat dictionary of numbers. ``benchmarks/mux.py`` runs them over
seeds and writes ``attnlib/results/mux.json``; the chapter asserts its claims on the
medians and ranges, and ``tests/test_results.py`` recomputes one seed.

- :func:`reach_bound`: the least relative error, on white noise, of any model whose
  output j depends only on inputs within ``reach`` of j, for a linear target.
- :func:`equivariant_reach_bound`: the same floor for models that are also translation
  equivariant away from the borders (convolution stacks), which is higher.
- :func:`wide_stack_run`: a wide non-linear CNN (ReLUs, residuals) trained to apply
  the inverse Laplacian to white noise; its relative test error.
- :func:`routing_run`, :func:`pointer_run`, :func:`weekday_run`: the routing, pointer
  and weekday experiments of the chapter for one seed.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ...training import evaluating, to_device, train
from ...utils import as_float_array, check_int, device_or_cpu
from ...utils.boundary import checking, public, trusted
from ...utils.validation import SEED_MAX
from .. import AttentionRouter, ConvRouter, WeekdayMux, routing_task, weekday_task
from .routing import green_function, pointer_task
from .scores import accuracy_by_distance, pointer_loss, routing_loss

__all__ = [
    "reach_bound",
    "equivariant_reach_bound",
    "wide_stack_run",
    "routing_run",
    "pointer_run",
    "weekday_run",
    "LENGTH",
    "N_VALUES",
]

LENGTH, N_VALUES = 24, 6
# Adam's learning rate per model of the pointer task. The 12-layer CNN (residuals, no
# normalisation) does not leave chance at 1e-2: its loss stays at ln 6 on every seed.
POINTER_LR = {"CNN 12": 1e-3}


def reach_bound(target, reach: int) -> float:
    """A floor on the relative error of any model that sees ``reach`` inputs each side.

    The floor is ``‖target outside the band |i − j| ≤ reach‖_F / ‖target‖_F``. For
    white-noise inputs ``f`` (independent, mean 0, variance 1) and the linear map
    ``y = target @ f``, any model whose output j is a function of ``f[j - reach : j +
    reach + 1]`` alone, linear or not, has ``E‖out − y‖² ≥ Σ_{|i−j|>reach} target_ij²``:
    for Gaussian noise the best such output is the conditional mean, the in-band part
    of row j; the out-of-band part is independent of what the model sees. With
    ``E‖y‖² = ‖target‖_F²`` the ratio of the root mean squares is at least this bound.

    Parameters
    ----------
    target : array-like, shape (n, n)
        The linear map.
    reach : int
        How far each output sees, in positions (``L (k − 1) / 2`` for L layers of width
        k).

    Returns
    -------
    float
        The bound, in [0, 1].
    """
    target = as_float_array(target, "target")
    if target.ndim != 2 or target.shape[0] != target.shape[1]:
        raise ValueError(f"target must be a square matrix, got shape {target.shape}")
    reach = check_int(reach, "reach", minimum=0)
    n = len(target)
    outside = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) > reach
    return float(np.linalg.norm(target[outside]) / np.linalg.norm(target))


def equivariant_reach_bound(target, reach: int) -> float:
    """:func:`reach_bound` for models that apply one function at every interior output.

    A stack of zero-padded convolutions of reach ``reach`` computes, at every output j
    with ``reach <= j <= n - 1 - reach``, one and the same function of ``f[j - reach :
    j + reach + 1]``: no padding is within its view. On white noise these windows have
    the same distribution at every such j, so the best shared function is the mean
    ``k̄`` of the in-band rows of ``target`` there (a linear map), and each interior
    output pays ``‖band_j − k̄‖²`` on top of its out-of-band part. Outputs nearer the
    borders pay only the out-of-band part (they may tell where they are).

    Parameters
    ----------
    target : array-like, shape (n, n)
        The linear map.
    reach : int
        How far each output sees, in positions.

    Returns
    -------
    float
        The bound, in [0, 1]; at least :func:`reach_bound`.
    """
    target = as_float_array(target, "target")
    base = reach_bound(target, reach)
    reach, n = check_int(reach, "reach", minimum=0), len(target)
    interior = range(reach, n - reach)
    if len(interior) == 0:
        return base
    bands = np.array([target[j, j - reach : j + reach + 1] for j in interior])
    extra = ((bands - bands.mean(0)) ** 2).sum()
    total = (base * np.linalg.norm(target)) ** 2 + extra
    return float(np.sqrt(total) / np.linalg.norm(target))


def _fit(model, loss, batches, *, n_steps: int, lr: float, seed: int, device):
    """Train ``model`` on ``device`` by Adam as every run here does (seeded, silent).

    Called inside a run's ``trusted()`` block: the run checked ``n_steps`` and
    ``seed`` at its entrance, and its models, losses and tasks trust them.
    """
    train(
        model.to(device),
        loss,
        batches,
        n_steps=n_steps,
        lr=lr,
        seed=seed,
        device=device,
        progress=False,
    )
    return model


def _scored(model, *inputs):
    """``model(*inputs)`` in eval mode, without gradients (see ``evaluating``)."""
    with evaluating(model):
        return model(*inputs)


def _task_batches(task, seed: int, device, *args, **kwargs):
    """``step -> task(*args, seed=10⁵ (seed + 1) + step)`` on ``device``."""
    # Training data apart from the test data (drawn with ``seed``) and other seeds'.
    return lambda step: to_device(
        task(*args, seed=10**5 * (seed + 1) + step, **kwargs), device
    )


def _entrance(seed, n_steps) -> tuple[int, int]:
    """A run's seed and its steps, checked once at its entrance."""
    seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    return seed, check_int(n_steps, "n_steps")


@public
def wide_stack_run(
    seed: int,
    depth: int,
    *,
    width: int = 64,
    n: int = 24,
    n_steps: int = 400,
    device=None,
) -> float:
    """Relative test error of a wide non-linear CNN trained to apply G = L⁻¹.

    A :class:`attnlib.mux.ConvRouter` (``depth`` zero-padded convolutions of width 5
    with ReLUs and residuals, ``width`` channels, a linear read-out) is trained by Adam
    (lr 3e-3, batches of 64) on white-noise inputs ``f`` and targets ``G f``, with ``G``
    the Green's function; the error is ``‖out − G f‖ / ‖G f‖`` on 2 000 fresh inputs.

    Parameters
    ----------
    seed : int
        Seeds the training inputs, the test inputs and the initialisation.
    depth : int
        Number of convolutions (reach ``2 depth``).
    width, n, n_steps : int
        Channels, sequence length and Adam steps.
    device : torch.device or str, optional
        Where the data are built and the model trained (default CPU).

    Returns
    -------
    float
        The relative error.
    """
    if checking():
        seed, n_steps = _entrance(seed, n_steps)
        depth, width = check_int(depth, "depth"), check_int(width, "width")
        n = check_int(n, "n", minimum=2)
    device = device_or_cpu(device)
    with trusted():
        return _wide_stack(seed, depth, width, n, n_steps, device)


def _wide_stack(seed: int, depth: int, width: int, n: int, n_steps: int, device):
    """:func:`wide_stack_run` of checked arguments."""
    G = torch.as_tensor(green_function(n), dtype=torch.float32, device=device)
    scale = G.norm() / n**0.5  # targets of unit scale, so one lr suits every n

    def noise(count, s):
        g = torch.Generator().manual_seed(s)
        return torch.randn(count, n, 1, generator=g).to(device)

    def batch(step):
        f = noise(64, 10**6 * (seed + 1) + step)
        return f, (f[..., 0] @ G.T / scale)[..., None]

    torch.manual_seed(seed)
    model = ConvRouter(1, 1, kernel_size=5, depth=depth, width=width)
    loss = lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()  # noqa: E731
    _fit(model, loss, batch, n_steps=n_steps, lr=3e-3, seed=seed, device=device)
    f = noise(2000, seed)
    y = f[..., 0] @ G.T
    pred = _scored(model, f)[..., 0] * scale
    return float((pred - y).norm() / y.norm())


def _reach(model) -> int:
    """How far each output of ``model`` sees, in positions (attention: everything)."""
    return model.receptive_field // 2 if isinstance(model, ConvRouter) else LENGTH - 1


def _routers(seed: int, n_in: int, depths, width: int) -> dict:
    """CNNs of the given depths, then one attention layer, initialised from ``seed``."""
    torch.manual_seed(seed)
    models = {
        f"CNN {d}": ConvRouter(n_in, N_VALUES, kernel_size=5, depth=d, width=width)
        for d in depths
    }
    models["attention"] = AttentionRouter(n_in, N_VALUES, d_model=16)
    return models


@public
def routing_run(seed: int, *, n_steps: int = 250, device=None) -> dict:
    """The routing experiment for one seed: CNNs of 1, 2, 4 layers, one attention layer.

    Returns, per model, the accuracy within and beyond its reach (1 000 test
    sequences), and for the attention layer the share of test sequences whose every
    query puts its largest weight on the marked token.

    Parameters
    ----------
    seed : int
        Draws the training and test data and initialises every model.
    n_steps : int
        Adam steps per model.
    device : torch.device or str, optional
        Where the data are built and the models trained (default CPU).

    Returns
    -------
    dict
        The numbers above, one key each, as floats.
    """
    if checking():
        seed, n_steps = _entrance(seed, n_steps)
    device = device_or_cpu(device)
    with trusted():
        return _routing(seed, n_steps, device)


def _routing(seed: int, n_steps: int, device) -> dict:
    """:func:`routing_run` of checked arguments."""
    batches = _task_batches(routing_task, seed, device, 32, LENGTH, N_VALUES)
    models = _routers(seed, N_VALUES + 1, (1, 2, 4), width=24)
    test = to_device(routing_task(1000, LENGTH, N_VALUES, seed=seed), device)
    out = {}
    for name, m in models.items():
        _fit(
            m, routing_loss, batches, n_steps=n_steps, lr=1e-2, seed=seed, device=device
        )
        acc, reach = accuracy_by_distance(m, test), _reach(m)
        out[f"{name} within"] = float(acc[: reach + 1].mean())
        out[f"{name} beyond"] = (
            float(acc[reach + 1 :].mean()) if reach < LENGTH - 1 else float("nan")
        )
    with evaluating(models["attention"]):
        peaks = models["attention"].attend(test.x).weights.argmax(-1)
    out["attention peaks on marker"] = float(
        (peaks == test.marker[:, None]).all(-1).double().mean()
    )
    return out


def _pool_accuracy(values, target, reach: int) -> torch.Tensor:
    """Hits (float64) of naming the commonest value within ``reach`` of a position."""
    seen = F.one_hot(values, N_VALUES).double().transpose(1, 2)
    counts = F.conv1d(
        seen.reshape(-1, 1, LENGTH),
        torch.ones(1, 1, 2 * reach + 1, dtype=seen.dtype, device=values.device),
        padding=reach,
    )
    counts = counts.reshape(-1, N_VALUES, LENGTH).transpose(1, 2)
    return (counts.argmax(-1) == target).double()


def _pointer_scores(name: str, model, test, distance, values) -> dict:
    """A trained model's pointer_run numbers: hits, losses, a CNN's pool accuracy."""
    reach = _reach(model)
    logits = _scored(model, test.x)
    ce = F.cross_entropy(logits.transpose(1, 2), test.target, reduction="none")
    hit = (logits.argmax(-1) == test.target).double()
    inside = distance <= reach
    out = {
        f"{name} within": float(hit[inside].mean()),
        f"{name} overall": float(hit.mean()),
        f"{name} loss within": float(ce[inside].mean()),
    }
    if reach < LENGTH - 1:
        out[f"{name} beyond"] = float(hit[~inside].mean())
        out[f"{name} loss beyond"] = float(ce[~inside].mean())
    if isinstance(model, ConvRouter):
        pool = _pool_accuracy(values, test.target, reach)
        out[f"{name} pool within"] = float(pool[inside].mean())
    return out


@public
def pointer_run(seed: int, *, n_steps: int = 300, device=None) -> dict:
    """The pointer experiment for one seed: CNNs of 1, 2, 4, 12 layers, one attention.

    Returns, per model, the accuracy within and beyond its reach and overall, and the
    test cross-entropy within and beyond reach (chance is ``ln 6``); and ``pool`` ones:
    the accuracy, within each CNN's reach, of naming the most common value among the
    tokens the CNN sees (content-free pooling, no matching of labels).

    Parameters
    ----------
    seed : int
        Draws the training and test data and initialises every model.
    n_steps : int
        Adam steps per model.
    device : torch.device or str, optional
        Where the data are built and the models trained (default CPU).

    Returns
    -------
    dict
        The numbers above, one key each, as floats.
    """
    if checking():
        seed, n_steps = _entrance(seed, n_steps)
    device = device_or_cpu(device)
    with trusted():
        return _pointer(seed, n_steps, device)


def _pointer(seed: int, n_steps: int, device) -> dict:
    """:func:`pointer_run` of checked arguments."""
    n_in = 2 * LENGTH + N_VALUES
    batches = _task_batches(pointer_task, seed, device, 32, LENGTH, N_VALUES)
    models = _routers(seed, n_in, (1, 2, 4, 12), width=32)
    test = to_device(pointer_task(1000, LENGTH, N_VALUES, seed=seed), device)
    distance = (torch.arange(LENGTH, device=device) - test.source).abs()
    values = test.x[..., 2 * LENGTH :].argmax(-1)
    out = {}
    for name, m in models.items():
        lr = POINTER_LR.get(name, 1e-2)
        _fit(m, pointer_loss, batches, n_steps=n_steps, lr=lr, seed=seed, device=device)
        out.update(_pointer_scores(name, m, test, distance, values))
    return out


@public
def weekday_run(
    seed: int, *, n_friends: int = 7, n_steps: int = 200, device=None
) -> dict:
    """The weekday multiplexer trained three ways for one seed.

    Returns the test accuracy (1 000 examples) of the softmax, straight-through and
    hard-argmax multiplexers, whether each one's query map ``Q`` moved in training,
    and whether its bilinear form recovers the rota. The three start from the same
    initialisation and see the same batches: the hard argmax and the straight-through
    model have the same forward pass and differ only in the gradient the scores get.

    Parameters
    ----------
    seed : int
        Draws the training and test data and initialises every model.
    n_friends : int
        Friends, and days in the week: how many inputs the multiplexer chooses among.
    n_steps : int
        Adam steps per model.
    device : torch.device or str, optional
        Where the data are built and the models trained (default CPU).

    Returns
    -------
    dict
        The numbers above, one key each, as floats.
    """
    if checking():
        seed, n_steps = _entrance(seed, n_steps)
        n_friends = check_int(n_friends, "n_friends", minimum=2)
    device = device_or_cpu(device)
    with trusted():
        return _weekday(seed, n_friends, n_steps, device)


def _weekday(seed: int, n_friends: int, n_steps: int, device) -> dict:
    """:func:`weekday_run` of checked arguments."""
    rota = weekday_task(1, n_friends, seed=seed).rota
    batches = _task_batches(weekday_task, seed, device, 64, n_friends, rota=rota)
    loss = lambda m, b: F.cross_entropy(m(b.friends, b.day), b.target)  # noqa: E731
    test = to_device(weekday_task(1000, n_friends, seed=seed + 1, rota=rota), device)
    out = {}
    for name in ("softmax", "straight_through", "hardmax"):
        torch.manual_seed(seed)
        m = WeekdayMux(n_friends, normalizer=name).to(device)
        q0 = m.Q.weight.detach().clone()
        _fit(m, loss, batches, n_steps=n_steps, lr=3e-2, seed=seed, device=device)
        pred = _scored(m, test.friends, test.day).argmax(-1)
        out[f"{name} accuracy"] = float((pred == test.target).double().mean())
        out[f"{name} Q moved"] = float(not torch.equal(q0, m.Q.weight.detach()))
        out[f"{name} rota"] = float(
            torch.equal(m.bilinear_form().detach()[:, :n_friends].argmax(1).cpu(), rota)
        )
    return out
