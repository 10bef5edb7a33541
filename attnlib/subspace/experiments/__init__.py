"""Chapter 05's experiments: data (nearly) a union of subspaces, small models, runs.

The package has five rooms; every public name is importable from here.

- ``datasets``: :func:`motion` and :func:`faces`, the two classic subspace-clustering
  settings, generated (rigid motions under an affine camera; Lambertian objects under
  distant lights).
- ``stack``: :func:`sparse_combination_batch` and :func:`combination_report`, a task
  whose targets are sparse, signed combinations of values, the situation
  self-expression describes; :class:`AttentionStack`, Figure 4 of the self-expression
  paper as a stack of 2-3 blocks of attention (softmax, sparsemax or unrolled ISTA),
  residual connections and feed-forwards.
- ``held_out``: :class:`SelfExpressiveNet` (parametrised coefficients in the spirit of
  SENet, Zhang, You, Vidal & Li 2021) and :class:`LearnedISTACodes` (unrolled ISTA with
  learned steps), which give coefficients for points never seen, and
  :func:`assign_by_coefficients`, which labels those points.
- ``simplex``: :func:`normalized_self_expression`, self-expressive coefficients
  constrained to the simplex through softmax or sparsemax, fitted to the
  self-expression loss.

- ``runs``: :func:`held_out_run`, :func:`normalized_run` and :func:`stack_run`, the
  chapter's three trained experiments, one seed at a time, for the committed sweep
  (``benchmarks/self_expression.py``), on the models of the three rooms above.
"""

from . import datasets, held_out, runs, simplex, stack
from .datasets import *  # noqa: F403
from .held_out import *  # noqa: F403
from .runs import *  # noqa: F403
from .simplex import *  # noqa: F403
from .stack import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += datasets.__all__
__all__ += stack.__all__
__all__ += held_out.__all__
__all__ += simplex.__all__
__all__ += runs.__all__
