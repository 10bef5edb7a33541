"""What every row-wise Lasso solver shares: the shrinkage, the weights, the certificate.

Row ``i`` of the SSC problem is the Lasso ``min_c ½‖xᵢ − Σⱼ cⱼ xⱼ‖² + λᵢ‖c‖₁`` (j ≠ i).
Its proximal map is the soft threshold; its optimum is certified by a duality gap,
computed here for a sparse ``C`` with every sample as a key; the working-set solvers
start from the keys most correlated with each target.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = ["SolverInfo", "soft_threshold"]


def soft_threshold(x, threshold):
    """``sign(x) * max(|x| - threshold, 0)`` on checked input (see
    :func:`attnlib.subspace.soft_threshold`), for the solvers' inner loops."""
    if isinstance(x, torch.Tensor):
        return torch.sign(x) * torch.relu(x.abs() - threshold)
    return np.sign(x) * np.maximum(np.abs(x) - threshold, 0.0)


class SolverInfo(NamedTuple):
    """How a solve went: iterations, and whether the relative gap reached ``tol``."""

    solver: str
    n_iter: int
    max_iter: int
    tol: float
    converged: bool
    rel_gap: float  # certified bound on (objective - optimum) / objective
    objective: float
    n_rounds: int = 1  # working-set rounds (1 for the dense solve)
    working_set: int = 0  # final candidate keys per sample (0: all samples)


def _top_k_per_row(X, R, k, exclude_rows, block=1024):
    """Indices of the k largest ``|R[i] · X[j]|`` per row, j ≠ exclude_rows[i].

    Computed blockwise, so that memory stays bounded.
    """
    out = np.empty((R.shape[0], k), dtype=np.int64)
    for s in range(0, R.shape[0], block):
        S = np.abs(R[s : s + block] @ X.T)
        S[np.arange(S.shape[0]), exclude_rows[s : s + block]] = -1.0
        top = np.argpartition(-S, k - 1, axis=1)[:, :k]
        out[s : s + block] = np.take_along_axis(
            top, np.argsort(-np.take_along_axis(S, top, 1), 1), 1
        )
    return out


def _sparse_gap(X, C, lam, block=1024, worst=None):
    """``_duality_gap`` for a sparse C with every sample as a key, X Xᵀ blockwise.

    ``worst`` (``max_{j≠i} |x_j · r_i|`` per row), if the caller already has it, saves
    that pass.
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
