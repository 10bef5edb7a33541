"""Chapter 04's experiment helpers: softmax attention on LLE's mask, and closed groups.

Neither is LLE itself (that is :mod:`attnlib.lle`): the first builds the convex
competitor that chapter 04 sets against LLE's affine weights, the second finds the
pieces of a kNN graph that make LLE's embedding collapse.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components

from ..attention import attention
from ..lle import lle_weights
from ..utils import as_float_array, check_int, host_array

__all__ = ["closed_groups", "knn_softmax_weights"]


def knn_softmax_weights(X, n_neighbors: int) -> np.ndarray:
    """Softmax attention of each point on its ``n_neighbors`` nearest (LLE's mask).

    The score is the Gaussian ``-‖x_j - x_i‖² / 2τ`` with ``τ`` the median squared
    distance from a point to its neighbours, so the temperature is at the neighbours'
    scale.

    Parameters
    ----------
    X : array-like, shape (n, D)
        The points, one per row.
    n_neighbors : int
        ``K``, the keys each query may see (itself excluded), as in
        :func:`attnlib.lle.lle_weights`.

    Returns
    -------
    ndarray, shape (n, n)
        Row-stochastic ``[query, key]`` weights, zero outside the kNN mask.

    Implements
    ----------
    Not in the self-expression paper: kernel regression (Eq. 6) restricted to LLE's mask
    of §4, the convex counterpart of LLE's affine weights.
    """
    X = as_float_array(host_array(X), "X")
    n_neighbors = check_int(n_neighbors, "n_neighbors")
    _, mask, nbr = lle_weights(X, n_neighbors, dense=True)
    tau = float(np.median(((X[:, None] - X[nbr]) ** 2).sum(-1)))
    Xt = torch.from_numpy(X)
    return attention(
        Xt, Xt, Xt, score="neg_sq_dist", mask=torch.from_numpy(mask), temperature=tau
    ).weights.numpy()


def closed_groups(mask) -> tuple[np.ndarray, int]:
    """Pieces of a directed kNN graph that no edge leaves.

    A closed group is a strongly connected component with no edge from it to the rest:
    its points attend only to each other, so on it LLE's weights reproduce constants and
    the group's indicator is (up to the other points) a null vector of ``I - W``.

    Parameters
    ----------
    mask : array-like or sparse matrix of bool, shape (n, n)
        ``mask[j, i]`` is True when query ``j`` may attend to key ``i``.

    Returns
    -------
    labels : ndarray of int, shape (n,)
        Index of the closed group of each point, ``-1`` for points in none.
    n_groups : int
    """
    try:
        mask = sp.csr_matrix(mask) if not sp.issparse(mask) else mask.tocsr()
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"mask must be a square (n, n) boolean matrix, got {type(mask).__name__}"
        ) from err
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        raise ValueError(f"mask must be a square (n, n) matrix, got shape {mask.shape}")
    _, piece = connected_components(mask, connection="strong")
    rows, cols = mask.nonzero()
    leaky = np.unique(piece[rows][piece[rows] != piece[cols]])
    closed = np.setdiff1d(np.unique(piece), leaky)
    labels = np.where(np.isin(piece, closed), np.searchsorted(closed, piece), -1)
    return labels, len(closed)
