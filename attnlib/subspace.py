"""Self-expressive subspace clustering, and the sparse attention obtained by unrolling it.

Self-expressiveness writes every sample as a combination of the *other* samples,
``X ≈ C X`` with ``diag(C) = 0``: a global, signed self-attention whose weights are learned
by solving an optimisation problem rather than computed from a query–key score. Tokens are
rows, so row ``i`` of ``C`` expresses sample ``i`` (``C[query, key]``); the self-expression
paper puts samples in columns and its ``C`` is our ``C.T``.

The sparse (SSC) problem is solved by default with an active set: every sample's Lasso is
solved exactly (homotopy path) on a few candidate keys, vectorised over all samples, and the
sets grow until the optimality conditions hold for *all* keys, so the answer is that of the
full problem (certified by a duality gap). ISTA, FISTA and the ADMM of Elhamifar & Vidal
solve it for all samples at once in matrix form, or on working sets for large ``N``.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import SpectralClustering
from torch import nn

from .attention import AttentionResult, attention
from .utils import as_float_array, as_tensor, check_int, check_positive

__all__ = [
    "soft_threshold",
    "ssc_objective",
    "self_expressive",
    "SolverInfo",
    "affinity",
    "spectral_clustering",
    "clustering_accuracy",
    "SubspaceClustering",
    "sparse_coding_attention",
    "UnrolledISTAAttention",
]

METHODS = ("lsr", "lrsc", "ssc")
SOLVERS = ("active_set", "ista", "fista", "admm")


def soft_threshold(x, threshold):
    """The proximal map of ``threshold * |x|``: ``sign(x) * max(|x| - threshold, 0)``.

    Works on NumPy arrays and (differentiably) on PyTorch tensors.
    """
    if isinstance(x, torch.Tensor):
        return torch.sign(x) * torch.relu(x.abs() - threshold)
    return np.sign(x) * np.maximum(np.abs(x) - threshold, 0.0)


def _lam_column(lam, n: int) -> np.ndarray:
    """``lam`` as an ``(n, 1)`` column: one regularisation weight per sample (row of C)."""
    if np.ndim(lam) == 0:
        return np.full((n, 1), check_positive(lam, "lam"))
    lam = np.asarray(lam, dtype=np.float64)
    if lam.shape != (n,) or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError(f"lam must be a positive number or a positive array of shape ({n},), got shape {lam.shape}")
    return lam[:, None]


def ssc_objective(X, C, lam) -> float:
    """The SSC objective ``½‖X − C X‖_F² + Σᵢ λᵢ ‖C[i]‖₁`` (rows are samples).

    Row ``i`` is the Lasso ``½‖xᵢ − Σⱼ C[i, j] xⱼ‖² + λᵢ‖C[i]‖₁``; scikit-learn's ``Lasso``
    minimises the same problem divided by ``n_features`` with ``alpha = λ / n_features``.

    Implements
    ----------
    Eq. (12) of the self-expression paper, transposed.
    """
    X = as_float_array(X, "X")
    lam = _lam_column(lam, X.shape[0])
    R = X - C @ X
    l1 = np.asarray(abs(C).sum(axis=1)).reshape(-1, 1)
    return float(0.5 * (R * R).sum() + (lam * l1).sum())


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
        return lambda W: (W - np.matmul(np.matmul(self.reconstruct(W)[:, None, :], M), B.transpose(0, 2, 1))[:, 0]) / rho


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
                self.C = keys.restrict(soft_threshold(A + self.dual / rho, lam / rho))
                self.dual += rho * (A - self.C)
            return
        for _ in range(n_steps):
            point = self.Z if self.solver == "fista" else self.C
            grad = keys.correlate(keys.reconstruct(point) - self.Y)
            C_new = keys.restrict(soft_threshold(point - self.step * grad, self.step * lam))
            if self.solver == "fista":
                # Restart the momentum of rows whose last step went uphill (O'Donoghue & Candès).
                uphill = ((point - C_new) * (C_new - self.C)).sum(1, keepdims=True) > 0
                t = np.where(uphill, 1.0, self.t)
                self.t = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
                self.Z = C_new + ((t - 1) / self.t) * (C_new - self.C)
            self.C = C_new


def _lasso_rows(keys, Y, lam, solver, C0, max_iter, tol, rho, polish=True, check_every=20):
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
            C[better], primal[better], gap[better] = C_pol[better], primal_p[better], gap_p[better]
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
    return C_all, SolverInfo(solver, n_iter, max_iter, tol, live.size == 0, rel, float(primal.sum()))


def _top_k_per_row(X, R, k, exclude_rows, block=1024):
    """Indices of the k largest ``|R[i] · X[j]|`` per row, j ≠ exclude_rows[i], blockwise in memory."""
    out = np.empty((R.shape[0], k), dtype=np.int64)
    for s in range(0, R.shape[0], block):
        S = np.abs(R[s : s + block] @ X.T)
        S[np.arange(S.shape[0]), exclude_rows[s : s + block]] = -1.0
        top = np.argpartition(-S, k - 1, axis=1)[:, :k]
        out[s : s + block] = np.take_along_axis(top, np.argsort(-np.take_along_axis(S, top, 1), 1), 1)
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
    k = min(max(k, 2 * X.shape[1]), N - 1)  # room for a support of up to D keys, and more
    rows = np.arange(N)
    idx = _top_k_per_row(X, X, k, rows)  # start from the most correlated samples
    coef = np.zeros((N, k))
    todo = rows
    n_iter = 0
    for n_round in range(1, max_rounds + 1):
        keys = _RestrictedKeys(X, idx[todo])
        coef[todo], info = _lasso_rows(keys, X[todo], lam[todo], solver, coef[todo], max_iter, tol, rho, polish)
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
    C = sp.csr_matrix((coef.ravel(), idx.ravel(), np.arange(0, N * k + 1, k)), shape=(N, N))
    C.eliminate_zeros()
    C.sort_indices()
    primal, gap = _sparse_gap(X, C, lam)
    rel = float(gap.sum() / primal.sum())
    return C, SolverInfo(solver, n_iter, max_iter, tol, rel <= tol and not bad.any(), rel, float(primal.sum()), n_round, k)


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
        d_A = _solve_batch(gram, np.sign(np.take_along_axis(corr, order, 1)) * valid) * valid
        a = np.einsum("nkd,nd->nk", Bl, np.einsum("nm,nmd->nd", d_A, K))
        with np.errstate(divide="ignore", invalid="ignore"):
            # The step γ at which an inactive correlation corr − γa meets +(λ − γ) or −(λ − γ),
            # and at which an active coefficient c_A + γ d_A meets 0.
            up, down, tiny = (lv[:, None] - corr) / (1 - a), (lv[:, None] + corr) / (1 + a), 1e-13 * lv[:, None]
            hit = np.minimum(np.where(up > tiny, up, np.inf), np.where(down > tiny, down, np.inf))
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
    exact = _solve_batch(gram, (np.einsum("nmd,nd->nm", K, Y) - lam[:, None] * signs)) * valid
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
    worst = np.empty(N)  # max_j |x_j · r_i| over all keys j ≠ i: the gap certificate needs it
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
    C = sp.csr_matrix((coef.ravel(), idx.ravel(), np.arange(0, N * k + 1, k)), shape=(N, N))
    C.eliminate_zeros()
    C.sort_indices()
    primal, gap = _sparse_gap(X, C, lam, worst=worst)
    rel = float(max(gap.sum(), 0.0) / max(primal.sum(), 1e-300))
    return C, SolverInfo("active_set", steps, max_steps, tol, rel <= tol and not todo.size, rel, float(primal.sum()), n_round, k)


# ---------------------------------------------------------------------------------------
# Public solvers
# ---------------------------------------------------------------------------------------


def _lsr(X, lam, form, zero_diagonal):
    N, D = X.shape
    if zero_diagonal:
        # Lu et al. (2012), Thm. 3: with Z = (X Xᵀ + λI)⁻¹, C = I − diag(Z)⁻¹ Z.
        Z = (np.eye(N) - X @ np.linalg.solve(lam * np.eye(D) + X.T @ X, X.T)) / lam
        return np.eye(N) - Z / np.diag(Z)[:, None]
    if form == "svd":
        V, sigma, _ = np.linalg.svd(X, full_matrices=False)
        return (V * (sigma**2 / (sigma**2 + lam))) @ V.T
    # (X Xᵀ + λI)⁻¹ X Xᵀ = X (XᵀX + λI)⁻¹ Xᵀ: a D×D solve instead of an N×N one.
    return X @ np.linalg.solve(X.T @ X + lam * np.eye(D), X.T)


def _lrsc(X, lam, form):
    V, sigma, _ = np.linalg.svd(X, full_matrices=False)
    if form == "paper":
        weights = np.maximum(sigma - lam, 0.0)
    elif form == "exact":
        weights = np.maximum(1.0 - lam / sigma**2, 0.0)
    else:  # noiseless: the shape-interaction matrix V₁V₁ᵀ of the data's rank
        weights = (sigma > sigma[0] * max(X.shape) * np.finfo(X.dtype).eps).astype(X.dtype)
    return (V * weights) @ V.T


_FORMS = {"lsr": ("closed", "svd"), "lrsc": ("paper", "exact", "noiseless"), "ssc": (None,)}


def self_expressive(
    X,
    method: str = "ssc",
    lam=0.05,
    *,
    solver: str = "active_set",
    form: str | None = None,
    zero_diagonal: bool = False,
    max_iter: int = 5000,
    tol: float = 1e-7,
    rho: float | None = None,
    working_set="auto",
    polish: bool = True,
    return_info: bool = False,
):
    """Self-expressive coefficients: each sample written as a combination of the others.

    Solves ``min_C ½‖X − C X‖_F² + λ Θ(C)`` with rows as samples, so ``C[i, j]`` is the
    weight that sample ``i`` (the query) puts on sample ``j`` (the key).

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The samples, one per row.
    method : {"ssc", "lsr", "lrsc"}
        ``"ssc"``: Θ = ‖C‖₁ with diag(C) = 0 (sparse subspace clustering);
        ``"lsr"``: Θ = ‖C‖_F² (least-squares regression), closed form;
        ``"lrsc"``: the nuclear norm (low-rank subspace clustering), closed form.
    lam : float or array of shape (n_samples,)
        The regularisation weight λ (for ``"ssc"`` one per sample is allowed). Row i of SSC
        is ``sklearn.linear_model.Lasso(alpha=lam / n_features, fit_intercept=False)``.
    solver : {"active_set", "admm", "fista", "ista"}
        SSC only. ``"active_set"`` (default): each row's Lasso solved exactly by its homotopy
        path on a working set of keys, the set grown by the keys whose optimality condition
        fails, until none does (the oracle-guided active set of You, Li, Robinson & Vidal 2016,
        with an exact inner solve); no N×N iteration is run. Or the ADMM of Elhamifar &
        Vidal (2013), FISTA with adaptive restart, or ISTA, on the full matrix.
    form : str, optional
        ``"lsr"``: ``"closed"`` (default, ``X(XᵀX + λI)⁻¹Xᵀ``) or ``"svd"`` (``V Σ²(Σ² + λ)⁻¹ Vᵀ``).
        ``"lrsc"``: ``"paper"`` (default, ``V ReLU_λ(Σ) Vᵀ``), ``"exact"`` (the minimiser of
        ``½‖X − CX‖² + λ‖C‖_*``, ``V (1 − λ/Σ²)₊ Vᵀ``) or ``"noiseless"`` (Vidal & Favaro's
        ``V₁V₁ᵀ``, λ unused). Here ``X = V Σ Uᵀ``: V holds the left singular vectors of our X.
    zero_diagonal : bool
        ``"lsr"`` only: impose diag(C) = 0 (closed form of Lu et al., 2012).
    max_iter : int
        SSC iteration cap (per working-set round; path segments for ``"active_set"``).
    tol : float
        SSC stops when the duality gap is below ``tol`` times the objective, which bounds the
        relative distance to the optimal objective.
    rho : float, optional
        ADMM penalty (default: a fiftieth of the median squared spectral norm of the keys).
    working_set : "auto", int or None
        SSC: solve on this many candidate keys per sample, growing the sets until the
        optimality conditions hold for every key (exactly the full problem). For the
        iterative solvers ``None`` uses all samples (dense N×N iterations) and ``"auto"`` 64
        keys when n_samples > 1500; ``"active_set"`` always works on sets (48 keys for
        ``"auto"`` or ``None``).
    polish : bool
        SSC: every few iterations, also try the exact solution on each sample's current
        support and signs, and keep it where it lowers the duality gap (the solver then
        stops as soon as it has found the support).
    return_info : bool
        Also return a :class:`SolverInfo`.

    Returns
    -------
    C : ndarray of shape (n_samples, n_samples), or a scipy.sparse CSR matrix when SSC runs on
        working sets (an int ``working_set``, or ``"auto"`` with n_samples > 1500)
    info : SolverInfo, only if ``return_info``

    Implements
    ----------
    Eqs. (12)-(15) of the self-expression paper (rows as samples): LSR (§5.2, Lu et al. 2012),
    LRSC (§5.2, Vidal & Favaro 2014), SSC by ISTA (Eq. 15), FISTA (Beck & Teboulle 2009),
    ADMM (Elhamifar & Vidal 2013, Sec. 3.3) and an active set with the Lasso homotopy
    (Osborne, Presnell & Turlach 2000; You, Li, Robinson & Vidal 2016).
    """
    X = as_float_array(X, "X", min_samples=2)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    forms = _FORMS[method]
    form = forms[0] if form is None else form
    if form not in forms:
        raise ValueError(f"form must be one of {forms} for method {method!r}, got {form!r}")
    if method != "ssc":
        lam = check_positive(lam, "lam")
        C = _lsr(X, lam, form, zero_diagonal) if method == "lsr" else _lrsc(X, lam, form)
        info = SolverInfo(f"{method} closed form", 0, 0, 0.0, True, 0.0, float("nan"))
        return (C, info) if return_info else C
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    lam = _lam_column(lam, X.shape[0])
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    rho = None if rho is None else check_positive(rho, "rho")
    if solver == "active_set":
        k = 48 if working_set in ("auto", None) else check_int(working_set, "working_set", minimum=2)
        C, info = _ssc_active_set(X, lam, k, tol, max_iter)
        if working_set is None or (working_set == "auto" and X.shape[0] <= 1500):
            C = C.toarray()
    else:
        if working_set == "auto":
            working_set = 64 if X.shape[0] > 1500 else None
        if working_set is None:
            C, info = _lasso_rows(_DenseKeys(X), X, lam, solver, np.zeros((len(X), len(X))), max_iter, tol, rho, polish)
        else:
            k = check_int(working_set, "working_set", minimum=2)
            C, info = _ssc_working_set(X, lam, solver, k, max_iter, tol, rho, polish)
    if not info.converged:
        warnings.warn(f"SSC stopped at max_iter={max_iter} with relative duality gap {info.rel_gap:.2g} > tol={tol:g}")
    return (C, info) if return_info else C


def _as_coefficients(C, name="C"):
    if sp.issparse(C):
        C = sp.csr_matrix(C, dtype=np.float64)
        if C.ndim != 2 or C.shape[0] != C.shape[1] or not np.all(np.isfinite(C.data)):
            raise ValueError(f"{name} must be a square finite matrix, got shape {C.shape}")
        return C
    C = as_float_array(C, name)
    if C.shape[0] != C.shape[1]:
        raise ValueError(f"{name} must be square (n_samples, n_samples), got shape {C.shape}")
    return C


def affinity(C, *, normalize: str | None = None, keep: int | None = None):
    """The symmetric affinity ``|C| + |C|ᵀ`` of self-expressive coefficients.

    Parameters
    ----------
    C : array or scipy.sparse matrix, shape (n_samples, n_samples)
    normalize : {None, "l1", "l2", "max"}
        Scale each row of ``|C|`` to unit ℓ1 norm, ℓ2 norm or maximum before symmetrising
        (Elhamifar & Vidal normalise every sample's coefficients).
    keep : int, optional
        Keep only the ``keep`` largest ``|C[i, j]|`` of every row (the rest set to 0).

    Returns
    -------
    A : same kind as C (ndarray or CSR), shape (n_samples, n_samples), symmetric, ≥ 0

    Implements
    ----------
    §5.1 of the self-expression paper (``A = |C| + |Cᵀ|``); Elhamifar & Vidal (2013), Sec. 3.
    """
    C = _as_coefficients(C)
    if normalize not in (None, "l1", "l2", "max"):
        raise ValueError(f"normalize must be None, 'l1', 'l2' or 'max', got {normalize!r}")
    keep = None if keep is None else check_int(keep, "keep")
    W = abs(C)
    if keep is not None:
        W = _keep_largest(W, keep)
    if normalize is not None:
        if sp.issparse(W):
            data = W.multiply(W) if normalize == "l2" else W
            scale = (data.max(1).toarray() if normalize == "max" else np.asarray(data.sum(1))).ravel()
        else:
            scale = {"l1": W.sum(1), "l2": (W * W).sum(1), "max": W.max(1)}[normalize]
        scale = np.sqrt(scale) if normalize == "l2" else scale
        inv = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale > 0)
        W = sp.diags(inv) @ W if sp.issparse(W) else W * inv[:, None]
    return (W + W.T).tocsr() if sp.issparse(W) else W + W.T


def _keep_largest(W, keep):
    if not sp.issparse(W):
        if keep >= W.shape[1]:
            return W
        cut = -np.partition(-W, keep - 1, axis=1)[:, keep - 1 : keep]
        return np.where(W >= cut, W, 0.0)
    W = W.tocsr(copy=True)
    for i in range(W.shape[0]):
        row = W.data[W.indptr[i] : W.indptr[i + 1]]
        if row.size > keep:
            row[row < -np.partition(-row, keep - 1)[keep - 1]] = 0.0
    W.eliminate_zeros()
    return W


def spectral_clustering(A, n_clusters: int, *, random_state: int = 0, assign_labels: str = "kmeans", eigen_solver: str = "auto") -> np.ndarray:
    """Cluster the samples of a symmetric non-negative affinity ``A`` with scikit-learn.

    Parameters
    ----------
    A : array or scipy.sparse matrix, shape (n_samples, n_samples)
    n_clusters : int
    random_state : int
    assign_labels : {"kmeans", "discretize", "cluster_qr"}
        How scikit-learn turns the spectral embedding into labels.
    eigen_solver : {"auto", "arpack", "lobpcg"}
        scikit-learn's eigensolver; ``"auto"`` is ARPACK up to 2 000 samples and LOBPCG above,
        where ARPACK's shift-invert factorisation of a sparse graph gets slow (≈ 20× at 10 000).

    Returns
    -------
    labels : ndarray of shape (n_samples,)

    Implements
    ----------
    Normalised spectral clustering (Ng, Jordan & Weiss 2001; von Luxburg 2007) through
    ``sklearn.cluster.SpectralClustering(affinity="precomputed")``.
    """
    A = _as_coefficients(A, "A")
    n_clusters = check_int(n_clusters, "n_clusters", maximum=A.shape[0])
    if eigen_solver not in ("auto", "arpack", "lobpcg"):
        raise ValueError(f"eigen_solver must be 'auto', 'arpack' or 'lobpcg', got {eigen_solver!r}")
    if eigen_solver == "auto":
        eigen_solver = "lobpcg" if A.shape[0] > 2000 else "arpack"
    values = A.data if sp.issparse(A) else A
    if np.any(values < 0) or abs(A - A.T).max() > 1e-10 * max(abs(values).max(), 1e-300):
        raise ValueError("A must be symmetric with non-negative entries")
    model = SpectralClustering(
        n_clusters, affinity="precomputed", random_state=random_state, assign_labels=assign_labels, eigen_solver=eigen_solver
    )
    with warnings.catch_warnings():
        # A disconnected graph is what a perfect affinity looks like; nothing to warn about.
        warnings.filterwarnings("ignore", message="Graph is not fully connected")
        return model.fit_predict(A)


def clustering_accuracy(y_true, y_pred) -> float:
    """The fraction of samples whose cluster is right, under the best matching of cluster names.

    Implements
    ----------
    The accuracy of the subspace-clustering literature (1 − the clustering error of
    Elhamifar & Vidal 2013), with the matching found by ``scipy.optimize.linear_sum_assignment``.
    """
    y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if y_true.size == 0 or y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must be non-empty and of the same length, got {y_true.size} and {y_pred.size}")
    _, t = np.unique(y_true, return_inverse=True)
    _, p = np.unique(y_pred, return_inverse=True)
    counts = np.zeros((t.max() + 1, p.max() + 1), dtype=np.int64)
    np.add.at(counts, (t, p), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / y_true.size)


class SubspaceClustering(ClusterMixin, BaseEstimator):
    """Self-expressive subspace clustering as a scikit-learn estimator.

    Computes the self-expressive coefficients with :func:`self_expressive`, the affinity
    with :func:`affinity` and the labels with :func:`spectral_clustering`.

    Parameters
    ----------
    n_clusters : int
    method, lam, solver, form, zero_diagonal, working_set, tol, max_iter : see :func:`self_expressive`
    normalize, keep : see :func:`affinity`
    random_state : int

    Attributes
    ----------
    coef_ : ndarray or CSR of shape (n_samples, n_samples)
    affinity_matrix_ : ndarray or CSR of shape (n_samples, n_samples)
    labels_ : ndarray of shape (n_samples,)
    solver_info_ : SolverInfo

    Implements
    ----------
    §5.1 of the self-expression paper: coefficients (Eq. 13), affinity, spectral clustering.
    """

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        method: str = "ssc",
        lam=0.05,
        solver: str = "active_set",
        form: str | None = None,
        zero_diagonal: bool = False,
        working_set="auto",
        tol: float = 1e-7,
        max_iter: int = 5000,
        normalize: str | None = None,
        keep: int | None = None,
        random_state: int = 0,
    ):
        self.n_clusters = n_clusters
        self.method = method
        self.lam = lam
        self.solver = solver
        self.form = form
        self.zero_diagonal = zero_diagonal
        self.working_set = working_set
        self.tol = tol
        self.max_iter = max_iter
        self.normalize = normalize
        self.keep = keep
        self.random_state = random_state

    def fit(self, X, y=None):
        """Compute ``coef_``, ``affinity_matrix_`` and ``labels_`` for ``X`` (n_samples, n_features)."""
        self.coef_, self.solver_info_ = self_expressive(
            X, self.method, self.lam, solver=self.solver, form=self.form, zero_diagonal=self.zero_diagonal,
            working_set=self.working_set, tol=self.tol, max_iter=self.max_iter, return_info=True,
        )  # fmt: skip
        self.affinity_matrix_ = affinity(self.coef_, normalize=self.normalize, keep=self.keep)
        self.labels_ = spectral_clustering(self.affinity_matrix_, self.n_clusters, random_state=self.random_state)
        return self


# ---------------------------------------------------------------------------------------
# Sparse coding as attention (§5.4)
# ---------------------------------------------------------------------------------------


def _ista_codes(q, k, lam, n_iter, step, nonnegative, kk=None):
    """Unrolled ISTA on ``min_C ½‖Q − C K‖² + λ‖C‖₁`` (rows): returns C (..., n_q, n_k)."""
    qk = attention(q, k, k, score="dot", normalizer="none").weights  # Q Kᵀ: attention
    if kk is None:
        kk = attention(k, k, k, score="dot", normalizer="none").weights  # K Kᵀ: self-attention
    if step is None:
        step = 1.0 / torch.linalg.matrix_norm(k, ord=2).square().clamp_min(1e-12)[..., None, None]
    shrink = (lambda z, t: torch.relu(z - t)) if nonnegative else soft_threshold
    C = torch.zeros_like(qk)
    for t in range(n_iter):
        s_t = step[t] if isinstance(step, (list, tuple)) else step
        lam_t = lam[t] if isinstance(lam, (list, tuple)) else lam
        C = shrink(C - s_t * (C @ kk - qk), s_t * lam_t)
    return C


def sparse_coding_attention(q, k, v, lam: float, n_iter: int = 100, step: float | None = None, *, nonnegative: bool = False) -> AttentionResult:
    """Attention whose weights are sparse codes of the queries over the keys, by unrolled ISTA.

    ``C_{t+1} = shrink_{ελ}(C_t (I − ε K Kᵀ) + ε Q Kᵀ)`` from ``C_0 = 0``: ``Q Kᵀ`` is dot-product
    attention and ``K Kᵀ`` dot-product self-attention of the keys; the output is ``C V``. With
    many iterations ``C`` solves the Lasso ``min ½‖Q − C K‖² + λ‖C‖₁`` row by row.

    Parameters
    ----------
    q : tensor, shape (..., n_q, d)
    k : tensor, shape (..., n_k, d)
    v : tensor, shape (..., n_k, d_v)
    lam : float
        The ℓ1 weight λ.
    n_iter : int
        Unrolled iterations (layers).
    step : float, optional
        ε; default ``1 / ‖K‖₂²`` (per batch element), which guarantees convergence.
    nonnegative : bool
        Use the paper's one-sided ``ReLU_λ(x) = max(x − λ, 0)`` (a non-negative Lasso) instead
        of the two-sided soft threshold.

    Returns
    -------
    AttentionResult
        ``output`` (..., n_q, d_v) and the sparse, signed weights ``C`` (..., n_q, n_k).

    Implements
    ----------
    Eqs. (17)-(18) of the self-expression paper (rows as tokens, so its C is our Cᵀ).
    """
    q = as_tensor(q, "q", min_ndim=2)
    k = as_tensor(k, "k", min_ndim=2, dtype=q.dtype, device=q.device)
    v = as_tensor(v, "v", min_ndim=2, dtype=q.dtype, device=q.device)
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"q, k, v have incompatible shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    lam = check_positive(lam, "lam")
    n_iter = check_int(n_iter, "n_iter")
    step = None if step is None else check_positive(step, "step")
    C = _ista_codes(q, k, lam, n_iter, step, nonnegative)
    return AttentionResult(C @ v, C)


class UnrolledISTAAttention(nn.Module):
    """A sparse attention layer: a few unrolled ISTA steps coding the queries over the keys.

    Queries, keys and values are learned projections of the tokens, as in
    :class:`attnlib.attention.MultiHeadAttention` (same four ``d×d`` maps); each of the
    ``n_iter`` layers has its own learned step ``ε_t`` (relative to ``1/‖K‖²``) and threshold
    ``λ_t`` (LISTA, Gregor & LeCun 2010). With ``lista=True`` the self-attention map
    ``I − ε K Kᵀ`` uses its own learned key projection, decoupled from the ``ε Q Kᵀ`` map.

    Parameters
    ----------
    embed_dim : int
    n_iter : int
        Unrolled iterations.
    lam : float
        Initial threshold λ.
    lista : bool
        Learn a separate key map for the ``K Kᵀ`` term (adds ``embed_dim²`` parameters).
    nonnegative : bool
        One-sided threshold as in the paper's Eq. (18).

    Implements
    ----------
    Eq. (18) and Figure 4 of the self-expression paper, with learned (LISTA) maps.
    """

    def __init__(self, embed_dim: int, n_iter: int = 4, lam: float = 0.1, *, lista: bool = False, nonnegative: bool = False, bias: bool = True):
        super().__init__()
        embed_dim, n_iter = check_int(embed_dim, "embed_dim"), check_int(n_iter, "n_iter")
        lam = check_positive(lam, "lam")
        self.embed_dim, self.n_iter, self.nonnegative = embed_dim, n_iter, nonnegative
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(embed_dim, embed_dim, bias=bias) for _ in range(4))
        self.s_proj = nn.Linear(embed_dim, embed_dim, bias=bias) if lista else None
        # softplus⁻¹ of the initial values: unit relative step, threshold λ.
        self.raw_step = nn.Parameter(torch.full((n_iter,), math.log(math.e - 1)))
        self.raw_lam = nn.Parameter(torch.full((n_iter,), math.log(math.expm1(lam))))

    def forward(self, x, key=None, value=None) -> AttentionResult:
        """Attend from ``x`` ``(..., n_q, embed_dim)`` to ``key``/``value`` (default ``x``); returns output and C."""
        x = as_tensor(x, "x", min_ndim=2)
        key = x if key is None else as_tensor(key, "key", min_ndim=2)
        value = key if value is None else as_tensor(value, "value", min_ndim=2)
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have {self.embed_dim} features, got {x.shape[-1]}")
        q, k, v = self.q_proj(x), self.k_proj(key), self.v_proj(value)
        s = k if self.s_proj is None else self.s_proj(key)
        kk = attention(s, s, s, score="dot", normalizer="none").weights
        base = 1.0 / torch.linalg.matrix_norm(s, ord=2).square().clamp_min(1e-12)[..., None, None]
        steps = [base * torch.nn.functional.softplus(r) for r in self.raw_step]
        lams = list(torch.nn.functional.softplus(self.raw_lam))
        C = _ista_codes(q, k, lams, self.n_iter, steps, self.nonnegative, kk=kk)
        return AttentionResult(self.out_proj(C @ v), C)
