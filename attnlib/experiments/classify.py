"""Training and scoring the small classifiers of the chapters' experiments.

A model's first output is its logits; its inputs are one tensor or a tuple of tensors
that are batched together (e.g. documents and, for an oracle control, where their label
sits).
"""

from __future__ import annotations

import torch
from torch import nn

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


def accuracy(model: nn.Module, inputs, labels: torch.Tensor, batch: int = 512) -> float:
    """Fraction of ``inputs`` that ``model`` classifies right, in eval mode.

    Parameters
    ----------
    model : nn.Module
        Returns logits ``(batch, n_classes)`` first (a tuple's first entry).
    inputs : tensor or tuple of tensors
        The model's arguments, each with one row per example.
    labels : tensor, shape (n,)
    batch : int
        Examples per forward pass.

    Returns
    -------
    float in [0, 1]
    """
    model.eval()
    n, hits = _length(inputs), 0
    with torch.no_grad():
        for i in range(0, n, batch):
            idx = slice(i, i + batch)
            hits += (
                (model(*_rows(inputs, idx))[0].argmax(-1) == labels[idx]).sum().item()
            )
    model.train()
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
    inputs : tensor or tuple of tensors
        The model's arguments, one row per example.
    labels : tensor, shape (n,)
    n_steps, batch, lr, seed, progress, desc
        As in :func:`attnlib.training.train`; ``seed`` also draws the mini-batches.

    Returns
    -------
    list of float
        The loss at every step.
    """
    from ..training import train

    g = torch.Generator().manual_seed(seed)
    n = _length(inputs)

    def batches(step):
        idx = torch.randint(n, (batch,), generator=g)
        return _rows(inputs, idx), labels[idx]

    def loss(m, b):
        return nn.functional.cross_entropy(m(*b[0])[0], b[1])

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
