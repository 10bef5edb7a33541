"""Attention as a differentiable multiplexer, and why convolutions cannot route.

A convolution applies the same small kernel everywhere: it is translation-equivariant
and local, so an output can only read inputs inside its receptive field. A multiplexer
reads *one* input chosen by a control signal, wherever that input sits. Replacing the
hard choice (argmax) by a softmax makes the choice differentiable, and scoring every
input by a bilinear form ``x_iᵀ KᵀQ C_j`` gives attention; ``C_j = x_j`` gives
self-attention.

The package holds the tasks (``tasks``: routing, the weekday multiplexer, sequences for
equivariance checks), the multiplexers themselves (``maps``), and the small models the
chapter trains (``models``); every public name is importable from ``attnlib.mux``. The
loss and the accuracy by distance that train and read the routers are experiment
scaffolding, in ``attnlib.mux.experiments.scores``.
Tokens are rows: sequences are ``(batch, length, features)``.
"""

from . import maps, models, tasks
from .maps import *  # noqa: F403
from .models import *  # noqa: F403
from .tasks import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += tasks.__all__
__all__ += maps.__all__
__all__ += models.__all__
