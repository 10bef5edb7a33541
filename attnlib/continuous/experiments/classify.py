"""Training and scoring the small classifiers of the chapters' experiments.

A model's first output is its logits; its inputs are one tensor or a tuple of tensors
that are batched together (e.g. documents and, for an oracle control, where their label
sits).
"""

from __future__ import annotations

import torch
from torch import nn

from ...training import evaluating, to_device, train
from ...utils import check_int
from ._inputs import _row_batches

__all__ = ["accuracy", "fit_classifier"]


def _rows(inputs, idx):
    """The rows ``idx`` of one tensor, or of each tensor of a tuple, as model arguments.

    Returned as a tuple.
    """
    if isinstance(inputs, tuple):
        return tuple(x[idx] for x in inputs)
    return (inputs[idx],)


def _length(inputs) -> int:
    return len(inputs[0]) if isinstance(inputs, tuple) else len(inputs)


def _checked(model, inputs, labels):
    """``inputs`` as tensors (a tuple stays a tuple) and ``labels`` as a long tensor.

    Floating inputs must have the model's dtype (as the model's layers require, but with
    an error naming ``inputs``); integer inputs (token ids) pass as they are.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    param = next(model.parameters(), None)
    tensors = []
    for x in inputs if isinstance(inputs, tuple) else (inputs,):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(
                f"inputs must be a tensor or a tuple of tensors, got {type(x).__name__}"
            ) from err
        if x.ndim == 0 or len(x) == 0:
            raise ValueError(f"inputs must hold at least one row, got {tuple(x.shape)}")
        if x.is_floating_point():
            if not torch.isfinite(x).all():
                raise ValueError("inputs contains NaN or infinite values")
            if param is not None and x.dtype != param.dtype:
                raise ValueError(
                    f"inputs must have the model's dtype {param.dtype}, got {x.dtype}"
                )
        elif not any(isinstance(m, nn.Embedding) for m in model.modules()):
            raise ValueError(
                f"inputs holds integers ({x.dtype}) but the model has no embedding "
                "to read token ids; pass floating features"
            )
        tensors.append(x)
    n = len(tensors[0])
    if any(len(x) != n for x in tensors):
        raise ValueError("inputs must all have the same number of rows")
    inputs = tuple(tensors) if isinstance(inputs, tuple) else tensors[0]
    return inputs, _checked_labels(labels, n)


def _checked_labels(labels, n: int) -> torch.Tensor:
    """``labels`` as ``n`` non-negative integer class indices, a tensor."""
    try:
        labels = torch.as_tensor(labels)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"labels must be class indices, got {labels!r}") from err
    if (
        labels.is_floating_point()
        or labels.dtype == torch.bool
        or labels.shape != (n,)
        or (labels < 0).any()
    ):
        raise ValueError(
            f"labels must be {n} non-negative integer class indices, one per row of "
            f"inputs, got {labels.dtype} of shape {tuple(labels.shape)}"
        )
    return labels


def _check_classes(logits: torch.Tensor, top: int) -> None:
    """Refuse a largest label ``top`` (read once, before the loop) beyond the logits."""
    if top >= logits.shape[-1]:
        raise ValueError(
            f"labels must be below the model's {logits.shape[-1]} classes, got {top}"
        )


def accuracy(model: nn.Module, inputs, labels: torch.Tensor, batch: int = 512) -> float:
    """Fraction of ``inputs`` that ``model`` classifies right, in eval mode.

    Parameters
    ----------
    model : nn.Module
        Returns logits ``(batch, n_classes)`` first (a tuple's first entry).
    inputs : tensor or tuple of tensors, each of shape (n, ...)
        The model's arguments, each with one row per example.
    labels : tensor, shape (n,)
        Integer classes, below the model's number of classes.
    batch : int
        Examples per forward pass.

    Returns
    -------
    float
        The accuracy, in [0, 1]; the model's mode is restored after.
    """
    inputs, labels = _checked(model, inputs, labels)
    batch, top = check_int(batch, "batch"), int(labels.max())
    n, hits = _length(inputs), 0
    param = next(model.parameters(), None)
    where = None if param is None else param.device  # as train() moves its batches
    with evaluating(model):
        for i in range(0, n, batch):
            idx = slice(i, i + batch)
            logits = model(*to_device(_rows(inputs, idx), where))[0]
            _check_classes(logits, top)
            hits += (logits.argmax(-1) == labels[idx].to(logits.device)).sum().item()
    return hits / n


def fit_classifier(
    model: nn.Module,
    inputs,
    labels: torch.Tensor,
    *,
    n_steps: int,
    batch: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
    desc: str = "training",
) -> list[float]:
    """Train ``model`` with cross-entropy on random mini-batches.

    By :func:`attnlib.training.train`.

    Parameters
    ----------
    model : nn.Module
        Returns logits first.
    inputs : tensor or tuple of tensors, each of shape (n, ...)
        The model's arguments, one row per example.
    labels : tensor, shape (n,)
        Integer classes, below the model's number of classes.
    n_steps, batch, lr, seed, progress, desc : int, int, float, int, bool, str
        As in :func:`attnlib.training.train`; ``seed`` also draws the mini-batches.

    Returns
    -------
    list of float
        The loss at every step.
    """
    inputs, labels = _checked(model, inputs, labels)
    top = int(labels.max())  # all of them: a batch may miss the largest
    batches = _row_batches(
        lambda idx: (_rows(inputs, idx), labels[idx]), _length(inputs), batch, seed
    )

    def loss(m, b):
        logits = m(*b[0])[0]
        _check_classes(logits, top)
        return nn.functional.cross_entropy(logits, b[1])

    return train(
        model,
        loss,
        batches,
        n_steps=n_steps,
        lr=lr,
        seed=seed,
        progress=progress,
        desc=desc,
        clip_grad_norm=1.0,
    )
