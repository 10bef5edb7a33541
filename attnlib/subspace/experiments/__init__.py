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

from .datasets import faces, motion
from .held_out import (
    LearnedISTACodes,
    SelfExpressiveNet,
    assign_by_coefficients,
    fit_learned_ista,
    fit_self_expressive_net,
)
from .runs import HELD_OUT, NORMALIZED, held_out_run, normalized_run, stack_run
from .simplex import normalized_self_expression
from .stack import AttentionStack, combination_report, sparse_combination_batch

__all__ = [
    "motion",
    "faces",
    "sparse_combination_batch",
    "combination_report",
    "AttentionStack",
    "SelfExpressiveNet",
    "fit_self_expressive_net",
    "LearnedISTACodes",
    "fit_learned_ista",
    "normalized_self_expression",
    "assign_by_coefficients",
    "held_out_run",
    "normalized_run",
    "stack_run",
    "HELD_OUT",
    "NORMALIZED",
]
