"""The one small training loop that every chapter which trains shares."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from itertools import cycle

import torch
from torch import nn
from tqdm import tqdm

from .errors import TrainingDivergedError
from .utils import check_int, check_positive, get_device
from .utils.boundary import checking, public
from .utils.validation import SEED_MAX

__all__ = ["train", "evaluating", "to_device", "PROGRESS_ENV"]

#: Set this environment variable to ``summary`` to replace the live progress bar by
#: tqdm's final line, printed once (the Makefile's default: a test run's log shows it),
#: or to ``off`` to show nothing: ``make book`` builds the pages so, where a bar
#: would be a grey box of plumbing. Unset (Jupyter, Colab), the live bar shows.
PROGRESS_ENV = "ATTNLIB_PROGRESS"


@public
def to_device(batch, device):
    """Move a tensor, or a tuple/list/dict of tensors, to ``device``.

    Parameters
    ----------
    batch : object
        A tensor, or a tuple, list, dict or NamedTuple of them (nested); entries that
        are not tensors are returned unchanged.
    device : str or torch.device, optional
        Where to; ``None`` leaves tensors where they are.

    Returns
    -------
    object
        ``batch`` with every tensor on ``device``, in the same container types.
    """
    if checking() and device is not None and not isinstance(device, torch.device):
        device = get_device(device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device(x, device) for key, x in batch.items()}
    if isinstance(batch, tuple) and hasattr(
        batch, "_fields"
    ):  # a NamedTuple takes its fields positionally
        return type(batch)(*(to_device(x, device) for x in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(x, device) for x in batch)
    return batch


@contextlib.contextmanager
def evaluating(model):
    """Score ``model`` in the block: eval mode and no gradients, its modes restored.

    Every scorer of a trained model uses it, so that dropout is off and batch norm uses
    its running statistics while scoring, and each submodule is handed back in the mode
    it was in (also when the block raises).

    Parameters
    ----------
    model : nn.Module or callable
        A module is put in eval mode for the block; any other callable is left as it
        is (gradients are off for both).

    Yields
    ------
    None
    """
    modes = (
        [(m, m.training) for m in model.modules()]
        if isinstance(model, nn.Module)
        else []
    )
    if modes:
        model.eval()  # a module's own train() override, if any, still runs
    try:
        with torch.no_grad():
            yield
    finally:
        for m, mode in modes:
            m.training = mode


def _model_device(model: nn.Module, device) -> torch.device:
    """The device the batches go to: ``device``, which must be the model's, or the
    model's own (the CPU for a model without parameters or buffers)."""
    tensors = [*model.parameters(), *model.buffers()]
    own = {t.device for t in tensors}
    if len(own) > 1:
        raise ValueError(
            f"model has parameters on several devices {sorted(map(str, own))}; "
            "move it to one with model.to(device)"
        )
    if device is None:
        return own.pop() if own else torch.device("cpu")
    device = get_device(device)
    if own and not any(_same_device(device, d) for d in own):
        raise ValueError(
            f"device={str(device)!r} but the model is on {own.pop()}: train() does not "
            "move the model; call model.to(device) first"
        )
    return device


def _same_device(a: torch.device, b: torch.device) -> bool:
    index = lambda d: 0 if d.index is None else d.index  # noqa: E731
    return a.type == b.type and (a.type == "cpu" or index(a) == index(b))


#: Steps between two read-backs of the losses (and checks that they are finite).
_READ_EVERY = 10


def train(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, object], torch.Tensor],
    batches: Callable[[int], object] | Iterable,
    *,
    n_steps: int,
    lr: float = 1e-2,
    weight_decay: float = 0.0,
    optimizer: type[torch.optim.Optimizer] = torch.optim.Adam,
    clip_grad_norm: float | None = None,
    seed: int | None = 0,
    device: torch.device | str | None = None,
    progress: bool = True,
    desc: str = "training",
) -> list[float]:
    """Train ``model`` for ``n_steps`` optimiser steps; return the loss of every step.

    Parameters
    ----------
    model : nn.Module
        Trained where it is (PyTorch's convention: the caller places it, e.g.
        ``model.to(device)``); left in training mode.
    loss_fn : callable
        ``loss_fn(model, batch)`` returns a scalar loss.
    batches : callable or iterable
        Either ``batches(step)`` returning a batch (a fresh sample per step, for
        generated tasks), or an iterable of batches cycled through (a DataLoader, a
        list, or a single full batch in a one-element list).
    n_steps : int
        Number of optimiser steps.
    lr, weight_decay : float
        Learning rate and weight decay of the optimiser. With the default Adam the decay
        is added to the gradient (an L2 penalty ``weight_decay/2 · ‖θ‖²``, coupled to
        the adaptive step); pass ``optimizer=torch.optim.AdamW`` for decoupled decay.
    optimizer : torch.optim.Optimizer subclass
        Adam by default.
    clip_grad_norm : float, optional
        Clip the gradient's global norm to this value.
    seed : int, optional
        Seeds PyTorch's global generators (the CPU's and the model's GPU's) for the
        training, which draws its batches and dropout from them, and restores them
        afterwards: the caller's random stream is where it was before the call. None
        trains on the global generators as they are.
    device : str or torch.device, optional
        Where each batch is moved before ``loss_fn`` sees it; defaults to the device of
        the model's first parameter or buffer (the CPU for a model without any). The
        model itself is never moved: a ``device`` other than the model's raises.
    progress : bool
        Show a tqdm progress bar with the running loss (or, when the environment
        variable ``ATTNLIB_PROGRESS`` is ``summary``, only its final line; when it is
        ``off``, nothing).
    desc : str
        The progress bar's label.

    Returns
    -------
    list of float
        The training loss at every step.

    Raises
    ------
    TrainingDivergedError
        A ``ValueError`` naming ``lr`` and the first step whose loss was NaN or
        infinite. The losses are read back every ten steps (so that a GPU is not
        synchronised with the host on every step), so the model may have taken up to
        nine more steps by then.
    """
    # train runs the caller's model and loss, so it is not public (boundary): its
    # checks are skipped only where an experiment run, which checked its options at its
    # entrance, calls it with its own models and losses inside trusted().
    if checking():
        if not isinstance(model, nn.Module):
            raise ValueError(
                f"model must be a torch.nn.Module, got {type(model).__name__}"
            )
        if not callable(loss_fn):
            raise ValueError(f"loss_fn must be callable, got {loss_fn!r}")
        if not callable(batches) and not isinstance(batches, Iterable):
            raise ValueError(
                "batches must be a function of the step or an iterable, got "
                f"{type(batches).__name__}"
            )
        n_steps = check_int(n_steps, "n_steps")
        if seed is not None:  # NumPy integers too; True, 1.5 and "3" refused by name
            seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
        lr = check_positive(lr, "lr")
        weight_decay = check_positive(weight_decay, "weight_decay", allow_zero=True)
        if clip_grad_norm is not None:
            clip_grad_norm = check_positive(clip_grad_norm, "clip_grad_norm")
    device = _model_device(model, device)
    model.train()
    opt = optimizer(model.parameters(), lr=lr, weight_decay=weight_decay)
    if callable(batches):
        next_batch = batches
    else:
        stream = cycle(batches)
        next_batch = lambda step: next(stream)  # noqa: E731
    mode = os.environ.get(PROGRESS_ENV)
    progress = progress and mode != "off"
    summary_only = mode == "summary"
    bar = tqdm(
        range(n_steps), desc=desc, disable=not progress or summary_only, mininterval=0.5
    )
    start = time.perf_counter()
    with _seeded(seed, device):
        history = _steps(model, loss_fn, next_batch, opt, bar, device, clip_grad_norm)
    if progress and summary_only:
        elapsed = time.perf_counter() - start
        print(
            tqdm.format_meter(
                n_steps,
                n_steps,
                elapsed,
                prefix=desc,
                postfix=f"loss={history[-1]:.4g}",
            )
        )
    return history


@contextlib.contextmanager
def _seeded(seed: int | None, device: torch.device):
    """PyTorch's global generators seeded for the block, and restored after it.

    The draws inside (batches sampled by ``batches(step)``, dropout) come from the
    global generators, as they would in a user's own loop, so a seed gives the same
    run as ``torch.manual_seed(seed)`` before it; restoring them afterwards leaves the
    caller's random stream where it was. Only the CPU's generator and the model's
    CUDA device's are seeded and restored (``torch.manual_seed`` would seed every
    GPU's and leave them changed).
    """
    if seed is None:
        yield
        return
    # A CPU build (CUDA simulated in the tests) has no CUDA generator to fork.
    real_cuda = device.type == "cuda" and torch.backends.cuda.is_built()
    cuda = [device.index or 0] if real_cuda else []
    with torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(seed)
        for index in cuda:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)
        yield


def _steps(model, loss_fn, next_batch, opt, bar, device, clip_grad_norm) -> list:
    """The optimiser steps of :func:`train`, its inputs checked; the loss history."""
    history: list[float] = []
    losses: list[torch.Tensor] = []  # on the model's device until read back
    for step in bar:
        batch = to_device(next_batch(step), device)
        loss = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip_grad_norm is not None:  # the clipped gradient is the one stepped on
            nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
        opt.step()
        losses.append(loss.detach())
        if step % _READ_EVERY == 0 or step == bar.total - 1:
            # One read-back (a host synchronisation on a GPU) per _READ_EVERY steps.
            recent = torch.stack(losses[len(history) :]).double().cpu()
            bad = (~torch.isfinite(recent)).nonzero()
            if len(bad):
                first = len(history) + int(bad[0, 0])
                raise TrainingDivergedError(
                    f"the loss became {recent[bad[0, 0]].item()} at step {first}; "
                    f"lower the learning rate lr={opt.defaults['lr']}"
                )
            history.extend(recent.tolist())
            bar.set_postfix(loss=f"{history[-1]:.4g}", refresh=False)
    return history
