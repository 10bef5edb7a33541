"""How chapter 08's models are trained and read: a loss and an accuracy per task.

Both tasks ask every position for one value: in the routing task of :mod:`attnlib.mux`
the value of the one marked token, in the pointer task of
``attnlib.mux.experiments.routing`` the value of the token each position points at.
The loss is the cross-entropy at every position; the accuracy is binned by the distance
from each position to the token it must read, which is what separates a convolution
(blind beyond its receptive field) from attention (which reads at any distance).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ...training import evaluating
from ...utils.boundary import checking
from ...utils.validation import check_type
from .. import RoutingTask
from .routing import PointerTask

__all__ = ["routing_loss", "accuracy_by_distance", "pointer_loss", "accuracy_by_offset"]


def _check_model_task(model, task, kind: type, maker: str) -> None:
    # These functions run the caller's model, so they are not public (boundary): they
    # check unless a run of chapter 08, with its own models and tasks, calls them
    # inside trusted().
    if checking():
        check_type(model, "model", nn.Module, "an nn.Module")
        check_type(task, "task", kind, f"a {kind.__name__} (see {maker})")


def _accuracy_per_distance(model: nn.Module, x, target, source) -> np.ndarray:
    """Accuracy of the argmax at every position, binned by ``|position - source|``.

    ``target`` and ``source`` (the answer and the position it must be read from)
    broadcast to ``(n, length)``; the model is run in eval mode, its mode restored.
    """
    with evaluating(model):
        pred = model(x).argmax(-1).cpu()  # counted on the CPU, whatever the device
    # Counted on the CPU, where the result goes (NumPy).
    length = x.shape[1]
    distance = (torch.arange(length)[None, :] - source.cpu()).abs().flatten()
    correct = (pred == target.cpu()).double().flatten()
    hits = torch.zeros(length, dtype=torch.float64).index_add_(0, distance, correct)
    counts = torch.bincount(distance, minlength=length).double()
    return (hits / counts).numpy()


def routing_loss(model: nn.Module, task: RoutingTask) -> torch.Tensor:
    """Mean cross-entropy at every position (each must name the marked value).

    Parameters
    ----------
    model : nn.Module
        Maps ``task.x``, ``(n, length, n_values + 1)``, to logits
        ``(n, length, n_values)``.
    task : RoutingTask
        The sequences and their targets (:func:`attnlib.mux.routing_task`).

    Returns
    -------
    torch.Tensor, shape ()
        The loss, differentiable with respect to the model's parameters.
    """
    _check_model_task(model, task, RoutingTask, "routing_task")
    logits = model(task.x)
    target = task.target[:, None].expand(logits.shape[:2])
    return F.cross_entropy(logits.flatten(0, 1), target.flatten())


def accuracy_by_distance(model: nn.Module, task: RoutingTask) -> np.ndarray:
    """Accuracy of the prediction at position j as a function of ``|j - marker|``.

    Parameters
    ----------
    model : nn.Module
        As in :func:`routing_loss`; evaluated in eval mode, its mode restored after.
    task : RoutingTask
        The sequences and their targets (:func:`attnlib.mux.routing_task`).

    Returns
    -------
    ndarray, shape (length,)
        Entry d is the accuracy over all (sequence, position) pairs at distance d from
        the marked position (NaN if there are none).
    """
    _check_model_task(model, task, RoutingTask, "routing_task")
    return _accuracy_per_distance(
        model, task.x, task.target[:, None], task.marker[:, None]
    )


def pointer_loss(model: nn.Module, task: PointerTask) -> torch.Tensor:
    """Mean cross-entropy over every position of every sequence.

    Parameters
    ----------
    model : nn.Module
        Maps ``task.x`` ``(n, length, features)`` to logits ``(n, length, n_values)``.
    task : PointerTask
        The sequences and their targets
        (:func:`~attnlib.mux.experiments.pointer_task`).

    Returns
    -------
    torch.Tensor, shape ()
        The loss, differentiable with respect to the model's parameters.
    """
    _check_model_task(model, task, PointerTask, "pointer_task")
    logits = model(task.x)
    return F.cross_entropy(logits.flatten(0, 1), task.target.flatten())


def accuracy_by_offset(model: nn.Module, task: PointerTask) -> np.ndarray:
    """Accuracy at position i as a function of the reading distance ``|i - source[i]|``.

    Parameters
    ----------
    model : nn.Module
        As in :func:`pointer_loss`; evaluated in eval mode, its mode restored after.
    task : PointerTask
        As in :func:`pointer_loss`.

    Returns
    -------
    ndarray, shape (length,)
        Entry d is the accuracy at distance d (NaN where no position has that distance).
    """
    _check_model_task(model, task, PointerTask, "pointer_task")
    return _accuracy_per_distance(model, task.x, task.target, task.source)
