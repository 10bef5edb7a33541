"""Locally linear embedding (LLE) as masked self-attention.

Each point (a *query*) writes itself as an affine combination of its ``K`` nearest
neighbours (the *keys*, which are also the *values*). The coefficients are the rows of a
``[query, key]`` weight matrix ``W`` that is zero outside the k-nearest-neighbour *mask*
and whose rows sum to one, like attention weights. Unlike softmax attention, a weight
may be negative and depends on all of the query's neighbours at once, through their
local Gram matrix. The embedding keeps those weights and finds low-dimensional points
that they reconstruct as well as possible: the bottom eigenvectors of
``(I - W)ᵀ(I - W)``.

The papers put tokens in columns; their coefficients ``c_ij`` (key ``i``, query ``j``)
are our ``W[j, i]``.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import torch
from scipy.sparse.linalg import LinearOperator, eigsh, splu
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .attention import AttentionResult, attention
from .utils import as_float_array, as_tensor, check_int, check_positive, host_array

__all__ = [
    "LLEWeights",
    "LLEEmbedding",
    "barycenter_weights",
    "lle_weights",
    "lle_attention",
    "lle_embedding",
    "LocallyLinearEmbedding",
]

_EIGEN_SOLVERS = ("auto", "arpack", "dense")


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


class LLEEmbedding(NamedTuple):
    """What :func:`lle_embedding` returns.

    ``embedding`` ``(n_samples, n_components)``: orthonormal, centred columns;
    ``eigenvalues`` ``(n_components,)``: their reconstruction errors, ascending.
    """

    embedding: np.ndarray
    eigenvalues: np.ndarray


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
    queries = as_tensor(queries, "queries", ndim=2)
    neighbors = as_tensor(neighbors, "neighbors", ndim=3, device=queries.device)
    if neighbors.shape[0] != queries.shape[0] or neighbors.shape[2] != queries.shape[1]:
        raise ValueError(
            f"neighbors must have shape (n, K, d) = "
            f"({queries.shape[0]}, K, {queries.shape[1]}), got {tuple(neighbors.shape)}"
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
    """Indices ``(n_queries, K)`` of the nearest keys.

    ``queries=None`` means the keys, minus themselves.
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


def lle_weights(
    X, n_neighbors: int, reg: float = 1e-3, *, keys=None, dense: bool = False
) -> LLEWeights:
    """LLE's reconstruction weights: each query attends to its ``n_neighbors`` nearest.

    Its ``n_neighbors`` nearest keys.

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


def lle_attention(X, n_neighbors: int, reg: float = 1e-3) -> AttentionResult:
    """LLE written as a call of :func:`attnlib.attention.attention`.

    Dense and differentiable.

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
    ind = torch.from_numpy(
        _nearest_neighbors(X.detach().cpu().double().numpy(), None, n_neighbors)
    ).to(X.device)
    mask = torch.zeros(n, n, dtype=torch.bool, device=X.device).scatter_(1, ind, True)

    def barycentric_score(q, k):
        c = barycenter_weights(q, k[ind], reg)
        return torch.zeros(n, n, dtype=c.dtype, device=c.device).scatter(1, ind, c)

    return attention(X, X, X, score=barycentric_score, normalizer="none", mask=mask)


def _as_square_weights(W) -> sp.csr_matrix:
    if isinstance(W, torch.Tensor):
        W = W.detach().cpu().double().numpy()
    W = (
        sp.csr_matrix(W, dtype=np.float64)
        if sp.issparse(W)
        else sp.csr_matrix(as_float_array(W, "W"))
    )
    if W.shape[0] != W.shape[1] or W.shape[0] < 3:
        raise ValueError(
            "W must be a square [query, key] matrix of at least 3 points, got shape "
            f"{W.shape}"
        )
    if not np.all(np.isfinite(W.data)):
        raise ValueError("W contains NaN or infinite values")
    return W


def _smallest_arpack(
    M: sp.csc_matrix, k: int, tol: float, max_iter: int | None, v0: np.ndarray
):
    # Shift-invert about a tiny negative shift: M is singular (its null vector is 1),
    # and the shift makes M + εI positive definite without moving any eigenvector. A
    # symmetric factorisation without pivoting (a Cholesky in effect) of the (AᵀA)
    # pattern fills in far less than the default pivoting LU, which is what makes this
    # faster than scikit-learn.
    eps = 1e-12 * max(float(M.diagonal().mean()), 1.0)
    lu = splu(
        (M + eps * sp.eye(M.shape[0], format="csc")).tocsc(),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        options=dict(SymmetricMode=True),
    )
    op = LinearOperator(M.shape, matvec=lu.solve, dtype=np.float64)
    return eigsh(M, k, sigma=-eps, OPinv=op, tol=tol, maxiter=max_iter, v0=v0)


def _orthogonal_to_constant(M, vectors: np.ndarray, n_components: int):
    """The ``n_components`` bottom eigenpairs of ``M`` within ``span(vectors)``.

    Within the part of ``span(vectors)`` orthogonal to the constant.

    ``vectors`` are ``n_components + 1`` orthonormal bottom eigenvectors of ``M``;
    removing the constant direction leaves (at least) ``n_components`` dimensions,
    re-diagonalised by a Rayleigh–Ritz step so that the result is centred, orthonormal
    and ascending.
    """
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    basis, singular, _ = np.linalg.svd(centred, full_matrices=False)
    # One singular value is ~0 when the constant vector lies in span(vectors), none
    # otherwise.
    basis = basis[:, singular > 1e-6 * singular.max()]
    values, rotation = np.linalg.eigh(basis.T @ (M @ basis))
    vectors = basis @ rotation[:, :n_components]
    return values[:n_components], vectors - vectors.mean(axis=0, keepdims=True)


def lle_embedding(
    W,
    n_components: int = 2,
    *,
    eigen_solver: str = "auto",
    tol: float = 1e-6,
    max_iter: int | None = None,
    random_state=None,
) -> LLEEmbedding:
    """Points that the weights ``W`` reconstruct best.

    The bottom eigenvectors of ``(I - W)ᵀ(I - W)``.

    The constant vector is an eigenvector of ``M = (I - W)ᵀ(I - W)`` with eigenvalue 0
    (rows of ``W`` sum to one), and ``M`` maps vectors orthogonal to it to vectors
    orthogonal to it. The embedding is the bottom ``n_components`` eigenvectors of ``M``
    *orthogonal to the constant vector*: it is centred, has ``YᵀY = I``, and minimises
    ``‖Y - W Y‖²`` under these two constraints (Eq. (10)). When the null space of ``M``
    has dimension > 1 (the kNN graph has several closed groups), an eigensolver returns
    an arbitrary basis of it, which need not contain the constant vector; the constant
    direction is therefore projected out of the ``n_components + 1`` bottom eigenvectors
    and the rest re-diagonalised (Rayleigh–Ritz).

    Parameters
    ----------
    W : sparse matrix, array-like or tensor, shape (n, n)
        Row-stochastic ``[query, key]`` weights (LLE's, or any attention matrix).
    n_components : int
        Dimension ``d`` of the embedding, at most ``n - 2``.
    eigen_solver : {"auto", "arpack", "dense"}
        ``"arpack"``: SciPy's Lanczos (``eigsh``) in shift-invert mode on the sparse
        matrix; ``"dense"``: LAPACK on the dense matrix (exact, ``O(n³)``); ``"auto"``:
        arpack when ``n > 200`` and ``n_components < 9``, as in scikit-learn.
    tol, max_iter : float, int or None
        Convergence tolerance and iteration cap of arpack (ignored by dense).
    random_state : int, RandomState or None
        Seeds arpack's starting vector.

    Returns
    -------
    LLEEmbedding
        ``embedding`` ``(n, n_components)`` and its ``eigenvalues`` (ascending). Each
        column's sign is fixed so that its largest-magnitude entry is positive.

    Implements
    ----------
    Eq. (10) of the self-expression paper; step 3 of Roweis & Saul (2000).
    """
    W = _as_square_weights(W)
    n = W.shape[0]
    n_components = check_int(n_components, "n_components", maximum=n - 2)
    if eigen_solver not in _EIGEN_SOLVERS:
        raise ValueError(
            f"eigen_solver must be one of {_EIGEN_SOLVERS}, got {eigen_solver!r}"
        )
    tol = check_positive(tol, "tol", allow_zero=True)
    if max_iter is not None:
        max_iter = check_int(max_iter, "max_iter")
    if eigen_solver == "auto":
        eigen_solver = "arpack" if n > 200 and n_components + 1 < 10 else "dense"
    A = sp.eye(n, format="csr") - W
    M = (A.T @ A).tocsc()
    if eigen_solver == "dense":
        values, vectors = scipy.linalg.eigh(
            M.toarray(), subset_by_index=(0, n_components)
        )
    else:
        rng = (
            np.random.RandomState(random_state)
            if not isinstance(random_state, np.random.RandomState)
            else random_state
        )
        values, vectors = _smallest_arpack(
            M, n_components + 1, tol, max_iter, rng.uniform(-1, 1, n)
        )
    values, vectors = _orthogonal_to_constant(M, vectors, n_components)
    signs = np.sign(vectors[np.abs(vectors).argmax(0), np.arange(vectors.shape[1])])
    return LLEEmbedding(vectors * signs, values)


class LocallyLinearEmbedding(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Locally linear embedding, a scikit-learn estimator on masked attention weights.

    Duplicate rows are accepted, as by scikit-learn's estimator: a point's twin is then
    one of its neighbours, at distance zero, and the regulariser keeps its local Gram
    matrix invertible. :meth:`transform` honours ``set_output`` (e.g. pandas).

    Parameters
    ----------
    n_neighbors : int
        Size ``K`` of each point's neighbourhood (its attention mask).
    n_components : int
        Dimension of the embedding.
    reg : float
        Regulariser of the local Gram matrices.
    eigen_solver : {"auto", "arpack", "dense"}
        See :func:`lle_embedding`.
    tol : float
        Convergence tolerance of arpack.
    max_iter : int, optional
        Iteration cap of arpack.
    random_state : int, RandomState or None
        Seeds arpack's starting vector.

    Attributes
    ----------
    embedding_
        The embedding of the training points, an array ``(n_samples, n_components)``.
    reconstruction_error_
        ``‖Y - W Y‖²`` at the solution (a float): the sum of the embedding's
        eigenvalues.
    weights_
        The ``[query, key]`` LLE weights, a SciPy CSR matrix ``(n_samples, n_samples)``.
    nbrs_
        The fitted scikit-learn ``NearestNeighbors`` index used by :meth:`transform`.
    X_fit_
        The training points ``(n_samples, n_features)``: the keys that new points attend
        to.
    n_features_in_
        The number of features seen by :meth:`fit`.

    Implements
    ----------
    Eqs. (9)-(10) of the self-expression paper (Roweis & Saul, 2000),
    ``method="standard"`` of scikit-learn's ``LocallyLinearEmbedding``.
    """

    def __init__(
        self,
        n_neighbors: int = 5,
        n_components: int = 2,
        *,
        reg: float = 1e-3,
        eigen_solver: str = "auto",
        tol: float = 1e-6,
        max_iter: int | None = None,
        random_state=None,
    ):
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.reg = reg
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y=None):
        """Compute the weights of ``X`` and embed it.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            The points; more than ``n_neighbors`` and at least ``n_components + 2``.
        y : None
            Ignored.

        Returns
        -------
        LocallyLinearEmbedding
            The fitted estimator.
        """
        X = validate_data(self, host_array(X), dtype=np.float64, ensure_min_samples=2)
        n_neighbors = _check_n_neighbors(self.n_neighbors, X.shape[0], True)
        reg = check_positive(self.reg, "reg", allow_zero=True)
        self.nbrs_ = NearestNeighbors(n_neighbors=n_neighbors).fit(X)
        # Each point's neighbours other than itself (a duplicate's twin included), as in
        # scikit-learn, rather than lle_weights, which rejects duplicates.
        ind = self.nbrs_.kneighbors(return_distance=False)
        self.weights_ = _weights_on_neighbors(X, X, ind, reg, dense=False).weights
        self.embedding_, values = lle_embedding(
            self.weights_,
            self.n_components,
            eigen_solver=self.eigen_solver,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=check_random_state(self.random_state),
        )
        self.reconstruction_error_ = float(values.sum())
        self.X_fit_ = X
        self._n_features_out = self.embedding_.shape[1]
        return self

    def fit_transform(self, X, y=None):
        """Fit to ``X`` and return its embedding.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            The points.
        y : None
            Ignored.

        Returns
        -------
        ndarray, shape (n_samples, n_components)
            ``embedding_``.
        """
        return self.fit(X).embedding_

    def transform(self, X):
        """Embed new points: attend to their training neighbours, mix their embeddings.

        Parameters
        ----------
        X : array-like, shape (n, n_features)
            New points.

        Returns
        -------
        ndarray, shape (n, n_components)
            Each point's barycentric weights on its training neighbours times their
            embedding.
        """
        check_is_fitted(self)
        X = validate_data(self, host_array(X), dtype=np.float64, reset=False)
        ind = self.nbrs_.kneighbors(X, return_distance=False)
        return (
            _weights_on_neighbors(X, self.X_fit_, ind, self.reg, dense=False).weights
            @ self.embedding_
        )
