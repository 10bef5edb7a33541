"""The row-wise Lasso solvers behind :mod:`attnlib.lasso` (internal fast paths).

One solver family per module: ``homotopy`` (the exact homotopy path and the active-set
solver), ``iterative`` (ISTA, FISTA on all samples or on working sets) and
``common`` (the unchecked soft threshold, the duality-gap certificate,
:class:`~attnlib.engines.lasso.common.SolverInfo`). They trust their input: the public
entries in :mod:`attnlib.lasso` check it once.
"""
