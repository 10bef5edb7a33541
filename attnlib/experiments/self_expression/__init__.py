"""Experiments of chapter 05: data (nearly) a union of subspaces, and small models.

The package has four rooms; every public name is importable from here.

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

The last three are the models of ``self_expression_runs``' three trained experiments.
"""

from .datasets import faces, motion
from .held_out import (
    LearnedISTACodes,
    SelfExpressiveNet,
    assign_by_coefficients,
    fit_learned_ista,
    fit_self_expressive_net,
)
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
]
