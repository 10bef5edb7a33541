"""Self-expressive coefficients for points never seen: two trained coders.

The Lasso gives coefficients only for the points it was solved on. A coder that is a
function of the points gives them for new points at a fixed cost:
:class:`SelfExpressiveNet` (in the spirit of SENet, two small embeddings and a learned
soft threshold) and :class:`LearnedISTACodes` (unrolled ISTA steps whose step sizes
and thresholds are learned), each trained on the self-expression loss by
:func:`fit_self_expressive_net` and :func:`fit_learned_ista`.
:func:`assign_by_coefficients` then labels a new point by the cluster that carries
most of its coefficients.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...errors import TrainingDivergedError
from ...utils import as_float_array, as_tensor, check_int, check_positive
from ...utils.boundary import checking, public, trusted
from ...utils.validation import SEED_MAX, module_input
from .._lasso.common import soft_threshold  # unchecked: inner loops

__all__ = [
    "SelfExpressiveNet",
    "fit_self_expressive_net",
    "LearnedISTACodes",
    "fit_learned_ista",
    "assign_by_coefficients",
]


class SelfExpressiveNet(nn.Module):
    """Self-expressive coefficients as a function of the points.

    ``c(x, x') = T_b(u(x)·w(x'))``.

    Two small MLPs embed the query point and the key point; the coefficient is the soft
    threshold ``T_b`` (learned ``b ≥ 0``) of their scaled inner product. Because the
    coefficients are a function, they exist for a point never seen in training.

    Implements
    ----------
    The self-expressive network of Zhang, You, Vidal & Li (2021), simplified (one hidden
    layer per embedding, ℓ1 penalty only); §5.3, difference 3 of the self-expression
    paper.

    Parameters
    ----------
    dim : int
        Point size.
    hidden : int
        Width of the two embeddings.
    scale : float
        Multiplies the inner product (divided by ``hidden``).
    """

    def __init__(self, dim: int, hidden: int = 64, scale: float = 1.0):
        super().__init__()
        dim, hidden = check_int(dim, "dim"), check_int(hidden, "hidden")
        self.query = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
        )
        self.key = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
        )
        # b = softplus(-8) ≈ 3e-4 at the start
        self.raw_b = nn.Parameter(torch.tensor(-8.0))
        self.scale = check_positive(scale, "scale") / hidden

    @public
    def forward(self, queries, keys, *, exclude_self: bool = False):
        """Coefficients of the queries over the keys.

        Parameters
        ----------
        queries : tensor, shape (n_q, dim)
            New or training points; a tensor must have the module's dtype.
        keys : tensor, shape (n_k, dim)
            The points they are written with.
        exclude_self : bool
            Zero the diagonal (queries = keys).

        Returns
        -------
        torch.Tensor, shape (n_q, n_k)
            The coefficients ``C``.
        """
        if checking():
            like = self.query[0].weight
            queries, keys = (
                module_input(x, name, like, ndim=2)
                for x, name in ((queries, "queries"), (keys, "keys"))
            )
            for x, name in ((queries, "queries"), (keys, "keys")):
                if x.shape[1] != like.shape[1]:
                    raise ValueError(
                        f"{name} must have dim = {like.shape[1]} features, "
                        f"got shape {tuple(x.shape)}"
                    )
        C = soft_threshold(
            self.scale * self.query(queries) @ self.key(keys).T,
            nn.functional.softplus(self.raw_b),
        )
        if exclude_self:
            C = C * (1 - torch.eye(C.shape[0], dtype=C.dtype, device=C.device))
        return C


@public
def fit_self_expressive_net(
    X,
    *,
    lam: float = 0.01,
    hidden: int = 64,
    n_steps: int = 300,
    lr: float = 3e-3,
    seed: int = 0,
    device: torch.device | str | None = None,
):
    """Train :class:`SelfExpressiveNet` on ``X``.

    The loss is ``½‖X − C X‖² + λ‖C‖₁`` with diag(C) = 0.

    Full-batch Adam; returns the model in eval mode and the loss per step.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The points, one per row (trained in float32).
    hidden : int
        Width of the embeddings.
    lam : float
        The ℓ1 weight λ.
    n_steps : int
        Adam steps (full batch).
    lr : float
        Adam's learning rate.
    seed : int
        Seeds the model's initialisation.
    device : str or torch.device, optional
        Where ``X``, the model and the fit live (default: the CPU).

    Returns
    -------
    model : SelfExpressiveNet
        The trained model, in eval mode.
    losses : list of float
        The loss at every step.
    """
    if checking():
        X, seed, (lam, n_steps, lr) = _entrance(X, seed, lam, n_steps, lr)
        hidden = check_int(hidden, "hidden")
    X = torch.as_tensor(np.asarray(X, np.float64), dtype=torch.float32, device=device)
    torch.manual_seed(seed)
    with trusted():
        model = SelfExpressiveNet(X.shape[1], hidden).to(X.device)
        return _fit_self_expression(model, X, lam, n_steps, lr)


def _entrance(X, seed, lam, n_steps, lr) -> tuple:
    """A fit's points, its seed and its loop's options, checked once at its entrance."""
    X = as_float_array(X, "X")
    seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    lam, lr = check_positive(lam, "lam"), check_positive(lr, "lr")
    return X, seed, (lam, check_int(n_steps, "n_steps"), lr)


def _fit_self_expression(
    model: nn.Module, X: torch.Tensor, lam: float, n_steps: int, lr: float
):
    """Full-batch Adam on ``(½‖X − C X‖² + λ‖C‖₁) / n``, ``C = model(X, X)``, diag 0.

    Its options are checked at the fits' entrance; it runs inside their ``trusted()``.
    """
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(n_steps):
        C = model(X, X, exclude_self=True)
        loss = (0.5 * ((X - C @ X) ** 2).sum() + lam * C.abs().sum()) / len(X)
        if not torch.isfinite(loss):
            if step == 0:
                raise ValueError(
                    f"X is too large for {X.dtype}: the loss overflows; rescale X"
                )
            raise TrainingDivergedError(
                f"lr = {lr} made the loss diverge at step {step}; try a smaller lr"
            )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.eval(), losses


class LearnedISTACodes(nn.Module):
    """Self-expressive codes of queries over keys by ``n_iter`` learned ISTA steps.

    ``C ← T_{ε_t λ_t}(C + ε_t (Q − C K) Kᵀ)`` from ``C = 0``, with ``ε_t = s_t / ‖K‖²``;
    only ``s_t`` and ``λ_t`` are learned, two scalars per step: a learned-step ISTA. It
    is not LISTA (Gregor & LeCun 2010), which also learns the matrices of each step;
    these stay those of Eq. (15). A fixed-cost forward pass, so it gives codes for new
    points.

    Parameters
    ----------
    n_iter : int
        Unrolled ISTA steps.
    lam : float
        Initial threshold λ of every step.
    """

    def __init__(self, n_iter: int = 5, lam: float = 0.01):
        super().__init__()
        self.n_iter = check_int(n_iter, "n_iter")
        self.raw_step = nn.Parameter(torch.zeros(self.n_iter))
        lam = check_positive(lam, "lam")
        # softplus⁻¹(λ) = λ + log(1 - e^{-λ}), finite for every positive λ
        # (log(expm1(λ)) overflows above λ ≈ 700).
        self.raw_lam = nn.Parameter(
            torch.full((self.n_iter,), lam + float(np.log(-np.expm1(-lam))))
        )

    @public
    def forward(self, queries, keys, *, exclude_self: bool = False):
        """Codes of the queries over the keys.

        Parameters
        ----------
        queries : tensor or array-like, shape (n_q, d)
            The points to code.
        keys : tensor or array-like, shape (n_k, d)
            The dictionary.
        exclude_self : bool
            Hold the diagonal at 0 (queries = keys).

        Returns
        -------
        torch.Tensor, shape (n_q, n_k)
            The codes, in the common dtype of the inputs and the parameters.
        """
        if checking():
            keys = as_tensor(keys, "keys", ndim=2, device=self.raw_step.device)
            queries = as_tensor(queries, "queries", ndim=2, device=keys.device)
            if queries.shape[1] != keys.shape[1]:
                raise ValueError(
                    f"queries must have the keys' {keys.shape[1]} features, "
                    f"got shape {tuple(queries.shape)}"
                )
        # The common dtype, at least the parameters' (float32 for half inputs: the
        # spectral norm has no half kernel).
        dtype = torch.promote_types(
            torch.promote_types(queries.dtype, keys.dtype), self.raw_step.dtype
        )
        queries, keys = queries.to(dtype), keys.to(dtype)
        base = 1.0 / torch.linalg.matrix_norm(keys, ord=2) ** 2
        if not torch.isfinite(base):
            raise ValueError(
                f"keys are too small for {dtype} (or all zero): their squared norm "
                "underflows; rescale them"
            )
        keep = (
            1.0
            - torch.eye(len(queries), len(keys), dtype=keys.dtype, device=keys.device)
            if exclude_self
            else 1.0
        )
        C = torch.zeros(len(queries), len(keys), dtype=keys.dtype, device=keys.device)
        for t in range(self.n_iter):
            # in (0, 2/‖K‖²): a stable step
            eps = base * 2 * torch.sigmoid(self.raw_step[t])
            C = soft_threshold(
                C + eps * (queries - C @ keys) @ keys.T,
                eps * nn.functional.softplus(self.raw_lam[t]),
            )
            C = C * keep
        return C


@public
def fit_learned_ista(
    X,
    *,
    n_iter: int = 5,
    lam: float = 0.002,
    n_steps: int = 200,
    lr: float = 0.05,
    seed: int = 0,
    device: torch.device | str | None = None,
):
    """Train :class:`LearnedISTACodes` on ``X``: ``½‖X − C X‖² + λ‖C‖₁``, diag(C) = 0.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The points, one per row (float64).
    n_iter : int
        Unrolled ISTA steps.
    lam : float
        The ℓ1 weight λ, also the starting threshold of every step.
    n_steps, lr, seed, device : int, float, int, str or torch.device
        As in :func:`fit_self_expressive_net` (the same loop trains both).

    Returns
    -------
    model : LearnedISTACodes
        The trained model, in eval mode.
    losses : list of float
        The loss at every step.
    """
    if checking():
        X, seed, (lam, n_steps, lr) = _entrance(X, seed, lam, n_steps, lr)
        n_iter = check_int(n_iter, "n_iter")
    X = torch.as_tensor(np.asarray(X, np.float64), device=device)
    torch.manual_seed(seed)
    with trusted():
        model = LearnedISTACodes(n_iter, lam).to(X.device, X.dtype)
        return _fit_self_expression(model, X, lam, n_steps, lr)


def assign_by_coefficients(C, train_labels, n_clusters: int) -> np.ndarray:
    """Label each query by the cluster of training points carrying most of its ``|C|``.

    Parameters
    ----------
    C : array-like, shape (n_queries, n_train)
        Coefficients of new points over the training points.
    train_labels : array-like of int, shape (n_train,)
        The clusters found on the training points, in ``[0, n_clusters)``.
    n_clusters : int
        The number of clusters.

    Returns
    -------
    ndarray of int, shape (n_queries,)
        The cluster of each query.
    """
    C = np.abs(as_float_array(C, "C"))
    n_clusters = check_int(n_clusters, "n_clusters")
    labels = np.asarray(train_labels)
    if (
        labels.shape != (C.shape[1],)
        or not np.issubdtype(labels.dtype, np.integer)
        or labels.min() < 0
        or labels.max() >= n_clusters
    ):
        raise ValueError(
            f"train_labels must be {C.shape[1]} integers (one per column of C) in "
            f"[0, {n_clusters}), got {labels.dtype} of shape {labels.shape}"
        )
    mass = np.stack([C[:, labels == k].sum(1) for k in range(n_clusters)], 1)
    return mass.argmax(1)
