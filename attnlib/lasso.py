"""Row-wise Lasso solvers for sparse self-expression: every sample's Lasso over the others.

Row ``i`` of the SSC problem is the Lasso ``min_c ½‖xᵢ − Σⱼ cⱼ xⱼ‖² + λᵢ‖c‖₁`` (j ≠ i). This
module solves all rows at once: by default with an active set (each row solved exactly by
its homotopy path on a few candidate keys, vectorised over rows, the sets grown until the
optimality conditions hold for *all* keys, certified by a duality gap); or by ISTA, FISTA
or the ADMM of Elhamifar & Vidal, in matrix form on all samples or on working sets.
:func:`attnlib.subspace.self_expressive` is the public entry; :func:`ssc_rows` the solver.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from .utils import as_float_array, check_int, check_positive, host_array

__all__ = ["soft_threshold", "SolverInfo", "ssc_rows", "lasso_codes", "SOLVERS"]

SOLVERS = ("active_set", "ista", "fista", "admm")


def soft_threshold(x, threshold):
    """The proximal map of ``threshold * |x|``: ``sign(x) * max(|x| - threshold, 0)``.

    Works on NumPy arrays and (differentiably) on PyTorch tensors.

    Parameters
    ----------
    x : tensor or array-like, any shape
        The points, finite.
    threshold : float or array-like, shape broadcastable with ``x``
        Non-negative and finite.

    Returns
    -------
    tensor or ndarray, the broadcast shape
        A tensor for a tensor ``x``, else a NumPy array.

    Implements
    ----------
    The shrinkage of ISTA, Eq. (15) of the self-expression paper (two-sided).
    """
    if isinstance(x, torch.Tensor):
        bad = not torch.isfinite(x).all() if x.is_floating_point() else False
    else:
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"x must be array-like of numbers, got {type(x).__name__}"
            ) from err
        bad = not np.all(np.isfinite(x))
    if bad:
        raise ValueError("x contains NaN or infinite values")
    if isinstance(threshold, torch.Tensor):
        ok = bool(torch.isfinite(threshold).all() and (threshold >= 0).all())
    else:
        try:
            t = np.asarray(threshold, dtype=np.float64)
        except (TypeError, ValueError):
            t = np.array(np.nan)
        ok = bool(np.all(np.isfinite(t)) and np.all(t >= 0))
    if not ok:
        raise ValueError(
            f"threshold must be finite and non-negative, got {threshold!r}"
        )
    return _soft_threshold(x, threshold)


def _soft_threshold(x, threshold):
    """:func:`soft_threshold` without the checks, for the solvers' inner loops."""
    if isinstance(x, torch.Tensor):
        return torch.sign(x) * torch.relu(x.abs() - threshold)
    return np.sign(x) * np.maximum(np.abs(x) - threshold, 0.0)


def _lam_column(lam, n: int) -> np.ndarray:
    """``lam`` as an ``(n, 1)`` column: one regularisation weight per sample (row of C)."""
    if np.ndim(lam) == 0:
        return np.full((n, 1), check_positive(lam, "lam"))
    lam = np.asarray(lam, dtype=np.float64)
    if lam.shape != (n,) or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError(
            f"lam must be a positive number or a positive array of shape ({n},), got shape {lam.shape}"
        )
    return lam[:, None]


# ---------------------------------------------------------------------------------------
# The dictionaries the solvers see. Row i of the problem expresses the target y_i with the
# keys K_i: all samples but i (dense), or a working set of candidate samples (restricted).
# The solvers only need the products below, so one implementation of ISTA/FISTA/ADMM
# serves both.
# ---------------------------------------------------------------------------------------


class _DenseKeys:
    """Row r (sample ``rows[r]``) uses every sample as a key, with its own coefficient forced to 0."""

    def __init__(self, X: np.ndarray, rows: np.ndarray | None = None):
        self.X = X
        self.rows = np.arange(X.shape[0]) if rows is None else rows

    def subset(self, sel):
        return _DenseKeys(self.X, self.rows[sel])

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

    def ridge_solver(self, rho: float):
        """``W ↦ W (K Kᵀ + ρ I)⁻¹``, by Woodbury through a D×D inverse."""
        X = self.X
        M = np.linalg.inv(rho * np.eye(X.shape[1]) + X.T @ X)
        return lambda W: (W - ((W @ X) @ M) @ X.T) / rho


class _RestrictedKeys:
    """Row r uses only the keys ``X[idx[r]]`` (which never include the row's own sample)."""

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

    def ridge_solver(self, rho: float):
        B = self.B
        M = np.linalg.inv(rho * np.eye(B.shape[2]) + np.matmul(B.transpose(0, 2, 1), B))
        return lambda W: (
            (
                W
                - np.matmul(
                    np.matmul(self.reconstruct(W)[:, None, :], M), B.transpose(0, 2, 1)
                )[:, 0]
            )
            / rho
        )


def _duality_gap(keys, Y, C, lam):
    """Per-row primal value and duality gap of the Lasso rows (gap ≥ 0, zero at the optimum)."""
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

    Once an iterative solver has found the support S and signs s of a row, the Lasso optimum
    is ``c_S = (K_S K_Sᵀ)⁻¹ (K_S y − λ s)``. The support is the row's largest coefficients,
    at most D of them; an iterate often carries one extra coefficient on its way to zero, so
    with ``skip=j`` the j-th largest of the D + 1 largest is left out. The caller keeps the
    result only where it lowers the duality gap.
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


class SolverInfo(NamedTuple):
    """How a solve went: iterations used, whether the relative duality gap reached ``tol``."""

    solver: str
    n_iter: int
    max_iter: int
    tol: float
    converged: bool
    rel_gap: float  # certified bound on (objective - optimum) / objective
    objective: float
    n_rounds: int = 1  # working-set rounds (1 for the dense solve)
    working_set: int = 0  # final candidate keys per sample (0: all samples)


class _RowIterations:
    """ISTA, FISTA or ADMM iterates for a batch of Lasso rows; rows can be dropped when done."""

    def __init__(self, keys, Y, lam, solver, C, rho):
        self.keys, self.Y, self.lam, self.solver = keys, Y, lam, solver
        self.C = keys.restrict(C.copy())
        if solver == "admm":
            self.rho = float(np.median(keys.lipschitz())) / 50 if rho is None else rho
            self.dual = np.zeros_like(self.C)
        else:
            self.step = 1.0 / keys.lipschitz()
            self.Z, self.t = self.C.copy(), np.ones((len(Y), 1))

    def keep(self, sel):
        self.keys = self.keys.subset(sel)
        for name in ("Y", "lam", "C", "dual", "step", "Z", "t"):
            if hasattr(self, name):
                setattr(self, name, getattr(self, name)[sel])

    def run(self, n_steps):
        keys, lam = self.keys, self.lam
        if self.solver == "admm":
            # Elhamifar & Vidal (2013), Sec. 3.3: an unconstrained copy A takes the quadratic,
            # C is A shrunk with a zero diagonal, and the scaled dual variable ties them.
            rho, solve = self.rho, keys.ridge_solver(self.rho)
            target = keys.correlate(self.Y)
            for _ in range(n_steps):
                A = solve(target + rho * self.C - self.dual)
                self.C = keys.restrict(_soft_threshold(A + self.dual / rho, lam / rho))
                self.dual += rho * (A - self.C)
            return
        for _ in range(n_steps):
            point = self.Z if self.solver == "fista" else self.C
            grad = keys.correlate(keys.reconstruct(point) - self.Y)
            C_new = keys.restrict(
                _soft_threshold(point - self.step * grad, self.step * lam)
            )
            if self.solver == "fista":
                # Restart the momentum of rows whose last step went uphill (O'Donoghue & Candès).
                uphill = ((point - C_new) * (C_new - self.C)).sum(1, keepdims=True) > 0
                t = np.where(uphill, 1.0, self.t)
                self.t = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
                self.Z = C_new + ((t - 1) / self.t) * (C_new - self.C)
            self.C = C_new


def _lasso_rows(
    keys, Y, lam, solver, C0, max_iter, tol, rho, polish=True, check_every=20
):
    """Solve every row's Lasso at once.

    Stops when the total duality gap is below ``tol`` times the total objective; a row is
    frozen once its own gap is below ``tol / 10`` times its objective, so the batch shrinks. With ``polish``, each check also tries the exact solution on
    the row's current support and signs (:func:`_polish`), which ends the iterations early.
    """
    C_all = keys.restrict(C0.copy())
    live = np.arange(len(Y))
    it = _RowIterations(keys, Y, lam, solver, C_all, rho)
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
        # Freeze a row well below the global target, so the frozen rows leave room for the rest.
        done = gap <= 0.1 * tol * np.maximum(primal, 1e-300)
        if done.any():
            live = live[~done]
            it.keep(~done)
    primal, gap = _duality_gap(keys, Y, C_all, lam)
    rel = float(gap.sum() / max(primal.sum(), 1e-300))
    return C_all, SolverInfo(
        solver, n_iter, max_iter, tol, live.size == 0, rel, float(primal.sum())
    )


def _top_k_per_row(X, R, k, exclude_rows, block=1024):
    """Indices of the k largest ``|R[i] · X[j]|`` per row, j ≠ exclude_rows[i], blockwise in memory."""
    out = np.empty((R.shape[0], k), dtype=np.int64)
    for s in range(0, R.shape[0], block):
        S = np.abs(R[s : s + block] @ X.T)
        S[np.arange(S.shape[0]), exclude_rows[s : s + block]] = -1.0
        top = np.argpartition(-S, k - 1, axis=1)[:, :k]
        out[s : s + block] = np.take_along_axis(
            top, np.argsort(-np.take_along_axis(S, top, 1), 1), 1
        )
    return out


def _kkt_violations(X, R, idx, lam, slack, block=1024):
    """Rows with a key outside their working set that breaks the optimality condition |xⱼ·rᵢ| ≤ λᵢ."""
    bad = np.zeros(R.shape[0], dtype=bool)
    for s in range(0, R.shape[0], block):
        S = np.abs(R[s : s + block] @ X.T)
        rows = np.arange(S.shape[0])[:, None]
        S[rows, idx[s : s + block]] = 0.0
        S[rows[:, 0], np.arange(s, s + S.shape[0])] = 0.0
        bad[s : s + block] = S.max(1) > lam[s : s + block, 0] * (1 + slack)
    return bad


def _ssc_working_set(X, lam, solver, k, max_iter, tol, rho, polish, max_rounds=20):
    """SSC on working sets: solve on k candidate keys per row, add violators, repeat."""
    N = X.shape[0]
    k = min(
        max(k, 2 * X.shape[1]), N - 1
    )  # room for a support of up to D keys, and more
    rows = np.arange(N)
    idx = _top_k_per_row(X, X, k, rows)  # start from the most correlated samples
    coef = np.zeros((N, k))
    todo = rows
    n_iter = 0
    for n_round in range(1, max_rounds + 1):
        keys = _RestrictedKeys(X, idx[todo])
        coef[todo], info = _lasso_rows(
            keys, X[todo], lam[todo], solver, coef[todo], max_iter, tol, rho, polish
        )
        n_iter += info.n_iter
        R = X - _RestrictedKeys(X, idx).reconstruct(coef)
        bad = _kkt_violations(X, R, idx, lam, slack=tol)
        if not bad.any():
            break
        # Keep each violating row's support and refill its working set with the keys most
        # correlated with its residual (the ones whose optimality condition is most violated).
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


def _sparse_gap(X, C, lam, block=1024, worst=None):
    """``_duality_gap`` for a sparse C with every sample as a key, forming X Xᵀ blockwise.

    ``worst`` (``max_{j≠i} |x_j · r_i|`` per row), if the caller already has it, saves that pass.
    """
    R = X - np.asarray(C @ X)
    primal = 0.5 * (R * R).sum(1) + lam[:, 0] * np.asarray(abs(C).sum(1)).ravel()
    if worst is None:
        worst = np.empty(X.shape[0])
        for s in range(0, X.shape[0], block):
            S = np.abs(R[s : s + block] @ X.T)
            S[np.arange(S.shape[0]), np.arange(s, s + S.shape[0])] = 0.0
            worst[s : s + block] = S.max(1)
    theta = np.minimum(1.0, lam[:, 0] / np.maximum(worst, 1e-300))[:, None] * R
    dual = 0.5 * (X * X).sum(1) - 0.5 * ((X - theta) ** 2).sum(1)
    return primal, primal - dual


# ---------------------------------------------------------------------------------------
# The active-set solver. With D features, row i's Lasso has a D-dimensional dual and an
# optimum with at most D non-zeros, so each row is solved exactly by the homotopy (LARS-Lasso)
# path on a small working set of keys, vectorised over all rows; one product with X then
# finds the keys outside the set whose optimality condition fails, they join the set, and
# the rows that had any are solved again. No N×N iteration is ever run.
# ---------------------------------------------------------------------------------------


def _solve_batch(G, b):
    """Batched ``G⁻¹ b`` that survives the rare singular Gram (duplicated samples) via pinv."""
    try:
        return np.linalg.solve(G, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.matmul(np.linalg.pinv(G, hermitian=True), b[..., None])[..., 0]


def _active_system(B, active):
    """The active keys of every row, packed first: positions (n, m), validity mask, keys (n, m, D)."""
    m = max(int(active.sum(1).max()), 1)
    order = np.argsort(~active, axis=1, kind="stable")[:, :m]
    valid = np.take_along_axis(active, order, 1)
    K = np.take_along_axis(B, order[:, :, None], 1) * valid[:, :, None]
    gram = np.matmul(K, K.transpose(0, 2, 1)) + np.eye(m) * ~valid[:, None, :]
    return order, valid, K, gram


def _homotopy_rows(B, Y, lam, max_steps=1000):
    """Exact Lasso ``min_c ½‖y − Σⱼ cⱼ bⱼ‖² + λ‖c‖₁`` for every row, by the homotopy path.

    Starting from ``c = 0`` at ``λ = max |B y|``, λ decreases; on each segment the active
    coefficients move along ``(K_A K_Aᵀ)⁻¹ s_A`` until a key's correlation reaches ±λ (it
    enters) or an active coefficient reaches 0 (it leaves). All rows step together.

    Parameters
    ----------
    B : (n, k, D) the keys of each row;  Y : (n, D) the targets;  lam : (n,) the weights.

    Returns
    -------
    coef : (n, k), and the number of path segments of the longest row.
    """
    n, k, _ = B.shape
    coef, active = np.zeros((n, k)), np.zeros((n, k), dtype=bool)
    corr = np.einsum("nkd,nd->nk", B, Y)
    level = np.abs(corr).max(1)  # λ at the current point of the path
    first = np.abs(corr).argmax(1)
    live = np.flatnonzero(level > lam)
    active[live, first[live]] = True
    left = np.full(n, -1)  # the key that just left each row may not re-enter at once
    steps = 0
    while live.size and steps < max_steps:
        steps += 1
        A, c, Bl, lv = active[live], coef[live], B[live], level[live]
        order, valid, K, gram = _active_system(Bl, A)
        c_A = np.take_along_axis(c, order, 1)
        corr = np.einsum("nkd,nd->nk", Bl, Y[live] - np.einsum("nm,nmd->nd", c_A, K))
        d_A = (
            _solve_batch(gram, np.sign(np.take_along_axis(corr, order, 1)) * valid)
            * valid
        )
        a = np.einsum("nkd,nd->nk", Bl, np.einsum("nm,nmd->nd", d_A, K))
        with np.errstate(divide="ignore", invalid="ignore"):
            # The step γ at which an inactive correlation corr − γa meets +(λ − γ) or −(λ − γ),
            # and at which an active coefficient c_A + γ d_A meets 0.
            up, down, tiny = (
                (lv[:, None] - corr) / (1 - a),
                (lv[:, None] + corr) / (1 + a),
                1e-13 * lv[:, None],
            )
            hit = np.minimum(
                np.where(up > tiny, up, np.inf), np.where(down > tiny, down, np.inf)
            )
            ratio = -c_A / d_A
            leave = np.where(valid & (ratio > 0), ratio, np.inf)
        hit[A] = np.inf
        rows, barred = np.arange(live.size), left[live]
        hit[rows[barred >= 0], barred[barred >= 0]] = np.inf
        j_in, j_out = hit.argmin(1), leave.argmin(1)
        g_in, g_out, g_end = hit[rows, j_in], leave[rows, j_out], lv - lam[live]
        gamma = np.minimum(np.minimum(g_in, g_out), g_end)
        np.put_along_axis(c, order, (c_A + gamma[:, None] * d_A) * valid, 1)
        enter = (g_in <= g_out) & (g_in < g_end)
        drop = (g_out < g_in) & (g_out < g_end)
        A[rows[enter], j_in[enter]] = True
        out = order[rows[drop], j_out[drop]]
        A[rows[drop], out] = False
        c[rows[drop], out] = 0.0
        active[live], coef[live], level[live] = A, c, lv - gamma
        left[live] = -1
        left[live[drop]] = out
        live = live[enter | drop]
    return _exact_on_support(B, Y, lam, coef), steps


def _exact_on_support(B, Y, lam, coef):
    """Re-solve ``c_S = (K_S K_Sᵀ)⁻¹ (K_S y − λ s)`` on each row's support and signs, removing
    the rounding the path accumulated; kept only where the signs agree."""
    order, valid, K, gram = _active_system(B, coef != 0)
    signs = np.sign(np.take_along_axis(coef, order, 1)) * valid
    exact = (
        _solve_batch(gram, (np.einsum("nmd,nd->nm", K, Y) - lam[:, None] * signs))
        * valid
    )
    ok = np.all(np.sign(exact) == signs, axis=1)
    out, fixed = coef.copy(), np.zeros((int(ok.sum()), coef.shape[1]))
    np.put_along_axis(fixed, order[ok], exact[ok], 1)
    out[ok] = fixed
    return out


def _ssc_active_set(X, lam, k, tol, max_steps, max_rounds=50, block=1024):
    """SSC by exact homotopy on working sets of k keys, grown by their violated optimality conditions."""
    N, D = X.shape
    k = min(max(k, D + 1), N - 1)
    rows = np.arange(N)
    idx = _top_k_per_row(X, X, k, rows)  # first guess: the most correlated samples
    coef = np.zeros((N, k))
    worst = np.empty(
        N
    )  # max_j |x_j · r_i| over all keys j ≠ i: the gap certificate needs it
    todo, steps = rows, 0
    for n_round in range(1, max_rounds + 1):
        coef[todo], s = _homotopy_rows(X[idx[todo]], X[todo], lam[todo, 0], max_steps)
        steps += s
        bad = []
        for start in range(0, todo.size, block):
            sel = todo[start : start + block]
            R = X[sel] - np.einsum("nk,nkd->nd", coef[sel], X[idx[sel]])
            S = np.abs(R @ X.T)
            S[np.arange(sel.size), sel] = 0.0
            worst[sel] = S.max(1)
            viol = worst[sel] > lam[sel, 0] * (1 + tol)
            if viol.any() and n_round < max_rounds:
                # Refill the working set with the keys most correlated with the residual, the
                # current support first (ranked +inf), then the most violated conditions.
                v, Sv = sel[viol], S[viol]
                r, j = np.nonzero(coef[v])
                Sv[r, idx[v][r, j]] = np.inf
                idx[v] = np.argpartition(-Sv, k - 1, axis=1)[:, :k]
                coef[v] = 0.0
            bad.append(sel[viol])
        todo = np.concatenate(bad)
        if not todo.size:
            break
    C = sp.csr_matrix(
        (coef.ravel(), idx.ravel(), np.arange(0, N * k + 1, k)), shape=(N, N)
    )
    C.eliminate_zeros()
    C.sort_indices()
    primal, gap = _sparse_gap(X, C, lam, worst=worst)
    rel = float(max(gap.sum(), 0.0) / max(primal.sum(), 1e-300))
    return C, SolverInfo(
        "active_set",
        steps,
        max_steps,
        tol,
        rel <= tol and not todo.size,
        rel,
        float(primal.sum()),
        n_round,
        k,
    )


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
    Sec. 3.3) or an active set with the Lasso homotopy (Osborne, Presnell & Turlach 2000;
    You, Li, Robinson & Vidal 2016).
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
            f"SSC stopped at max_iter={max_iter} with relative duality gap {info.rel_gap:.2g} > tol={tol:g}"
        )
    return C, info


def lasso_codes(Y, K, lam: float, max_steps: int = 1000) -> np.ndarray:
    """Exact Lasso codes ``min_c ½‖y − c K‖² + λ‖c‖₁`` of every row ``y`` of Y over the rows of K.

    Parameters
    ----------
    Y : array-like, shape (n_queries, n_features)
        The rows to code.
    K : array-like, shape (n_keys, n_features)
        The dictionary.
    lam : float
        The ℓ1 weight λ.
    max_steps : int
        Homotopy path segments at most.

    Returns
    -------
    C : ndarray, shape (n_queries, n_keys)
        The Lasso codes.

    Implements
    ----------
    Eqs. (16)-(17) of the self-expression paper (rows as tokens), solved exactly by the
    homotopy path (Osborne, Presnell & Turlach 2000) for all queries at once.
    """
    Y, K = as_float_array(host_array(Y), "Y"), as_float_array(host_array(K), "K")
    if Y.ndim != 2 or K.ndim != 2 or Y.shape[1] != K.shape[1]:
        raise ValueError(
            f"Y and K must be 2-D with the same number of features, got {Y.shape} and {K.shape}"
        )
    lam = check_positive(lam, "lam")
    B = np.broadcast_to(K, (len(Y),) + K.shape)
    return _homotopy_rows(
        B, Y, np.full(len(Y), lam), check_int(max_steps, "max_steps")
    )[0]
