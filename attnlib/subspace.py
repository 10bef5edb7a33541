"""Self-expressive subspace clustering, and the sparse attention obtained by unrolling it.

Self-expressiveness writes every sample as a combination of the *other* samples,
``X ≈ C X`` with ``diag(C) = 0``: a global, signed self-attention whose weights are learned
by solving an optimisation problem rather than computed from a query–key score. Tokens are
rows, so row ``i`` of ``C`` expresses sample ``i`` (``C[query, key]``); the self-expression
paper puts samples in columns and its ``C`` is our ``C.T``.

This module holds the idea: the self-expressive coefficients for three regularisers (LSR
and LRSC in closed form, SSC through the row-wise Lasso solvers of :mod:`attnlib.lasso`),
the affinity, spectral clustering, the scikit-learn estimator, and sparse-coding attention
(the unrolled ISTA of the sparse problem, read as an attention layer).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import SpectralClustering
from torch import nn

from .attention import AttentionResult, attention
from .lasso import SolverInfo, _lam_column, _soft_threshold, ssc_rows
from .lasso import soft_threshold as soft_threshold  # re-exported (see below)
from .utils import (
    _module_input,
    _names_input,
    as_float_array,
    as_tensor,
    check_int,
    check_positive,
    host_array,
)

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except (
    ImportError
):  # older releases (pyproject allows >= 1.2): the estimator's own method

    def validate_data(estimator, X, **kwargs):
        return estimator._validate_data(X, **kwargs)


METHODS = ("lsr", "lrsc", "ssc")
# λ per method when none is given, chosen by the sweep of benchmarks/subspace.py (5 random
# subspaces of dimension 6 in R⁹, N = 1 000, tuning seeds 101-105): the best median
# clustering accuracy, ties to the larger λ. tests/test_subspace.py checks these values
# against the committed results, so that the defaults follow the sweep. At N = 1 000 the
# SSC default reaches 0.975 on the benchmark's seeds but 0.965 in median on fresh seeds
# 7-11 (chapter 05): no λ in 0.0005-0.005, row normalisation, label assignment, top-k or
# per-point λ lifts that median to 0.97; the limit is the coefficients themselves (about
# 18 % of |C| on other subspaces; without it the same spectral step is perfect).
DEFAULT_LAM = {"ssc": 0.002, "lsr": 10.0, "lrsc": 0.001}

# soft_threshold and SolverInfo live in attnlib.lasso and stay importable from here; they
# are not listed, so that the API reference documents them once.
__all__ = [
    "DEFAULT_LAM",
    "ssc_objective",
    "self_expressive",
    "affinity",
    "spectral_clustering",
    "clustering_accuracy",
    "SubspaceClustering",
    "sparse_coding_attention",
    "UnrolledISTAAttention",
]


def ssc_objective(X, C, lam) -> float:
    """The SSC objective ``½‖X − C X‖_F² + Σᵢ λᵢ ‖C[i]‖₁`` (rows are samples).

    Row ``i`` is the Lasso ``½‖xᵢ − Σⱼ C[i, j] xⱼ‖² + λᵢ‖C[i]‖₁``; scikit-learn's ``Lasso``
    minimises the same problem divided by ``n_features`` with ``alpha = λ / n_features``.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The samples, one per row.
    C : array-like or scipy.sparse matrix, shape (n_samples, n_samples)
        The coefficients, ``C[query, key]``.
    lam : float or array-like of shape (n_samples,)
        The ℓ1 weight λ (one per sample allowed).

    Returns
    -------
    float
        The objective.

    Implements
    ----------
    Eq. (12) of the self-expression paper, transposed.
    """
    X = as_float_array(host_array(X), "X")
    C = _as_coefficients(host_array(C))
    if C.shape[0] != X.shape[0]:
        raise ValueError(
            f"C must be ({X.shape[0]}, {X.shape[0]}), one row per sample of X, "
            f"got {C.shape}"
        )
    lam = _lam_column(lam, X.shape[0])
    R = X - C @ X
    l1 = np.asarray(abs(C).sum(axis=1)).reshape(-1, 1)
    return float(0.5 * (R * R).sum() + (lam * l1).sum())


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
    if form == "exact":
        # C = V diag(w) Vᵀ; each direction costs ½σ²(1 − w)² + λ|w|, least at w = (1 − λ/σ²)₊.
        with np.errstate(divide="ignore"):
            weights = np.maximum(1.0 - lam / sigma**2, 0.0)
    elif (
        form == "paper"
    ):  # as printed in §5.2; not the minimiser (see the chapter's erratum)
        weights = np.maximum(sigma - lam, 0.0)
    else:  # noiseless: the shape-interaction matrix V₁V₁ᵀ of the data's rank
        weights = (sigma > sigma[0] * max(X.shape) * np.finfo(X.dtype).eps).astype(
            X.dtype
        )
    return (V * weights) @ V.T


_FORMS = {
    "lsr": ("closed", "svd"),
    "lrsc": ("exact", "paper", "noiseless"),
    "ssc": (None,),
}


def self_expressive(
    X,
    method: str = "ssc",
    lam=None,
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
        ``"lsr"``: Θ = ½‖C‖_F² (least-squares regression), closed form; the same minimiser
        as the paper's unhalved ``‖X − CX‖_F² + λ‖C‖_F²``, so λ is the paper's;
        ``"lrsc"``: the nuclear norm (low-rank subspace clustering), closed form.
    lam : float or array of shape (n_samples,), optional
        The regularisation weight λ (for ``"ssc"`` one per sample is allowed); default
        ``DEFAULT_LAM[method]``, chosen by the benchmark's sweep. Row i of SSC
        is ``sklearn.linear_model.Lasso(alpha=lam / n_features, fit_intercept=False)``.
    solver : {"active_set", "admm", "fista", "ista"}
        SSC only. ``"active_set"`` (default): each row's Lasso solved exactly by its homotopy
        path on a working set of keys, the set grown by the keys whose optimality condition
        fails, until none does (the oracle-guided active set of You, Li, Robinson & Vidal 2016,
        with an exact inner solve); no N×N iteration is run. Or the ADMM of Elhamifar &
        Vidal (2013), FISTA with adaptive restart, or ISTA, on the full matrix.
    form : str, optional
        ``"lsr"``: ``"closed"`` (default, ``X(XᵀX + λI)⁻¹Xᵀ``) or ``"svd"`` (``V Σ²(Σ² + λ)⁻¹ Vᵀ``).
        ``"lrsc"``: ``"exact"`` (default: the minimiser of ``½‖X − CX‖² + λ‖C‖_*``,
        ``V (1 − λ/Σ²)₊ Vᵀ``), ``"paper"`` (``V ReLU_λ(Σ) Vᵀ`` with
        ``ReLU_λ(σ) = max(σ − λ, 0)``, as printed in §5.2 of the paper; it does not minimise
        the objective and is kept only to show that) or ``"noiseless"`` (Vidal & Favaro's
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
        Also return a :class:`attnlib.lasso.SolverInfo`.

    Returns
    -------
    C : ndarray of shape (n_samples, n_samples), or a scipy.sparse CSR matrix when SSC runs on
        working sets (an int ``working_set``, or ``"auto"`` with n_samples > 1500)
    info : SolverInfo, only if ``return_info``

    Implements
    ----------
    Eqs. (12)-(15) of the self-expression paper (rows as samples): LSR (§5.2, Lu et al. 2012),
    LRSC (§5.2, Vidal & Favaro 2014; the paper's closed form is wrong, ours is the
    minimiser), SSC by ISTA (Eq. 15), FISTA (Beck & Teboulle 2009),
    ADMM (Elhamifar & Vidal 2013, Sec. 3.3) and an active set with the Lasso homotopy
    (Osborne, Presnell & Turlach 2000; You, Li, Robinson & Vidal 2016).
    """
    X = as_float_array(X, "X", min_samples=2)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    lam = DEFAULT_LAM[method] if lam is None else lam
    forms = _FORMS[method]
    form = forms[0] if form is None else form
    if form not in forms:
        raise ValueError(
            f"form must be one of {forms} for method {method!r}, got {form!r}"
        )
    if method != "ssc":
        lam = check_positive(lam, "lam")
        C = (
            _lsr(X, lam, form, zero_diagonal)
            if method == "lsr"
            else _lrsc(X, lam, form)
        )
        info = SolverInfo(f"{method} closed form", 0, 0, 0.0, True, 0.0, float("nan"))
        return (C, info) if return_info else C
    C, info = ssc_rows(
        X,
        lam,
        solver,
        max_iter=max_iter,
        tol=tol,
        rho=rho,
        working_set=working_set,
        polish=polish,
    )
    return (C, info) if return_info else C


def _as_coefficients(C, name="C"):
    if sp.issparse(C):
        C = sp.csr_matrix(C, dtype=np.float64)
        if C.ndim != 2 or C.shape[0] != C.shape[1] or not np.all(np.isfinite(C.data)):
            raise ValueError(
                f"{name} must be a square finite matrix, got shape {C.shape}"
            )
        return C
    C = as_float_array(C, name)
    if C.shape[0] != C.shape[1]:
        raise ValueError(
            f"{name} must be square (n_samples, n_samples), got shape {C.shape}"
        )
    return C


def affinity(C, *, normalize: str | None = None, keep: int | None = None):
    """The symmetric affinity ``|C| + |C|ᵀ`` of self-expressive coefficients.

    Parameters
    ----------
    C : array or scipy.sparse matrix, shape (n_samples, n_samples)
        Self-expressive coefficients, ``C[query, key]``.
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
        raise ValueError(
            f"normalize must be None, 'l1', 'l2' or 'max', got {normalize!r}"
        )
    keep = None if keep is None else check_int(keep, "keep")
    W = abs(C)
    if keep is not None:
        W = _keep_largest(W, keep)
    if normalize is not None:
        if sp.issparse(W):
            data = W.multiply(W) if normalize == "l2" else W
            scale = (
                data.max(1).toarray() if normalize == "max" else np.asarray(data.sum(1))
            ).ravel()
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


def spectral_clustering(
    A,
    n_clusters: int,
    *,
    random_state: int = 0,
    assign_labels: str = "kmeans",
    eigen_solver: str = "auto",
) -> np.ndarray:
    """Cluster the samples of a symmetric non-negative affinity ``A`` with scikit-learn.

    Parameters
    ----------
    A : array or scipy.sparse matrix, shape (n_samples, n_samples)
        A symmetric non-negative affinity.
    n_clusters : int
        Clusters, at most ``n_samples``.
    random_state : int
        Seeds scikit-learn's eigensolver and k-means.
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
        raise ValueError(
            f"eigen_solver must be 'auto', 'arpack' or 'lobpcg', got {eigen_solver!r}"
        )
    if eigen_solver == "auto":
        eigen_solver = "lobpcg" if A.shape[0] > 2000 else "arpack"
    values = A.data if sp.issparse(A) else A
    if np.any(values < 0) or abs(A - A.T).max() > 1e-10 * max(
        abs(values).max(), 1e-300
    ):
        raise ValueError("A must be symmetric with non-negative entries")
    model = SpectralClustering(
        n_clusters,
        affinity="precomputed",
        random_state=random_state,
        assign_labels=assign_labels,
        eigen_solver=eigen_solver,
    )
    with warnings.catch_warnings():
        # A disconnected graph is what a perfect affinity looks like; nothing to warn about.
        warnings.filterwarnings("ignore", message="Graph is not fully connected")
        return model.fit_predict(A)


def _labels(y, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:  # a column, as scikit-learn accepts
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D labels, got shape {y.shape}")
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite labels")
    return y


def clustering_accuracy(y_true, y_pred) -> float:
    """The fraction of samples whose cluster is right, under the best matching of cluster names.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n_samples,)
        True and predicted cluster labels (any hashable values; no NaN).

    Returns
    -------
    float
        The accuracy, in [0, 1].

    Implements
    ----------
    The accuracy of the subspace-clustering literature (1 − the clustering error of
    Elhamifar & Vidal 2013), with the matching found by ``scipy.optimize.linear_sum_assignment``.
    """
    y_true, y_pred = _labels(y_true, "y_true"), _labels(y_pred, "y_pred")
    if y_true.size == 0 or y_true.shape != y_pred.shape:
        raise ValueError(
            f"y_true and y_pred must be non-empty and of the same length, got {y_true.size} and {y_pred.size}"
        )
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
        Clusters.
    method, lam, solver, form, zero_diagonal, working_set, tol, max_iter : object
        As in :func:`self_expressive`.
    normalize, keep : str or None, int or None
        As in :func:`affinity`.
    random_state : int
        Seeds the spectral clustering.

    Attributes
    ----------
    coef_ : ndarray or CSR of shape (n_samples, n_samples)
    affinity_matrix_ : ndarray or CSR of shape (n_samples, n_samples)
    labels_ : ndarray of shape (n_samples,)
    solver_info_ : SolverInfo
    n_iter_ : int
        Iterations (path segments for the active set; 0 for the closed forms).
    n_features_in_ : int

    Implements
    ----------
    §5.1 of the self-expression paper: coefficients (Eq. 13), affinity, spectral clustering.
    """

    def __init__(
        self,
        n_clusters: int = 2,
        *,
        method: str = "ssc",
        lam=None,
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
        """Compute ``coef_``, ``affinity_matrix_`` and ``labels_``.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            The samples, one per row.
        y : None
            Ignored (scikit-learn's API).

        Returns
        -------
        SubspaceClustering
            The fitted estimator.
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        n_clusters = check_int(self.n_clusters, "n_clusters")
        if n_clusters > X.shape[0]:
            raise ValueError(
                f"n_clusters={n_clusters} must be at most n_samples={X.shape[0]}"
            )
        self.coef_, self.solver_info_ = self_expressive(
            X, self.method, self.lam, solver=self.solver, form=self.form, zero_diagonal=self.zero_diagonal,
            working_set=self.working_set, tol=self.tol, max_iter=self.max_iter, return_info=True,
        )  # fmt: skip
        self.n_iter_ = self.solver_info_.n_iter
        self.affinity_matrix_ = affinity(
            self.coef_, normalize=self.normalize, keep=self.keep
        )
        self.labels_ = spectral_clustering(
            self.affinity_matrix_, n_clusters, random_state=self.random_state
        )
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = (
            False  # dense X only (C and the affinity may be sparse)
        )
        return tags


# ---------------------------------------------------------------------------------------
# Sparse coding as attention (§5.4)
# ---------------------------------------------------------------------------------------


def _ista_codes(q, k, lam, n_iter, step, nonnegative, kk=None):
    """Unrolled ISTA on ``min_C ½‖Q − C K‖² + λ‖C‖₁`` (rows): returns C (..., n_q, n_k)."""
    qk = attention(q, k, k, score="dot", normalizer="none").weights  # Q Kᵀ: attention
    if kk is None:
        kk = attention(
            k, k, k, score="dot", normalizer="none"
        ).weights  # K Kᵀ: self-attention
    if step is None:
        step = (
            1.0
            / torch.linalg.matrix_norm(k, ord=2)
            .square()
            .clamp_min(1e-12)[..., None, None]
        )
    shrink = (lambda z, t: torch.relu(z - t)) if nonnegative else _soft_threshold
    C = torch.zeros_like(qk)
    for t in range(n_iter):
        s_t = step[t] if isinstance(step, (list, tuple)) else step
        lam_t = lam[t] if isinstance(lam, (list, tuple)) else lam
        C = shrink(C - s_t * (C @ kk - qk), s_t * lam_t)
    return C


def sparse_coding_attention(
    q,
    k,
    v,
    lam: float,
    n_iter: int = 100,
    step: float | None = None,
    *,
    nonnegative: bool = False,
) -> AttentionResult:
    """Attention whose weights are sparse codes of the queries over the keys, by unrolled ISTA.

    ``C_{t+1} = shrink_{ελ}(C_t (I − ε K Kᵀ) + ε Q Kᵀ)`` from ``C_0 = 0``: ``Q Kᵀ`` is dot-product
    attention and ``K Kᵀ`` dot-product self-attention of the keys; the output is ``C V``. With
    many iterations ``C`` solves the Lasso ``min ½‖Q − C K‖² + λ‖C‖₁`` row by row.

    Parameters
    ----------
    q : tensor, shape (..., n_q, d)
        Queries, one per row.
    k : tensor, shape (..., n_k, d)
        Keys (the dictionary).
    v : tensor, shape (..., n_k, d_v)
        Values.
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
    k = as_tensor(k, "k", min_ndim=2, device=q.device)
    v = as_tensor(v, "v", min_ndim=2, device=q.device)
    # The common dtype; half precisions iterate in float32 (no half spectral norm).
    dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    q, k, v = q.to(work), k.to(work), v.to(work)
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"q, k, v have incompatible shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    lam = check_positive(lam, "lam")
    n_iter = check_int(n_iter, "n_iter")
    step = None if step is None else check_positive(step, "step")
    C = _ista_codes(q, k, lam, n_iter, step, nonnegative)
    out = C @ v
    if not (torch.isfinite(C).all() and torch.isfinite(out).all()):
        raise ValueError(
            "step is too large for these keys (ISTA diverged; above 2 / ‖K‖₂² it "
            "need not converge), or q, k are too large for their dtype"
        )
    return AttentionResult(out.to(dtype), C.to(dtype))


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
        Token size.
    n_iter : int
        Unrolled iterations.
    lam : float
        Initial threshold λ.
    lista : bool
        Learn a separate key map for the ``K Kᵀ`` term (adds ``embed_dim²`` parameters).
    nonnegative : bool
        One-sided threshold as in the paper's Eq. (18).
    bias : bool
        Give the four projections a bias.

    Implements
    ----------
    Eq. (18) and Figure 4 of the self-expression paper, with learned (LISTA) maps.
    """

    def __init__(
        self,
        embed_dim: int,
        n_iter: int = 4,
        lam: float = 0.1,
        *,
        lista: bool = False,
        nonnegative: bool = False,
        bias: bool = True,
    ):
        super().__init__()
        embed_dim, n_iter = (
            check_int(embed_dim, "embed_dim"),
            check_int(n_iter, "n_iter"),
        )
        lam = check_positive(lam, "lam")
        self.embed_dim, self.n_iter, self.nonnegative = embed_dim, n_iter, nonnegative
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(embed_dim, embed_dim, bias=bias) for _ in range(4)
        )
        self.s_proj = nn.Linear(embed_dim, embed_dim, bias=bias) if lista else None
        # softplus⁻¹ of the initial values: unit relative step, threshold λ.
        self.raw_step = nn.Parameter(torch.full((n_iter,), math.log(math.e - 1)))
        # softplus⁻¹(λ) = λ + log(1 - e^{-λ}): finite for every positive λ.
        self.raw_lam = nn.Parameter(
            torch.full((n_iter,), lam + math.log(-math.expm1(-lam)))
        )

    def forward(self, x, key=None, value=None) -> AttentionResult:
        """Attend from ``x`` to ``key``/``value`` (default ``x``).

        Parameters
        ----------
        x : tensor or array-like, shape (..., n_q, embed_dim)
            The queries' tokens; a tensor must have the module's dtype.
        key : tensor or array-like, shape (..., n_k, embed_dim), optional
            The keys' tokens (default ``x``).
        value : tensor or array-like, shape (..., n_k, embed_dim), optional
            The values' tokens (default ``key``).

        Returns
        -------
        AttentionResult
            ``output`` ``(..., n_q, embed_dim)``, the codes ``C`` ``(..., n_q, n_k)``.
        """
        like = self.q_proj.weight
        x = _module_input(x, "x", like, min_ndim=2)
        key = x if key is None else _module_input(key, "key", like, min_ndim=2)
        value = (
            key if value is None else _module_input(value, "value", like, min_ndim=2)
        )
        if x.shape[-1] != self.embed_dim:
            raise ValueError(
                f"x must have {self.embed_dim} features, got {x.shape[-1]}"
            )
        q, k, v = self.q_proj(x), self.k_proj(key), self.v_proj(value)
        s = k if self.s_proj is None else self.s_proj(key)
        with _names_input("x"):
            kk = attention(s, s, s, score="dot", normalizer="none").weights
        base = (
            1.0
            / torch.linalg.matrix_norm(s, ord=2)
            .square()
            .clamp_min(1e-12)[..., None, None]
        )
        steps = [base * torch.nn.functional.softplus(r) for r in self.raw_step]
        lams = list(torch.nn.functional.softplus(self.raw_lam))
        with _names_input("x"):
            C = _ista_codes(q, k, lams, self.n_iter, steps, self.nonnegative, kk=kk)
        if not torch.isfinite(C).all():
            raise ValueError(f"x is too large for {x.dtype}: the codes overflow")
        return AttentionResult(self.out_proj(C @ v), C)
