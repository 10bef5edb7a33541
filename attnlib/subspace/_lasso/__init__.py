"""The row-wise Lasso solvers behind ``attnlib.subspace.lasso`` (private engines).

One solver family per module: ``homotopy`` (the exact homotopy path and the active-set
solver), ``iterative`` (ISTA, FISTA on all samples or on working sets) and
``common`` (the unchecked soft threshold, the duality-gap certificate,
``attnlib.subspace._lasso.common.SolverInfo``). They trust their input: the public
entries in ``attnlib.subspace.lasso`` check it once.
"""

from . import common, homotopy, iterative

__all__ = ["common", "homotopy", "iterative"]
