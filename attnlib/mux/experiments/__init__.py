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

from . import routing, runs, scores
from .routing import *  # noqa: F403
from .runs import *  # noqa: F403
from .scores import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += routing.__all__
__all__ += scores.__all__
__all__ += runs.__all__
