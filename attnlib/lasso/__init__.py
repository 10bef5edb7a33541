"""Row-wise Lasso solvers for sparse self-expression: each sample's Lasso over the rest.

Row ``i`` of the SSC problem is the Lasso ``min_c ½‖xᵢ − Σⱼ cⱼ xⱼ‖² + λᵢ‖c‖₁`` (j ≠ i).
This package solves all rows at once: by default with an active set (each row solved
exactly by its homotopy path on a few candidate keys, vectorised over rows, the sets
grown until the optimality conditions hold for *all* keys, certified by a duality gap);
or by ISTA, FISTA or the ADMM of Elhamifar & Vidal, in matrix form on all samples or on
working sets.
:func:`attnlib.subspace.self_expressive` is the public entry; :func:`ssc_rows` the
solver.

The package holds one solver family per module: ``homotopy`` (the exact homotopy path
and the default active-set solver), ``iterative`` (ISTA, FISTA, ADMM) and ``common``
(the soft threshold, the duality-gap certificate, :class:`SolverInfo`); :func:`ssc_rows`
picks the solver. Every public name is importable from ``attnlib.lasso``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..utils import as_float_array, check_int, check_positive, host_array
from .common import SolverInfo, _lam_column, soft_threshold
from .homotopy import _ssc_active_set, lasso_codes
from .iterative import _DenseKeys, _lasso_rows, _ssc_working_set

__all__ = ["soft_threshold", "SolverInfo", "ssc_rows", "lasso_codes", "SOLVERS"]

SOLVERS = ("active_set", "ista", "fista", "admm")


def ssc_rows(
    X,
    lam,
    solver="active_set",
    *,
    max_iter=5000,
    tol=1e-7,
    rho=None,
    working_set="auto",
    polish=True,
):
    """Solve ``min_C ½‖X − C X‖_F² + Σᵢ λᵢ‖C[i]‖₁`` with ``diag(C) = 0``, row by row.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The samples, one per row, at least two.
    lam, solver, max_iter, tol, rho, working_set, polish : object
        As in :func:`attnlib.subspace.self_expressive`.

    Returns
    -------
    C : ndarray or CSR of shape (n_samples, n_samples)
        The coefficients.
    info : SolverInfo
        Iterations, duality gap and convergence.

    Implements
    ----------
    Eq. (12) of the self-expression paper (rows as samples, with a ½), by ISTA (Eq. 15,
    two-sided threshold), FISTA (Beck & Teboulle 2009), ADMM (Elhamifar & Vidal 2013,
    Sec. 3.3) or an active set with the Lasso homotopy (Osborne, Presnell & Turlach
    2000; You, Li, Robinson & Vidal 2016).
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    X = as_float_array(host_array(X), "X", min_samples=2)
    lam = _lam_column(lam, X.shape[0])
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    rho = None if rho is None else check_positive(rho, "rho")
    if solver == "active_set":
        k = (
            48
            if working_set in ("auto", None)
            else check_int(working_set, "working_set", minimum=2)
        )
        C, info = _ssc_active_set(X, lam, k, tol, max_iter)
        if working_set is None or (working_set == "auto" and X.shape[0] <= 1500):
            C = C.toarray()
    else:
        if working_set == "auto":
            working_set = 64 if X.shape[0] > 1500 else None
        if working_set is None:
            C, info = _lasso_rows(
                _DenseKeys(X),
                X,
                lam,
                solver,
                np.zeros((len(X), len(X))),
                max_iter,
                tol,
                rho,
                polish,
            )
        else:
            k = check_int(working_set, "working_set", minimum=2)
            C, info = _ssc_working_set(X, lam, solver, k, max_iter, tol, rho, polish)
    if not info.converged:
        warnings.warn(
            f"SSC stopped at max_iter={max_iter} with relative duality gap "
            f"{info.rel_gap:.2g} > tol={tol:g}",
            stacklevel=3,
        )
    return C, info
