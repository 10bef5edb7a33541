"""The exact Lasso by its homotopy path, and the active-set SSC solver built on it.

With D features, row i's Lasso has a D-dimensional dual and an optimum with at most D
non-zeros, so each row is solved exactly by the homotopy (LARS-Lasso) path on a small
working set of keys, vectorised over all rows; one product with X then finds the keys
outside the set whose optimality condition fails, they join the set, and the rows that
had any are solved again. No N×N iteration is ever run.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .common import SolverInfo, _sparse_gap, _top_k_per_row

__all__ = ["homotopy_rows", "ssc_active_set"]


def _solve_batch(G, b):
    """Batched ``G⁻¹ b``; a singular Gram (duplicated samples) goes through pinv."""
    try:
        return np.linalg.solve(G, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.matmul(np.linalg.pinv(G, hermitian=True), b[..., None])[..., 0]


def _active_system(B, active):
    """The active keys of every row, packed first.

    Returns positions (n, m), the validity mask and the keys (n, m, D).
    """
    m = max(int(active.sum(1).max()), 1)
    order = np.argsort(~active, axis=1, kind="stable")[:, :m]
    valid = np.take_along_axis(active, order, 1)
    K = np.take_along_axis(B, order[:, :, None], 1) * valid[:, :, None]
    gram = np.matmul(K, K.transpose(0, 2, 1)) + np.eye(m) * ~valid[:, None, :]
    return order, valid, K, gram


def homotopy_rows(B, Y, lam, max_steps=1000):
    """Exact Lasso ``min_c ½‖y − Σⱼ cⱼ bⱼ‖² + λ‖c‖₁`` per row, by the homotopy path.

    Starting from ``c = 0`` at ``λ = max |B y|``, λ decreases; on each segment the
    active coefficients move along ``(K_A K_Aᵀ)⁻¹ s_A`` until a key's correlation
    reaches ±λ (it enters) or an active coefficient reaches 0 (it leaves). All rows step
    together.

    Parameters
    ----------
    B : (n, k, D) the keys of each row;  Y : (n, D) the targets;
    lam : (n,) the weights.

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
            # The step γ at which an inactive correlation corr − γa meets +(λ − γ) or
            # −(λ − γ), and at which an active coefficient c_A + γ d_A meets 0.
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
    """Re-solve ``c_S = (K_S K_Sᵀ)⁻¹ (K_S y − λ s)`` on each row's support and signs.

    This removes the rounding the path accumulated; kept only where the signs agree.
    """
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


def ssc_active_set(X, lam, k, tol, max_steps, max_rounds=50, block=1024):
    """SSC by exact homotopy on working sets of k keys, grown by violating keys.

    A key joins a row's set when its optimality condition fails for that row; the
    rounds stop when none does (or after ``max_rounds``).
    """
    N, D = X.shape
    k = min(max(k, D + 1), N - 1)
    rows = np.arange(N)
    idx = _top_k_per_row(X, X, k, rows)  # first guess: the most correlated samples
    coef = np.zeros((N, k))
    # max_j |x_j · r_i| over all keys j ≠ i: the gap certificate needs it
    worst = np.empty(N)
    todo, steps = rows, 0
    for n_round in range(1, max_rounds + 1):
        coef[todo], s = homotopy_rows(X[idx[todo]], X[todo], lam[todo, 0], max_steps)
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
                # Refill the working set with the keys most correlated with the
                # residual, the current support first (ranked +inf), then the most
                # violated conditions.
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
