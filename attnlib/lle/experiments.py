"""Chapter 04's experiment helpers: attention on LLE's mask, closed groups, fill-ins.

None is LLE itself (that is :mod:`attnlib.lle`): the first builds the convex
competitor, softmax attention on LLE's mask, that chapter 04 sets against LLE's affine
weights; the second finds the pieces of a kNN graph that make LLE's embedding collapse;
the others predict held-out points of a swiss roll (curved) or of the same sheet
unrolled (flat) from their intrinsic coordinates, the fill-in-the-blanks task.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.optimize import nnls
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import load_digits, make_s_curve, make_swiss_roll
from sklearn.manifold import trustworthiness

from ..functional import attention
from ..subspace.lasso import lasso_codes
from ..utils import as_float_array, check_int, check_positive, host_array
from ..utils.validation import SEED_MAX
from .embedding import lle_embedding
from .weights import lle_weights

__all__ = [
    "closed_groups",
    "convex_weights",
    "crossing_planes",
    "fill_in_blanks",
    "knn_softmax_weights",
    "manifold_sample",
    "trust_scores",
    "swiss_roll_sheets",
]


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


def swiss_roll_sheets(n: int, random_state: int):
    """A swiss roll, the same sheet unrolled flat, and their intrinsic coordinates.

    Parameters
    ----------
    n : int
        Number of points.
    random_state : int
        Seed of scikit-learn's ``make_swiss_roll``.

    Returns
    -------
    roll, flat, chart : ndarray, shapes (n, 3), (n, 3), (n, 2)
        ``roll`` is scikit-learn's swiss roll ``(t cos t, h, t sin t)``; ``chart`` is
        ``(s, h)`` with ``s`` the arc length of the spiral from ``t = 0``; ``flat`` is
        ``(s, h, 0)``: the roll unrolled without stretching, so distances *along* the
        sheet are the same on both.
    """
    n = check_int(n, "n")
    seed = check_int(random_state, "random_state", minimum=0)
    roll, t = make_swiss_roll(n, random_state=seed)
    arc = 0.5 * (t * np.sqrt(1 + t**2) + np.arcsinh(t))
    chart = np.column_stack([arc, roll[:, 1]])
    return roll, np.column_stack([chart, np.zeros(n)]), chart


def convex_weights(queries, keys, neighbors) -> np.ndarray:
    """Convex weights fitted to each query: the closest point of its neighbours' hull.

    Solves ``min ‖q - Σ w_i k_i‖²`` over ``w ≥ 0, Σ w = 1`` on each query's
    neighbours, by non-negative least squares (SciPy's ``nnls``) with the sum-to-one
    constraint appended as a heavily weighted row.

    Parameters
    ----------
    queries : array-like, shape (m, d)
        The points to reproduce.
    keys : array-like, shape (n, d)
        The points they are reproduced from.
    neighbors : array-like of int, shape (m, K)
        The keys each query may use (its mask).

    Returns
    -------
    ndarray, shape (m, n)
        Dense ``[query, key]`` weights, non-negative, rows summing to one (rescaled
        after the penalised solve, which meets the sum to ~1e-6), zero off the
        neighbours.
    """
    queries = as_float_array(host_array(queries), "queries")
    keys = as_float_array(host_array(keys), "keys")
    neighbors = np.asarray(neighbors)
    if neighbors.ndim != 2 or len(neighbors) != len(queries):
        raise ValueError(
            f"neighbors must be (m, K) with m = {len(queries)} queries, "
            f"got shape {neighbors.shape}"
        )
    W = np.zeros((len(queries), len(keys)))
    for j, nbr in enumerate(neighbors):
        local = keys[nbr]
        lam = 1e3 * max(np.abs(local).max(), 1.0)  # the sum-to-one row's weight
        A = np.vstack([local.T, np.full(len(nbr), lam)])
        w = nnls(A, np.append(queries[j], lam))[0]
        W[j, nbr] = w / w.sum()  # exact sum, a 1e-6 change
    return W


def fill_in_blanks(
    seed: int,
    *,
    sheet: str = "roll",
    n: int = 1200,
    n_held: int = 200,
    n_neighbors: int = 10,
    temperature_scale: float = 1.0,
) -> dict:
    """Predict held-out 3-D points of a sheet from their intrinsic (chart) coordinates.

    ``n_held`` points of :func:`swiss_roll_sheets` (seed ``seed``, split by
    ``numpy.random.default_rng(seed)``) are hidden. Each hidden point is known only by
    its chart coordinates ``(s, h)``: its ``n_neighbors`` nearest training points *in
    the chart* form the mask, weights are computed from the chart alone, and the
    prediction is the same weights applied to the training points in 3-D. The hidden
    3-D point is never used, unlike LLE's own reconstruction, which solves the
    weights from the point it rebuilds; but the chart's height *is* its second 3-D
    coordinate (and on the flat sheet the chart is the point itself), so weights that
    reproduce the chart reproduce those coordinates for free. ``"error_by_axis"``
    separates them from the rolled coordinates ``x`` and ``z``, which the chart does
    not contain.

    Parameters
    ----------
    seed : int
        Seed of the data and of the split.
    sheet : {"roll", "flat"}
        The curved swiss roll or the same sheet unrolled flat.
    n, n_held, n_neighbors : int
        Points in all, hidden points, and ``K``.
    temperature_scale : float, default=1.0
        Factor on the softmax and sparsemax temperature, which is otherwise the median
        squared chart distance from a hidden point to its neighbours.

    Returns
    -------
    dict
        ``"error"``: mean squared 3-D error of each weighting (``"LLE (affine)"``,
        ``"convex, fitted"``, ``"softmax"``, ``"sparsemax"``, ``"uniform"``,
        ``"nearest key"``); ``"error_by_axis"``: the same split into the three
        coordinates ``(x, y, z)``, a list of three per weighting (they sum to
        ``"error"``); ``"chart_error"``: the same in the chart (how well each
        weighting reproduces the hidden point's coordinates); ``"bending"``: median
        over hidden points of ``|Σ_i w_i (s_i - s_q)²|`` for LLE and the convex fit
        (the weights' second moment along the rolled direction); ``"inside_hull"``:
        share of hidden points the convex fit reproduces in the chart to 1e-6;
        ``"negative"``: share of LLE's unmasked weights that are negative;
        ``"reconstruction"``: LLE's error when its weights are solved from the hidden
        3-D points themselves (reconstruction, not prediction).
    """
    if sheet not in ("roll", "flat"):
        raise ValueError(f"sheet must be 'roll' or 'flat', got {sheet!r}")
    n, n_held, K = (
        check_int(v, name)
        for v, name in ((n, "n"), (n_held, "n_held"), (n_neighbors, "n_neighbors"))
    )
    roll, flat, chart = swiss_roll_sheets(
        n, check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )
    X = roll if sheet == "roll" else flat
    held, train = np.split(np.random.default_rng(seed).permutation(n), [n_held])
    Zq, Zk, Xq, Xk = chart[held], chart[train], X[held], X[train]
    W_lle, mask, nbr = lle_weights(Zq, K, keys=Zk, dense=True)
    tau = float(np.median(((Zq[:, None] - Zk[nbr]) ** 2).sum(-1)))
    tau *= check_positive(temperature_scale, "temperature_scale")
    q, k, m = (torch.from_numpy(a) for a in (Zq, Zk, mask))
    weights = {"LLE (affine)": W_lle, "convex, fitted": convex_weights(Zq, Zk, nbr)}
    for normalizer in ("softmax", "sparsemax"):
        weights[normalizer] = attention(
            q, k, k, score="neg_sq_dist", mask=m, normalizer=normalizer, temperature=tau
        ).weights.numpy()
    weights["uniform"] = mask / K
    nearest = np.zeros_like(W_lle)
    nearest[np.arange(n_held), nbr[:, 0]] = 1.0
    weights["nearest key"] = nearest
    mse = lambda W, A, B: float(((W @ A - B) ** 2).sum(1).mean())  # noqa: E731
    ds2 = (Zk[None, :, 0] - Zq[:, None, 0]) ** 2
    W_self = lle_weights(Xq, K, keys=Xk, dense=True).weights
    return {
        "error": {name: mse(W, Xk, Xq) for name, W in weights.items()},
        "error_by_axis": {
            name: [float(v) for v in ((W @ Xk - Xq) ** 2).mean(0)]
            for name, W in weights.items()
        },
        "chart_error": {name: mse(W, Zk, Zq) for name, W in weights.items()},
        "bending": {
            name: float(np.median(np.abs((weights[name] * ds2).sum(1))))
            for name in ("LLE (affine)", "convex, fitted")
        },
        "inside_hull": float(
            np.mean(np.linalg.norm(weights["convex, fitted"] @ Zk - Zq, axis=1) < 1e-6)
        ),
        "negative": float((W_lle[mask] < 0).mean()),
        "reconstruction": mse(W_self, Xk, Xq),
    }


def crossing_planes(
    seed: int, n_per_plane: int = 60, n_neighbors: int = 6, alpha: float = 1e-2
):
    """Unit vectors on two random planes through the origin, and three weightings.

    Parameters
    ----------
    seed : int
        Seed of ``numpy.random.default_rng`` that draws both planes and the points.
    n_per_plane : int
        Points per plane (normalised to unit length).
    n_neighbors : int
        ``K`` of the kNN mask.
    alpha : float
        Penalty of the sparse fit, in scikit-learn's ``Lasso`` scaling (no intercept):
        ``min_c ||x - c K||^2 / (2 D) + alpha ||c||_1`` with ``D = 3``.

    Returns
    -------
    points : ndarray, shape (2 n_per_plane, 3)
    plane : ndarray of int, shape (2 n_per_plane,)
        Which plane each point was drawn on.
    weights : dict of ndarray, each (2 n_per_plane, 2 n_per_plane)
        ``"LLE, kNN mask"``: LLE's affine weights; ``"sparse, kNN mask"``: a Lasso
        regression of each point on its kNN keys only (the penalty changes, the mask
        does not); ``"sparse, all keys"``: a Lasso regression on every other point
        (the mask opens too).

    Notes
    -----
    The Lasso is solved exactly, by the homotopy path of
    :func:`attnlib.subspace.lasso_codes`, not by coordinate descent: at
    scikit-learn's default tolerance the shares on the wrong plane were 2-3x off, with
    no ConvergenceWarning, and tighter tolerances stall on these coplanar keys (several
    keys span the same plane, so the optimum need not be unique and coordinate descent
    crawls between optima).
    """
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    n_per_plane = check_int(n_per_plane, "n_per_plane")
    lam = P_DIM * check_positive(alpha, "alpha")  # scikit-learn's scaling -> ours
    bases = [np.linalg.qr(rng.normal(size=(3, 2)))[0] for _ in range(2)]
    P = np.vstack([rng.normal(size=(n_per_plane, 2)) @ B.T for B in bases])
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    W_lle, _, nbr = lle_weights(P, n_neighbors, dense=True)
    W_knn, W_all = np.zeros_like(W_lle), np.zeros_like(W_lle)
    for j in range(len(P)):
        W_knn[j, nbr[j]] = lasso_codes(P[j : j + 1], P[nbr[j]], lam)[0]
        keys = np.delete(np.arange(len(P)), j)
        W_all[j, keys] = lasso_codes(P[j : j + 1], P[keys], lam)[0]
    weights = {
        "LLE, kNN mask": W_lle,
        "sparse, kNN mask": W_knn,
        "sparse, all keys": W_all,
    }
    return P, np.repeat([0, 1], n_per_plane), weights


# The points of crossing_planes live in R^3.
P_DIM = 3


def manifold_sample(name: str, seed: int, n: int = 1000):
    """One of chapter 04's three data sets, drawn with ``seed``.

    Parameters
    ----------
    name : {"swiss roll", "S-curve", "digits"}
        scikit-learn's generators (``random_state=seed``), or ``n`` of the 1 797
        handwritten digits chosen by ``numpy.random.default_rng(seed)``.
    seed : int
        Seed of the generator or of the choice of digits.
    n : int
        Number of points.

    Returns
    -------
    data : ndarray, shape (n, D), float64
        The points.
    colour : ndarray, shape (n,)
        Position on the sheet, or the digit.
    """
    seed, n = check_int(seed, "seed", minimum=0, maximum=SEED_MAX), check_int(n, "n")
    if name == "swiss roll":
        data, colour = make_swiss_roll(n, random_state=seed)
    elif name == "S-curve":
        data, colour = make_s_curve(n, random_state=seed)
    elif name == "digits":
        data, colour = load_digits(return_X_y=True)
        pick = np.random.default_rng(seed).choice(len(data), n, replace=False)
        data, colour = data[pick], colour[pick]
    else:
        raise ValueError(
            f"name must be 'swiss roll', 'S-curve' or 'digits', got {name!r}"
        )
    return data.astype(np.float64), colour


def trust_scores(data, n_neighbors: int = 12, regs=(1e-3,)) -> dict:
    """Trustworthiness of 2-D embeddings from LLE's weights and from softmax weights.

    Parameters
    ----------
    data : array-like, shape (n, D)
        The points to embed.
    n_neighbors : int
        ``K`` of the mask, and the neighbourhood trustworthiness scores.
    regs : sequence of float
        LLE's regularisers to try.

    Returns
    -------
    dict
        ``"LLE, reg=<r>"`` for each ``r`` and ``"softmax"``: scikit-learn's
        ``trustworthiness`` of each embedding; ``"residual"``: median over points of
        ``‖x_j - (W X)_j‖ / ‖x_j - mean‖`` for LLE's weights at the first ``reg``.
    """
    data = as_float_array(host_array(data), "data")
    K = check_int(n_neighbors, "n_neighbors")
    scores = {}
    for i, reg in enumerate(regs):
        W = lle_weights(data, K, reg=reg).weights
        if i == 0:
            scores["residual"] = float(
                np.median(
                    np.linalg.norm(W @ data - data, axis=1)
                    / np.linalg.norm(data - data.mean(0), axis=1)
                )
            )
        Y = lle_embedding(W, 2, random_state=0).embedding
        scores[f"LLE, reg={reg:g}"] = float(trustworthiness(data, Y, n_neighbors=K))
    Y = lle_embedding(knn_softmax_weights(data, K), 2, random_state=0).embedding
    scores["softmax"] = float(trustworthiness(data, Y, n_neighbors=K))
    return scores
