"""K-subspaces: refine a clustering by fitting a subspace per cluster and reassigning.

Spectral clustering of self-expressive coefficients errs where the coefficients do: a
point near the intersection of two subspaces is often written with points of the other
one. K-subspaces (Bradley & Mangasarian 2000; Tseng 2000) alternates two steps that
need no coefficients at all: fit a linear subspace to each cluster by its SVD, then give
every point to the subspace that leaves the smallest residual. Started from the SSC
labels, a few rounds move the points near intersections to the subspace they lie on.
K-subspaces is sensitive to its start (Vidal 2011), but on unions of linear subspaces
of one dimension, its own model, it often recovers the clusters even from a
chance-level start (k-means labels; chapter 05 measures it): there a refined accuracy
credits K-subspaces, not the coefficients it started from.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..utils import as_float_array, check_int, check_positive
from ..utils.boundary import checking, public

__all__ = ["subspace_dimension", "k_subspaces"]


@public
def subspace_dimension(X, *, energy: float = 0.95) -> int:
    """The dimension of the smallest linear subspace that keeps ``energy`` of ``X``.

    The smallest ``d`` with ``σ₁² + … + σ_d² ≥ energy · ‖X‖_F²``, the
    explained-variance rule of PCA for a subspace through the origin, at most
    ``min(X.shape) - 1``, so that the subspace neither fills the space nor passes
    through every point of ``X``.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        Points on (or near) one linear subspace, one per row.
    energy : float
        The share of ``‖X‖_F²`` to keep, in (0, 1].

    Returns
    -------
    int
        ``d``, between 1 and ``max(min(X.shape) - 1, 1)``.

    Implements
    ----------
    The explained-variance rule for the dimension of a principal subspace (Jolliffe,
    *Principal Component Analysis*, 2002, §6.1.1), uncentred.
    """
    if checking():
        X = as_float_array(X, "X")
        if check_positive(energy, "energy") > 1:
            raise ValueError(f"energy must be in (0, 1], got {energy!r}")
    kept = np.cumsum(np.linalg.svd(X, compute_uv=False) ** 2)
    d = int(np.searchsorted(kept, energy * kept[-1] * (1 - 1e-12))) + 1
    return max(min(d, min(X.shape) - 1), 1)


def _residuals(X, labels, n_clusters, dim):
    """``‖xᵢ − BₖBₖᵀxᵢ‖²`` for every point and every cluster's fitted basis Bₖ.

    Computed from the residual vector, not as ``‖xᵢ‖² − ‖Bₖᵀxᵢ‖²``, which loses all
    digits for a point on (or very near) the subspace."""
    out = np.empty((X.shape[0], n_clusters))
    for k in range(n_clusters):
        basis = np.linalg.svd(X[labels == k], full_matrices=False)[2][:dim]
        R = X - (X @ basis.T) @ basis
        out[:, k] = (R * R).sum(1)
    return out


@public
def k_subspaces(X, labels, *, dim: int | None = None, max_iter: int = 300):
    """Refine cluster labels by K-subspaces: fit a subspace per cluster, reassign.

    Every round fits, to the points of each cluster, the linear subspace of dimension
    ``dim`` by its SVD, and moves each point to the subspace with the smallest squared
    residual; a point whose residual to its current subspace is the smallest up to
    rounding (``1e-12 ‖xᵢ‖²``) keeps its label, so that ties (a point on an
    intersection) neither move it nor keep the rounds going. It stops when no label
    changes, after ``max_iter`` rounds (with a ``ConvergenceWarning``), or before a
    round that would leave a cluster with no more points than ``dim`` (those labels are
    kept). No round raises the
    total residual at a given ``dim`` (each step minimises it over the labels or over
    the bases); labels that no round changes are a local minimum, and which one
    depends on the start.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The points, one per row (linear subspaces: no centring).
    labels : array-like, shape (n_samples,)
        The starting clustering, e.g. spectral clustering of SSC's affinity.
    dim : int, optional
        The dimension of every subspace, below ``n_features``. Default: the (lower)
        median over the current clusters of :func:`subspace_dimension`, read again
        every round (one dimension for all, so that a cluster that holds stray points
        does not read as larger and keep them; read again, because at the start the
        strays inflate most clusters, and a subspace larger than the true one fits a
        stray point exactly).
    max_iter : int
        Largest number of rounds (started from k-means on the book's subspaces it took
        12 in median and up to 61 over 120 draws; 30, the old default, cut 8 of them
        short).

    Returns
    -------
    labels : ndarray, shape (n_samples,)
        The refined labels, named as in the input.
    n_iter : int
        Rounds that changed a label.

    Implements
    ----------
    K-subspaces (k-plane clustering of Bradley & Mangasarian 2000, for subspaces of any
    dimension as in Tseng 2000), started from a given clustering; not part of the
    self-expression paper. Where it departs from both: linear subspaces through the
    origin (their planes and flats have offsets), one dimension for all read from the
    clusters, ties kept, and a stop where a round would leave a cluster too small to
    fit.
    """
    if checking():
        X = as_float_array(X, "X")
        labels = np.asarray(labels).ravel()
        if np.issubdtype(labels.dtype, np.floating) and not np.isfinite(labels).all():
            raise ValueError("labels contains NaN or infinite values")
        if labels.shape != (X.shape[0],):
            raise ValueError(
                f"labels must have one entry per sample ({X.shape[0]}), got "
                f"{labels.shape}"
            )
        if dim is not None:  # a subspace that fills the space explains every point
            dim = check_int(dim, "dim", maximum=X.shape[1] - 1)
        max_iter = check_int(max_iter, "max_iter", minimum=0)
    names, current = np.unique(labels, return_inverse=True)
    n_clusters, n_iter, read_dim = len(names), 0, dim is None
    rows, tie = np.arange(X.shape[0]), 1e-12 * (X * X).sum(1)
    for _ in range(max_iter):
        if read_dim:  # re-read every round: stray points inflate the first reading
            dims = sorted(
                subspace_dimension(X[current == k]) for k in range(n_clusters)
            )
            dim = dims[(n_clusters - 1) // 2]
        res = _residuals(X, current, n_clusters, dim)
        best = res.argmin(1)
        stay = res[rows, current] <= res[rows, best] + tie  # ties keep the label
        new = np.where(stay, current, best)
        counts = np.bincount(new, minlength=n_clusters)
        if np.array_equal(new, current) or counts.min() <= dim:
            break
        current, n_iter = new, n_iter + 1
    else:
        if max_iter:  # every round moved a label, the last one too
            warnings.warn(
                f"K-subspaces stopped at max_iter={max_iter} with labels still moving",
                ConvergenceWarning,
                stacklevel=3,  # the caller of k_subspaces (or of the estimator's fit)
            )
    return names[current], n_iter
