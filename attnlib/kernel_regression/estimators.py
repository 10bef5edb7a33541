"""Nadaraya–Watson as scikit-learn regressors: a chosen bandwidth, a learned metric.

:class:`NadarayaWatson` picks the bandwidth by leave-one-out;
:class:`MetricNadarayaWatson` learns the projection ``q = W x, k = W x`` that attention
adds to the estimator.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)
from torch import nn

from ..errors import EmptySupportError
from ..functional import attend
from ..training import train
from ..utils import check_int, check_numeric, check_positive, host_array
from ._bandwidth import (
    _candidates,
    _default_bandwidths,
    _loo_errors,
    _ratio,
    _weighted_values,
)
from .core import (
    Kernel,
    _check_kernel,
    _predict_array,
    _prepare,
    nadaraya_watson,
)

__all__ = [
    "MetricNadarayaWatson",
    "NadarayaWatson",
]


def _training_arrays(estimator, X, y, dtype, min_samples: int):
    """``X`` and ``y`` checked by ``validate_data``, writable, in ``X``'s dtype."""
    X, y = validate_data(
        estimator,
        host_array(X),
        host_array(y, "y"),
        dtype=dtype,
        y_numeric=True,
        multi_output=True,
        ensure_min_samples=min_samples,
    )
    # torch wants writable arrays; the targets take the inputs' dtype
    return np.require(X, requirements="W"), np.require(y, X.dtype, requirements="W")


def _exponent(a: np.ndarray) -> int:
    """``k`` with ``2^k`` the largest power of two not above ``max |a|`` (0 if a is
    all zero): dividing by ``2^k`` is exact and brings ``max |a|`` into [1, 2)."""
    top = float(np.max(np.abs(a), initial=0.0))
    return int(np.frexp(top)[1]) - 1 if top > 0 else 0


class NadarayaWatson(RegressorMixin, BaseEstimator):
    """Nadaraya–Watson regression as a scikit-learn regressor.

    The bandwidth is chosen by leave-one-out.

    Parameters
    ----------
    kernel : str or callable
        A name in ``attnlib.kernel_regression.KERNELS`` or a callable; see
        :func:`nadaraya_watson`.
    bandwidth : float or "loo"
        A fixed bandwidth, or ``"loo"`` to pick the candidate with the smallest
        leave-one-out squared error (the built-in kernels score every candidate in
        one streamed pass over the pairs, memory ``O(n · len(bandwidths))``; a callable
        kernel costs one masked attention call per candidate).
    bandwidths : array-like of float, optional
        Candidates for ``"loo"``; default: 30 values geometrically spaced from 0.01 to 3
        times the median pairwise distance (of at most 1000 points; with
        ``sample_weight``, the median the repeated points would have).

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth used.
    bandwidths_, loo_mse_ : ndarray
        Candidates and their leave-one-out mean squared errors (``inf`` where a compact
        kernel left a point without neighbours); only with ``bandwidth="loo"``.
    X_fit_, y_fit_ : ndarray
        The training data (the keys and values).
    n_features_in_ : int
        The number of features seen by :meth:`fit`.

    Implements
    ----------
    Eq. (5)-(6) of the self-expression paper; leave-one-out bandwidth choice (Silverman,
    1986).
    """

    def __init__(
        self,
        kernel: Kernel = "gaussian",
        bandwidth="loo",
        bandwidths=None,
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.bandwidths = bandwidths

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = (
            True  # y of shape (n_samples, n_outputs) is averaged as a whole
        )
        return tags

    def fit(self, X, y, sample_weight=None):
        """Store the training data and choose the bandwidth.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            Training inputs (the keys); float32 stays float32, other dtypes become
            float64.
        y : array-like, shape (n_samples,) or (n_samples, n_outputs)
            Training targets (the values).
        sample_weight : array-like, shape (n_samples,), optional
            Non-negative weights: a point of weight ``w`` counts as ``w`` copies of it
            in every average, leave-one-out included: its error counts ``w`` times,
            and leaving it out leaves ``max(w - 1, 0)`` copies of it in (at distance
            0), so integer weights choose what the repeated data would (scikit-learn's
            ``check_sample_weight_equivalence``). A callable kernel leaves the point
            out whole.

        Returns
        -------
        NadarayaWatson
            The fitted estimator.
        """
        loo = isinstance(self.bandwidth, str) and self.bandwidth == "loo"
        X, y = _training_arrays(self, X, y, [np.float64, np.float32], 2 if loo else 1)
        weights = None
        if sample_weight is not None:
            check_numeric(sample_weight, "sample_weight")  # no bools nor strings
            weights = _check_sample_weight(  # not all zero, none negative
                sample_weight, X, dtype=X.dtype, ensure_non_negative=True
            )
        _check_kernel(self.kernel)
        # The distances are computed on X / 2^k, with 2^k the largest power of two
        # not above max |X| (bandwidths alike): exact, and the same predictions, but
        # no squared distance under- or overflows float32 at any feature scale.
        self._shift = _exponent(X)
        Xs = np.ldexp(X, -self._shift).astype(X.dtype)
        if loo:
            self._choose_bandwidth(Xs, y, weights)
        else:
            self.bandwidth_ = check_positive(self.bandwidth, "bandwidth")
        self.X_fit_, self.y_fit_, self.sample_weight_ = X, y, weights
        # What predict reads, made once: no call converts or copies the training set.
        # Points of weight 0 are dropped from it, as from repeated data: near one of
        # them, a tiny bandwidth would otherwise leave only underflowed weights.
        soft = self.kernel in ("gaussian", "laplace")
        keep = slice(None) if weights is None or not soft else weights > 0
        # The average is the same for weights scaled by a power of two: by the
        # largest's, so that subnormal or huge weights neither underflow nor overflow
        scaled = None if weights is None else np.ldexp(weights, -_exponent(weights))
        values = _weighted_values(y, None if scaled is None else scaled.astype(X.dtype))
        self._train = _prepare(Xs[keep], values[keep], self.kernel)
        return self

    def _choose_bandwidth(self, Xs, y, weights) -> None:
        """Set ``bandwidths_``, ``loo_mse_`` and ``bandwidth_`` by leave-one-out, on
        the features scaled by ``2^-self._shift``.

        A weight counts as that many copies, so the weights are not rescaled here;
        where ``w y`` overflows the data's dtype, the errors are computed in float64.
        """
        if self.bandwidths is None:
            grid = _candidates(None, Xs, weights)
        else:
            grid = np.ldexp(_candidates(self.bandwidths, Xs, weights), -self._shift)
        with np.errstate(over="ignore"):
            values = _weighted_values(y, weights)
        if not np.isfinite(values).all():
            Xs, y, weights = (a.astype(np.float64) for a in (Xs, y, weights))
            values = _weighted_values(y, weights)
        self.bandwidths_ = np.ldexp(grid, self._shift)
        self.loo_mse_ = _loo_errors(Xs, y, values, weights, self.kernel, grid)
        if not np.isfinite(self.loo_mse_).any():
            raise ValueError(
                "bandwidths: every candidate leaves some point without "
                "neighbours; try larger ones"
            )
        self.bandwidth_ = float(self.bandwidths_[np.argmin(self.loo_mse_)])

    def predict(self, X) -> np.ndarray:
        """Predict at new points, streamed over the training set.

        ``X`` is checked once, here; the prediction runs on the checked arrays.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            Query points.

        Returns
        -------
        ndarray, shape (n_samples,) or (n_samples, n_outputs)
            The kernel-weighted averages of the training targets.
        """
        check_is_fitted(self, "X_fit_")
        X = validate_data(self, host_array(X), dtype=self.X_fit_.dtype, reset=False)
        weights = getattr(self, "sample_weight_", None)
        try:
            sums = _predict_array(
                np.ldexp(X, -self._shift).astype(X.dtype),
                self._train,
                self.kernel,
                float(np.ldexp(self.bandwidth_, -self._shift)),
            )
        except EmptySupportError as err:
            raise EmptySupportError(f"X: {err}") from err
        except ValueError as err:  # X is checked: what fails is X against the data
            raise ValueError(f"X: {err}") from err
        pred = _ratio(sums, weights)
        if pred is None:
            raise ValueError(
                "X: a point's every training neighbour has sample_weight 0, so its "
                "weighted average is undefined"
            )
        return pred.reshape(len(X), *self.y_fit_.shape[1:])

    def score(self, X, y, sample_weight=None) -> float:
        """R² of the predictions, or ``-inf`` where they are undefined.

        With a compact kernel, a point of ``X`` with no training point inside the
        kernel's support has no prediction; its score is ``-inf`` (the worst), so
        that a grid search over bandwidths passes over such a bandwidth quietly
        instead of failing its scoring.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            Test inputs.
        y : array-like, shape (n_samples,) or (n_samples, n_outputs)
            True targets.
        sample_weight : array-like, shape (n_samples,), optional
            Weights of the test points.

        Returns
        -------
        float
            scikit-learn's ``r2_score``, or ``-inf``.
        """
        try:
            return super().score(X, y, sample_weight=sample_weight)
        except EmptySupportError:
            return -np.inf


class _LearnedMetric(nn.Module):
    """``q = W x``, ``k = W x`` and Gaussian attention with unit temperature."""

    def __init__(self, W0: torch.Tensor):
        super().__init__()
        self.W = nn.Parameter(W0.clone())

    def extra_repr(self) -> str:
        return f"n_components={self.W.shape[0]}, n_features={self.W.shape[1]}"

    def forward(self, x_query, x_train, y_train, mask=None) -> torch.Tensor:
        """Predictions ``(n_q, n_outputs)`` for ``x_query`` ``(n_q, d)``.

        From ``x_train`` ``(n, d)``, ``y_train`` ``(n, n_outputs)``; ``mask``
        ``(n_q, n)`` is True where a query may use a point.
        """
        return attend(  # fit checked the data; a diverging W shows in the scores
            x_query @ self.W.T,
            x_train @ self.W.T,
            y_train,
            score="neg_sq_dist",
            mask=mask,
        ).output


class MetricNadarayaWatson(RegressorMixin, BaseEstimator):
    """Gaussian Nadaraya–Watson with a learned linear map ``W``.

    Queries are ``W x``, keys ``W x_j``.

    The kernel is ``exp(-(x - x_j)ᵀ WᵀW (x - x_j) / 2)``, a Gaussian with inverse
    covariance ``WᵀW``. ``W`` starts at ``I / h`` with ``h`` the leave-one-out isotropic
    bandwidth (so training starts from :class:`NadarayaWatson`) and is trained with
    Adam, through :func:`attnlib.training.train`, on the leave-one-out squared error.

    Parameters
    ----------
    n_components : int, optional
        Rows of ``W`` (the rank of the metric); default ``n_features``. With fewer,
        ``W`` starts at ``h⁻¹`` times the top principal directions of ``X``.
    n_steps : int
        Optimiser steps (full batch when ``batch_size`` is None).
    lr : float
        Adam's learning rate.
    weight_decay : float
        Decoupled weight decay on ``W`` (shrinks the metric towards wider kernels).
    batch_size : int, optional
        Queries per step, each attending to every other training point.
    verbose : int
        0 (default) trains silently, as inside cross-validation; 1 or more shows the
        tqdm progress bar of :func:`attnlib.training.train`.
    random_state : int, RandomState or None
        Seeds the mini-batches and PyTorch's generator; an int gives the same fit every
        time.

    Attributes
    ----------
    W_ : ndarray, shape (n_components, n_features)
    metric_ : ndarray, shape (n_features, n_features)
        ``W_ᵀ W_``, the learned inverse covariance.
    init_bandwidth_ : float
    loss_history_ : list of float
        Leave-one-out loss at every step.
    n_iter_ : int
        Optimiser steps taken.
    X_fit_, y_fit_ : ndarray
        The training data (the keys and values).
    n_features_in_ : int
        The number of features seen by :meth:`fit`.

    Implements
    ----------
    §3.1 of the self-expression paper (q = W x, k = W x_j gives the Gaussian kernel with
    inverse covariance WᵀW); metric learning for kernel regression (Weinberger &
    Tesauro, 2007).
    """

    def __init__(
        self,
        n_components: int | None = None,
        *,
        n_steps: int = 300,
        lr: float = 0.02,
        weight_decay: float = 0.0,
        batch_size: int | None = None,
        verbose: int = 0,
        random_state=0,
    ):
        self.n_components = n_components
        self.n_steps = n_steps
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y):
        """Learn ``W`` on the leave-one-out loss.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            Training inputs, at least two.
        y : array-like, shape (n_samples,) or (n_samples, n_outputs)
            Training targets.

        Returns
        -------
        MetricNadarayaWatson
            The fitted estimator.
        """
        X, y = _training_arrays(self, X, y, np.float64, 2)
        n, d = X.shape
        p = (
            d
            if self.n_components is None
            else check_int(self.n_components, "n_components", maximum=d)
        )
        # n_steps, lr and weight_decay are checked once, by train().
        progress = check_int(self.verbose, "verbose", minimum=0) > 0
        batch = (
            n
            if self.batch_size is None
            else min(check_int(self.batch_size, "batch_size"), n)
        )
        seed = _seed(self.random_state)
        # NadarayaWatson's leave-one-out choice, on the arrays checked above
        grid = _default_bandwidths(X)
        loo_mse = _loo_errors(X, y, _weighted_values(y, None), None, "gaussian", grid)
        self.init_bandwidth_ = float(grid[np.argmin(loo_mse)])
        directions = (
            np.eye(d)
            if p == d
            else np.linalg.svd(X - X.mean(0), full_matrices=False)[2]
        )
        model = _LearnedMetric(torch.from_numpy(directions[:p] / self.init_bandwidth_))
        self.loss_history_ = train(
            model,
            _loo_loss,
            _batches(X, y, batch, seed),
            n_steps=self.n_steps,
            lr=self.lr,
            weight_decay=self.weight_decay,
            seed=seed,
            progress=progress,
            desc="metric NW",
        )
        self.n_iter_ = len(self.loss_history_)
        self.W_ = model.W.detach().cpu().numpy().copy()
        self.metric_ = self.W_.T @ self.W_
        self.X_fit_, self.y_fit_ = X, y
        return self

    def predict(self, X) -> np.ndarray:
        """Predict at new points with the learned metric.

        Streamed over the training set.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            Query points.

        Returns
        -------
        ndarray, shape (n_samples,) or (n_samples, n_outputs)
            The kernel-weighted averages of the training targets.
        """
        check_is_fitted(self, "W_")
        X = validate_data(self, host_array(X), dtype=np.float64, reset=False)
        return nadaraya_watson(
            X @ self.W_.T, self.X_fit_ @ self.W_.T, self.y_fit_
        ).numpy()


def _seed(random_state) -> int:
    """An int seeds as it always did (the same fit every time); else a seed is drawn."""
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(check_random_state(random_state).randint(2**31 - 1))


def _batches(X: np.ndarray, y: np.ndarray, batch: int, seed: int):
    """``train``'s batches: ``batch`` queries a step (all, or drawn by ``seed``)."""
    n = len(X)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y.reshape(n, -1))
    rng = torch.Generator().manual_seed(seed)

    def batches(step):
        idx = (
            torch.arange(n) if batch == n else torch.randperm(n, generator=rng)[:batch]
        )
        return idx, Xt, yt

    return batches


def _loo_loss(model: _LearnedMetric, batch) -> torch.Tensor:
    """Squared errors of each query in ``idx`` from all other training points."""
    idx, X, y = batch
    not_self = torch.arange(X.shape[0], device=X.device) != idx[:, None]
    return ((model(X[idx], X, y, mask=not_self) - y[idx]) ** 2).mean()
