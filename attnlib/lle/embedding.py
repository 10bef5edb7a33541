"""LLE's third step: the points that the weights reconstruct best, and the estimator.

The embedding keeps LLE's weights ``W`` and finds low-dimensional points that they
reconstruct as well as possible: the bottom eigenvectors of ``(I - W)ᵀ(I - W)``
orthogonal to the constant vector (``lle_embedding``). ``LocallyLinearEmbedding`` runs
the three steps as a scikit-learn estimator.
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

from ..utils import as_float_array, check_int, check_positive, host_array
from ..utils.boundary import public
from .weights import _check_n_neighbors, _weights_on_neighbors

__all__ = ["LLEEmbedding", "lle_embedding", "LocallyLinearEmbedding"]

_EIGEN_SOLVERS = ("auto", "arpack", "dense")
_NEIGHBORS_ALGORITHMS = ("auto", "brute", "kd_tree", "ball_tree")
_OTHER_METHODS = ("modified", "hessian", "ltsa")


class LLEEmbedding(NamedTuple):
    """What :func:`lle_embedding` returns.

    ``embedding`` ``(n_samples, n_components)``: orthonormal, centred columns;
    ``eigenvalues`` ``(n_components,)``: their reconstruction errors, ascending.
    """

    embedding: np.ndarray
    eigenvalues: np.ndarray


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
    # The constant vector is M's null vector only if every row sums to one.
    sums = np.asarray(W.sum(axis=1)).ravel()
    if not np.allclose(sums, 1.0, rtol=0, atol=1e-6):
        raise ValueError(
            "W must be row-stochastic (each row summing to one, as LLE's and "
            f"attention's weights do), got row sums from {sums.min():.6g} to "
            f"{sums.max():.6g}"
        )
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
    """The bottom eigenpairs of ``M`` that are orthogonal to the constant vector.

    ``vectors`` are ``n_components + 1`` of ``M``'s lowest: the constant direction is
    removed from their span, and the (at least) ``n_components`` dimensions left are
    re-diagonalised by a Rayleigh–Ritz step, so that the result is centred, orthonormal
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
    """Points that ``W`` reconstructs best: bottom eigenvectors of ``(I - W)ᵀ(I - W)``.

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
    method : {"standard"}
        LLE's variant: ``"standard"`` only; scikit-learn's ``"modified"``,
        ``"hessian"`` and ``"ltsa"`` are refused with a ``ValueError`` that names
        ``sklearn.manifold.LocallyLinearEmbedding``, which implements them.
    neighbors_algorithm : {"auto", "brute", "kd_tree", "ball_tree"}
        The search of scikit-learn's ``NearestNeighbors``, passed to it.
    random_state : int, RandomState or None
        Seeds arpack's starting vector.
    n_jobs : int or None
        Parallel jobs of the neighbour search, passed to ``NearestNeighbors``.

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
        method: str = "standard",
        neighbors_algorithm: str = "auto",
        random_state=None,
        n_jobs: int | None = None,
    ):
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.reg = reg
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.method = method
        self.neighbors_algorithm = neighbors_algorithm
        self.random_state = random_state
        self.n_jobs = n_jobs

    @public
    def fit(self, X, y=None):
        """Compute the weights of ``X`` and embed it.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            The points; more than ``n_neighbors``, at least ``n_components + 2``, and
            at least ``n_components`` features (as scikit-learn requires).
        y : None
            Ignored.

        Returns
        -------
        LocallyLinearEmbedding
            The fitted estimator.
        """
        self._check_method()
        X = validate_data(self, host_array(X), dtype=np.float64, ensure_min_samples=2)
        n_neighbors = _check_n_neighbors(self.n_neighbors, X.shape[0], True)
        reg = check_positive(self.reg, "reg", allow_zero=True)
        n_components = self.n_components  # checked once, by lle_embedding
        if isinstance(n_components, numbers.Integral) and n_components > X.shape[1]:
            raise ValueError(
                f"n_components must be at most the number of features of X "
                f"({X.shape[1]}): an embedding does not add dimensions, got "
                f"{n_components}"
            )
        if self.neighbors_algorithm not in _NEIGHBORS_ALGORITHMS:
            raise ValueError(
                f"neighbors_algorithm must be one of {_NEIGHBORS_ALGORITHMS}, got "
                f"{self.neighbors_algorithm!r}"
            )
        self.nbrs_ = NearestNeighbors(
            n_neighbors=n_neighbors,
            algorithm=self.neighbors_algorithm,
            n_jobs=self.n_jobs,
        ).fit(X)
        # Each point's neighbours other than itself (a duplicate's twin included), as in
        # scikit-learn, rather than lle_weights, which rejects duplicates.
        ind = self.nbrs_.kneighbors(return_distance=False)
        self.weights_ = _weights_on_neighbors(X, X, ind, reg, dense=False).weights
        self.embedding_, values = lle_embedding(
            self.weights_,
            n_components,
            eigen_solver=self.eigen_solver,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=check_random_state(self.random_state),
        )
        self.reconstruction_error_ = float(values.sum())
        self.X_fit_ = X
        self._n_features_out = self.embedding_.shape[1]
        return self

    def _check_method(self) -> None:
        if self.method == "standard":
            return
        if self.method in _OTHER_METHODS:
            raise ValueError(
                f"method={self.method!r} is not implemented here (only 'standard', "
                "the method of the book's chapter); scikit-learn's "
                f"sklearn.manifold.LocallyLinearEmbedding(method={self.method!r}) "
                "implements it"
            )
        raise ValueError(
            f"method must be 'standard' (or, in scikit-learn's estimator, one of "
            f"{_OTHER_METHODS}), got {self.method!r}"
        )

    @public
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

    @public
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
