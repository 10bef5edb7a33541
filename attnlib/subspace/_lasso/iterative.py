"""ISTA and FISTA for all the Lasso rows of SSC at once, in matrix form.

The iterations only need a few products with each row's keys, so one implementation runs
on two kinds of dictionary: every other sample as a key (dense ``N×N`` iterates) or a
working set of candidate keys per row, grown until the optimality conditions hold for
all keys. Each check also tries the exact solution on every row's current support and
signs (*polishing*), and rows stop as soon as their duality gap certifies them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .common import SolverInfo, _sparse_gap, _top_k_per_row, soft_threshold

__all__ = ["DenseKeys", "lasso_rows", "ssc_working_set"]

# ----------------------------------------------------------------------------------
# The dictionaries the solvers see. Row i of the problem expresses the target y_i with
# the keys K_i: all samples but i (dense), or a working set of candidate samples
# (restricted). The solvers only need the products below, so one implementation of
# ISTA/FISTA serves both.
# ----------------------------------------------------------------------------------


class DenseKeys:
    """Row r (sample ``rows[r]``) uses every sample as a key, its own coefficient 0."""

    def __init__(self, X: np.ndarray, rows: np.ndarray | None = None):
        self.X = X
        self.rows = np.arange(X.shape[0]) if rows is None else rows

    def subset(self, sel):
        return DenseKeys(self.X, self.rows[sel])

    def reconstruct(self, C):  # (n, N) -> (n, D): the rows C[r] K_r
        return C @ self.X

    def correlate(self, R):  # (n, D) -> (n, N): the rows K_r r_r
        return R @ self.X.T

    def restrict(self, C):  # zero the entries outside the feasible set
        C[np.arange(len(self.rows)), self.rows] = 0.0
        return C

    def gather(self, cols):  # (n, s) key positions -> (n, s, D) key vectors
        return self.X[cols]

    def lipschitz(self):
        return np.full((len(self.rows), 1), np.linalg.norm(self.X, 2) ** 2)


class _RestrictedKeys:
    """Row r uses only the keys ``X[idx[r]]`` (never the row's own sample)."""

    def __init__(self, X: np.ndarray, idx: np.ndarray):
        self.B = X[idx]  # (n, k, D)

    def subset(self, sel):
        keys = object.__new__(_RestrictedKeys)
        keys.B = self.B[sel]
        return keys

    def reconstruct(self, C):
        return np.matmul(C[:, None, :], self.B)[:, 0]

    def correlate(self, R):
        return np.matmul(self.B, R[:, :, None])[..., 0]

    def restrict(self, C):
        return C

    def gather(self, cols):
        return np.take_along_axis(self.B, cols[:, :, None], 1)

    def lipschitz(self):
        return np.linalg.eigvalsh(np.matmul(self.B.transpose(0, 2, 1), self.B))[:, -1:]


def _duality_gap(keys, Y, C, lam):
    """Per-row primal value and duality gap of the Lasso rows (gap ≥ 0, 0 at best)."""
    R = Y - keys.reconstruct(C)
    G = keys.restrict(keys.correlate(R))
    primal = 0.5 * (R * R).sum(1) + lam[:, 0] * np.abs(C).sum(1)
    # Scaling the residual into the dual-feasible set |K θ| ≤ λ gives a dual point.
    scale = np.minimum(1.0, lam[:, 0] / np.maximum(np.abs(G).max(1), 1e-300))
    theta = scale[:, None] * R
    dual = 0.5 * (Y * Y).sum(1) - 0.5 * ((Y - theta) ** 2).sum(1)
    return primal, primal - dual


def _polish(keys, Y, C, lam, skip=None):
    """Solve each row's optimality conditions exactly on its current support and signs.

    Once an iterative solver has found the support S and signs s of a row, the Lasso
    optimum is ``c_S = (K_S K_Sᵀ)⁻¹ (K_S y − λ s)``. The support is the row's largest
    coefficients, at most D of them; an iterate often carries one extra coefficient on
    its way to zero, so with ``skip=j`` the j-th largest of the D + 1 largest is left
    out. The caller keeps the result only where it lowers the duality gap.
    """
    D = Y.shape[1]
    m = np.minimum((C != 0).sum(1), D + 1)
    C_new = C.copy()
    # Leaving one out only makes sense for rows that carry more than D coefficients.
    ok = (m > D) if skip is not None else (m > 0)
    sizes = (m - 1 if skip is not None else np.minimum(m, D))[ok]
    if not ok.any():
        return C_new
    order = np.argsort(-np.abs(C[ok]), axis=1, kind="stable")[:, : D + 1]
    if skip is not None:
        order = np.delete(order, skip, axis=1)
    s = int(sizes.max())
    cols = order[:, :s]
    valid = np.arange(s) < sizes[:, None]
    signs = np.sign(np.take_along_axis(C[ok], cols, 1)) * valid
    K = keys.subset(ok).gather(cols) * valid[:, :, None]  # (n, s, D), padding rows zero
    gram = np.matmul(K, K.transpose(0, 2, 1)) + np.eye(s) * ~valid[:, None, :]
    rhs = np.matmul(K, Y[ok][:, :, None])[..., 0] - lam[ok] * signs
    try:
        coef = np.linalg.solve(gram, rhs[:, :, None])[..., 0] * valid
    except np.linalg.LinAlgError:
        return C_new
    consistent = np.all(np.sign(coef) == signs, axis=1)
    rows = np.flatnonzero(ok)[consistent]
    polished = np.zeros((rows.size, C.shape[1]))
    np.put_along_axis(polished, cols[consistent], coef[consistent], 1)
    C_new[rows] = polished
    return C_new


class _RowIterations:
    """ISTA or FISTA iterates for a batch of Lasso rows (done rows dropped)."""

    def __init__(self, keys, Y, lam, solver, C):
        self.keys, self.Y, self.lam, self.solver = keys, Y, lam, solver
        self.C = keys.restrict(C.copy())
        self.step = 1.0 / keys.lipschitz()
        self.Z, self.t = self.C.copy(), np.ones((len(Y), 1))

    def keep(self, sel):
        self.keys = self.keys.subset(sel)
        for name in ("Y", "lam", "C", "step", "Z", "t"):
            setattr(self, name, getattr(self, name)[sel])

    def run(self, n_steps):
        keys, lam = self.keys, self.lam
        for _ in range(n_steps):
            point = self.Z if self.solver == "fista" else self.C
            grad = keys.correlate(keys.reconstruct(point) - self.Y)
            C_new = keys.restrict(
                soft_threshold(point - self.step * grad, self.step * lam)
            )
            if self.solver == "fista":
                # Restart the momentum of rows whose last step went uphill (O'Donoghue &
                # Candès).
                uphill = ((point - C_new) * (C_new - self.C)).sum(1, keepdims=True) > 0
                t = np.where(uphill, 1.0, self.t)
                self.t = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
                self.Z = C_new + ((t - 1) / self.t) * (C_new - self.C)
            self.C = C_new


def lasso_rows(keys, Y, lam, solver, C0, max_iter, tol, polish=True, check_every=20):
    """Solve every row's Lasso at once.

    Stops when the total duality gap is below ``tol`` times the total objective; a row
    is frozen once its own gap is below ``tol / 10`` times its objective, so the batch
    shrinks. With ``polish``, each check also tries the exact solution on the row's
    current support and signs (:func:`_polish`), which ends the iterations early.
    """
    C_all = keys.restrict(C0.copy())
    live = np.arange(len(Y))
    it = _RowIterations(keys, Y, lam, solver, C_all)
    primals, gaps = _duality_gap(keys, Y, C_all, lam)
    n_iter = 0
    while live.size and n_iter < max_iter:
        n = min(check_every, max_iter - n_iter)
        it.run(n)
        n_iter += n
        C = it.C.copy()
        primal, gap = _duality_gap(it.keys, it.Y, C, it.lam)
        D = Y.shape[1]
        for skip in (None, *range(D + 1)) if polish else ():
            C_pol = _polish(it.keys, it.Y, C, it.lam, skip)
            primal_p, gap_p = _duality_gap(it.keys, it.Y, C_pol, it.lam)
            better = gap_p < gap
            C[better], primal[better], gap[better] = (
                C_pol[better],
                primal_p[better],
                gap_p[better],
            )
        C_all[live] = C
        gaps[live], primals[live] = gap, primal
        if gaps.sum() <= tol * primals.sum():
            live = live[:0]
            break
        # Freeze a row well below the global target, so the frozen rows leave room for
        # the rest.
        done = gap <= 0.1 * tol * np.maximum(primal, 1e-300)
        if done.any():
            live = live[~done]
            it.keep(~done)
    primal, gap = _duality_gap(keys, Y, C_all, lam)
    rel = float(gap.sum() / max(primal.sum(), 1e-300))
    return C_all, SolverInfo(
        solver, n_iter, max_iter, tol, live.size == 0, rel, float(primal.sum())
    )


def _kkt_violations(X, R, idx, lam, slack, block=1024):
    """Rows with a key outside their working set that breaks |xⱼ·rᵢ| ≤ λᵢ."""
    bad = np.zeros(R.shape[0], dtype=bool)
    for s in range(0, R.shape[0], block):
        S = np.abs(R[s : s + block] @ X.T)
        rows = np.arange(S.shape[0])[:, None]
        S[rows, idx[s : s + block]] = 0.0
        S[rows[:, 0], np.arange(s, s + S.shape[0])] = 0.0
        bad[s : s + block] = S.max(1) > lam[s : s + block, 0] * (1 + slack)
    return bad


def ssc_working_set(X, lam, solver, k, max_iter, tol, polish, max_rounds=20):
    """SSC on working sets: solve on k candidate keys per row, add violators, repeat."""
    N = X.shape[0]
    # room for a support of up to D keys, and more
    k = min(max(k, 2 * X.shape[1]), N - 1)
    rows = np.arange(N)
    idx = _top_k_per_row(X, X, k, rows)  # start from the most correlated samples
    coef = np.zeros((N, k))
    todo = rows
    n_iter = 0
    for n_round in range(1, max_rounds + 1):  # noqa: B007 (reported after the loop)
        keys = _RestrictedKeys(X, idx[todo])
        coef[todo], info = lasso_rows(
            keys, X[todo], lam[todo], solver, coef[todo], max_iter, tol, polish
        )
        n_iter += info.n_iter
        R = X - _RestrictedKeys(X, idx).reconstruct(coef)
        bad = _kkt_violations(X, R, idx, lam, slack=tol)
        if not bad.any():
            break
        # Keep each violating row's support and refill its working set with the keys
        # most correlated with its residual (the ones whose optimality condition is most
        # violated).
        todo = rows[bad]
        fresh = _top_k_per_row(X, R[todo], k, todo)
        for r, new in zip(todo, fresh):
            keep = np.abs(coef[r]) > 0
            support = idx[r, keep]
            extra = new[~np.isin(new, support)][: k - support.size]
            idx[r] = np.concatenate([support, extra])
            coef[r] = np.concatenate([coef[r, keep], np.zeros(extra.size)])
    C = sp.csr_matrix(
        (coef.ravel(), idx.ravel(), np.arange(0, N * k + 1, k)), shape=(N, N)
    )
    C.eliminate_zeros()
    C.sort_indices()
    primal, gap = _sparse_gap(X, C, lam)
    rel = float(gap.sum() / primal.sum())
    return C, SolverInfo(
        solver,
        n_iter,
        max_iter,
        tol,
        rel <= tol and not bad.any(),
        rel,
        float(primal.sum()),
        n_round,
        k,
    )
