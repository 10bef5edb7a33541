"""Chapter 08's experiments: the pointer task, the routers' losses, the runs.

- ``routing``: the pointer task, the reach of a stack of local layers and the
  non-local operator (the Green function of a Dirichlet Laplacian) that no local stack
  fits;
- ``scores``: the losses and the accuracies by distance that train and read the
  routers of :mod:`attnlib.mux`;
- ``runs``: the chapter's trained experiments, one seed at a time, for the committed
  sweep (``benchmarks/mux.py``).

Every public name is importable from here.
"""

from .routing import (
    PointerTask,
    best_convolution,
    dirichlet_laplacian,
    fit_linear_stack,
    green_function,
    layers_to_see_everything,
    pointer_task,
)
from .runs import (
    LENGTH,
    N_VALUES,
    equivariant_reach_bound,
    pointer_run,
    reach_bound,
    routing_run,
    weekday_run,
    wide_stack_run,
)
from .scores import accuracy_by_distance, accuracy_by_offset, pointer_loss, routing_loss

__all__ = [
    "PointerTask",
    "pointer_task",
    "layers_to_see_everything",
    "dirichlet_laplacian",
    "green_function",
    "best_convolution",
    "fit_linear_stack",
    "routing_loss",
    "accuracy_by_distance",
    "pointer_loss",
    "accuracy_by_offset",
    "reach_bound",
    "equivariant_reach_bound",
    "wide_stack_run",
    "routing_run",
    "pointer_run",
    "weekday_run",
    "LENGTH",
    "N_VALUES",
]
