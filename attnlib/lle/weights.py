"""LLE's first two steps: each query's neighbours, and its weights on them.

Each point (a *query*) writes itself as an affine combination of its ``K`` nearest
neighbours (the *keys*, which are also the *values*). The coefficients are the rows of a
``[query, key]`` weight matrix ``W``, zero outside the k-nearest-neighbour *mask*, whose
rows sum to one: ``lle_weights`` as sparse or dense matrices, ``lle_attention`` as a
call of ``attnlib.functional.attention``, both through ``barycenter_weights``, the
closed form for all queries at once.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.neighbors import NearestNeighbors

from ..functional import AttentionResult, attend
from ..utils import as_float_array, as_tensor, check_positive
from ..utils.boundary import checking, public

__all__ = ["LLEWeights", "barycenter_weights", "lle_weights", "lle_attention"]


class LLEWeights(NamedTuple):
    """What :func:`lle_weights` returns, all indexed ``[query, key]``.

    ``weights`` ``(n_queries, n_keys)``: the affine reconstruction weights (rows sum to
    one); ``mask`` ``(n_queries, n_keys)``: True where a key is one of the query's
    neighbours; ``neighbors`` ``(n_queries, n_neighbors)``: the neighbours' indices,
    nearest first. ``weights`` and ``mask`` are SciPy CSR matrices, or dense NumPy
    arrays with ``dense=True``.
    """

    weights: sp.csr_matrix | np.ndarray
    mask: sp.csr_matrix | np.ndarray
    neighbors: np.ndarray


@public
def barycenter_weights(queries, neighbors, reg: float = 1e-3) -> torch.Tensor:
    """Affine weights reconstructing each query from its neighbours, all at once.

    Parameters
    ----------
    queries : tensor, shape (n, d)
        The points to reconstruct.
    neighbors : tensor, shape (n, K, d)
        Each query's ``K`` neighbours.
    reg : float
        Regulariser: ``reg · trace(G)`` (``reg`` if the trace is zero) is added to the
        diagonal of each local Gram matrix ``G``, as scikit-learn does, so that ``G`` is
        invertible when ``K > d``. With ``reg=0`` (or one below the dtype's resolution)
        the constrained least-squares problem is solved through its KKT system, which
        needs no inverse of ``G`` and gives the limit ``reg -> 0``.

    Returns
    -------
    tensor, shape (n, K)
        ``c = G⁻¹1 / 1ᵀG⁻¹1`` for each query; each row sums to one. Differentiable. Its
        dtype is the inputs' common one (float16 and bfloat16 are solved in float32).

    Implements
    ----------
    The closed form in footnote 1 of the self-expression paper (the minimiser of Eq. 9
    for one query), with the regularisation of Roweis & Saul (2000).
    """
    if checking():
        queries = as_tensor(queries, "queries", ndim=2)
        neighbors = as_tensor(neighbors, "neighbors", ndim=3, device=queries.device)
        if (
            neighbors.shape[0] != queries.shape[0]
            or neighbors.shape[2] != queries.shape[1]
        ):
            raise ValueError(
                f"neighbors must have shape (n, K, d) = ({queries.shape[0]}, K, "
                f"{queries.shape[1]}), got {tuple(neighbors.shape)}"
            )
        reg = check_positive(reg, "reg", allow_zero=True)
    # The result has the inputs' common dtype; half precisions are solved in float32
    # (LAPACK has no half solvers) and rounded back.
    dtype = torch.promote_types(queries.dtype, neighbors.dtype)
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    diff = neighbors.to(work) - queries.to(work).unsqueeze(1)
    # The weights do not change when a query's differences are scaled (the ridge scales
    # with the trace): scaling each by its largest entry keeps the Gram matrix finite.
    scale = diff.detach().abs().amax(dim=(1, 2), keepdim=True)
    diff = diff / torch.where(scale > 0, scale, torch.ones_like(scale))
    gram = diff @ diff.transpose(1, 2)
    trace = gram.diagonal(dim1=1, dim2=2).sum(-1)
    ridge = torch.where(trace > 0, reg * trace, torch.full_like(trace, reg))
    gram = gram + ridge[:, None, None] * torch.eye(
        gram.shape[-1], dtype=gram.dtype, device=gram.device
    )
    # A ridge below the rounding of the diagonal is no ridge: solve the unregularised
    # problem, whose minimiser is the limit reg -> 0, rather than a singular system.
    if reg < torch.finfo(work).eps:
        return _constrained_least_squares(gram).to(dtype)
    ones = torch.ones(*gram.shape[:2], 1, dtype=gram.dtype, device=gram.device)
    w, info = torch.linalg.solve_ex(gram, ones)
    w = w.squeeze(-1)
    w = w / w.sum(-1, keepdim=True)
    if (failed := info != 0).any():  # singular despite the ridge: its limit, as above
        w = torch.where(failed[:, None], _constrained_least_squares(gram), w)
    return w.to(dtype)


def _constrained_least_squares(gram: torch.Tensor) -> torch.Tensor:
    """Minimise ``cᵀGc`` subject to ``1ᵀc = 1`` without inverting ``G``.

    Without a regulariser ``G`` is singular whenever ``K > d`` (a point inside the
    affine span of its neighbours), and ``G⁻¹1`` does not exist; the constrained problem
    still has a minimiser, the minimum-norm solution of its KKT system
    ``[G 1; 1ᵀ 0][c; μ] = [0; 1]``.
    """
    n, k, _ = gram.shape
    kkt = gram.new_zeros(n, k + 1, k + 1)
    kkt[:, :k, :k] = gram
    kkt[:, :k, k] = 1
    kkt[:, k, :k] = 1
    rhs = gram.new_zeros(n, k + 1, 1)
    rhs[:, k] = 1
    return (torch.linalg.pinv(kkt, hermitian=True) @ rhs)[:, :k, 0]


def _nearest_neighbors(keys: np.ndarray, queries: np.ndarray | None, n_neighbors: int):
    """Indices ``(n_queries, K)`` of the nearest keys; ``queries=None``: each key's own.

    Then a key is not its own neighbour, and duplicate keys are refused.
    """
    nbrs = NearestNeighbors(n_neighbors=n_neighbors).fit(keys)
    if queries is not None:
        return nbrs.kneighbors(queries, return_distance=False)
    dist, ind = nbrs.kneighbors(return_distance=True)
    # A duplicate would be its twin's perfect, zero-distance reconstruction: the
    # neighbourhood and the weights then say nothing about the manifold.
    if (dup := np.flatnonzero(dist[:, 0] == 0)).size:
        i = int(dup[0])
        raise ValueError(
            f"X contains duplicate points (rows {i} and {int(ind[i, 0])}); remove "
            "them first"
        )
    return ind


def _check_n_neighbors(n_neighbors, n_keys: int, self_attention: bool) -> int:
    limit = n_keys - 1 if self_attention else n_keys
    if (
        not isinstance(n_neighbors, numbers.Integral)
        or isinstance(n_neighbors, bool)
        or not 1 <= n_neighbors <= limit
    ):
        raise ValueError(
            f"n_neighbors must be an integer in [1, {limit}] (fewer than the {n_keys} "
            "samples"
            f"{'' if self_attention else ' of keys, plus one'}), got {n_neighbors!r}"
        )
    return int(n_neighbors)


@public
def lle_weights(
    X, n_neighbors: int, reg: float = 1e-3, *, keys=None, dense: bool = False
) -> LLEWeights:
    """LLE's reconstruction weights: each query attends to its ``n_neighbors`` nearest.

    Parameters
    ----------
    X : array-like, shape (n_queries, n_features)
        The queries, one per row.
    n_neighbors : int
        ``K``, the size of each query's neighbourhood (the mask's row sums).
    reg : float
        Regulariser of the local Gram matrices (see :func:`barycenter_weights`).
    keys : array-like, shape (n_keys, n_features), optional
        Points to reconstruct ``X`` from. By default ``X`` itself, each point excluded
        from its own neighbourhood (self-attention); ``X`` must then have no duplicate
        rows.
    dense : bool
        Return dense NumPy arrays instead of SciPy CSR matrices (for small ``n`` and
        plots).

    Returns
    -------
    LLEWeights
        ``weights`` and ``mask`` of shape ``(n_queries, n_keys)`` and the ``neighbors``
        ``(n_queries, n_neighbors)``, in float64.

    Implements
    ----------
    Eq. (9) of the self-expression paper, solved in closed form (its footnote 1), as a
    masked attention matrix (§4.2); step 2 of Roweis & Saul (2000).
    """
    X = as_float_array(X, "X")
    self_attention = keys is None
    K = X if self_attention else as_float_array(keys, "keys")
    if K.shape[1] != X.shape[1]:
        raise ValueError(
            f"keys must have {X.shape[1]} features like X, got {K.shape[1]}"
        )
    n_neighbors = _check_n_neighbors(n_neighbors, K.shape[0], self_attention)
    reg = check_positive(reg, "reg", allow_zero=True)
    ind = _nearest_neighbors(K, None if self_attention else X, n_neighbors)
    return _weights_on_neighbors(X, K, ind, reg, dense)


def _weights_on_neighbors(
    X: np.ndarray, keys: np.ndarray, ind: np.ndarray, reg: float, dense: bool
) -> LLEWeights:
    """The weights of each row of ``X`` on its neighbours ``keys[ind]`` (checked
    arrays; called inside a public function, whose boundary it stays in)."""
    w = barycenter_weights(
        torch.from_numpy(X), torch.from_numpy(keys)[torch.from_numpy(ind)], reg
    ).numpy()
    indptr = np.arange(0, ind.size + 1, ind.shape[1])
    W = sp.csr_matrix(
        (w.ravel(), ind.ravel(), indptr), shape=(X.shape[0], keys.shape[0])
    )
    mask = sp.csr_matrix(
        (np.ones(ind.size, dtype=bool), ind.ravel(), indptr), shape=W.shape
    )
    if dense:
        return LLEWeights(W.toarray(), mask.toarray(), ind)
    return LLEWeights(W, mask, ind)


@public
def lle_attention(X, n_neighbors: int, reg: float = 1e-3) -> AttentionResult:
    """LLE as one dense, differentiable call of :func:`attnlib.functional.attention`.

    Queries, keys and values are the points; the mask is the k-nearest-neighbour graph;
    the "score" of a query-key pair is its barycentric weight, which needs all of the
    query's keys at once; no normaliser is needed, since the weights already sum to one.

    Parameters
    ----------
    X : tensor or array-like, shape (n, d)
        The points (float32 by default; tensors keep their dtype and device).
    n_neighbors, reg : int, float
        As in :func:`lle_weights`.

    Returns
    -------
    AttentionResult
        ``output`` ``(n, d)``: each point reconstructed from its neighbours (the "blank
        filled in"); ``weights`` ``(n, n)``: LLE's weight matrix, indexed
        ``[query, key]``.

    Implements
    ----------
    §4.2 of the self-expression paper: Eq. (9)'s minimiser as masked self-attention.
    """
    X = as_tensor(X, "X", ndim=2)
    n = X.shape[0]
    n_neighbors = _check_n_neighbors(n_neighbors, n, True)
    reg = check_positive(reg, "reg", allow_zero=True)
    ind = torch.from_numpy(
        _nearest_neighbors(X.detach().cpu().double().numpy(), None, n_neighbors)
    ).to(X.device)
    mask = torch.zeros(n, n, dtype=torch.bool, device=X.device).scatter_(1, ind, True)

    def barycentric_score(q, k):
        c = barycenter_weights(q, k[ind], reg)
        return torch.zeros(n, n, dtype=c.dtype, device=c.device).scatter(1, ind, c)

    return attend(X, X, X, score=barycentric_score, normalizer="none", mask=mask)
