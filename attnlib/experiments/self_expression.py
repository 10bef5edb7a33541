"""Experiments of chapter 05: data (nearly) a union of subspaces, and small models.

- :func:`motion` and :func:`faces`: the two classic subspace-clustering settings,
  generated (rigid motions under an affine camera; Lambertian objects under distant
  lights).
- :func:`sparse_combination_batch` and :func:`combination_report`: a task whose targets
  are sparse, signed combinations of values, the situation self-expression describes.
- :class:`AttentionStack`: Figure 4 of the self-expression paper as a stack, 2-3 blocks
  of attention (softmax, sparsemax or unrolled ISTA), residual connections and
  feed-forwards.
- :class:`SelfExpressiveNet`: parametrised self-expressive coefficients in the spirit of
  SENet (Zhang, You, Vidal & Li 2021), which give coefficients for points never seen.
- :func:`normalized_self_expression`: self-expressive coefficients constrained to the
  simplex through softmax or sparsemax, fitted to the self-expression loss.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..engines.lasso.common import soft_threshold  # unchecked: inner loops
from ..layers import MultiHeadAttention
from ..normalizers import softmax, sparsemax
from ..subspace import UnrolledISTAAttention
from ..training import TrainingDivergedError, to_device
from ..utils import (
    as_float_array,
    as_tensor,
    check_int,
    check_positive,
    module_input,
)

__all__ = [
    "motion",
    "faces",
    "sparse_combination_batch",
    "combination_report",
    "AttentionStack",
    "SelfExpressiveNet",
    "fit_self_expressive_net",
    "LearnedISTACodes",
    "fit_learned_ista",
    "normalized_self_expression",
    "assign_by_coefficients",
]


def motion(n_bodies: int = 3, n_points: int = 40, frames: int = 10, seed: int = 0):
    """Trajectories of points on rigid bodies seen by an affine camera.

    Each body has ``n_points`` random 3-D points; each frame applies a random affine
    camera ``(2, 4)`` to the homogeneous points, so a trajectory (``2 * frames``
    numbers) lies in the at most 4-dimensional subspace of its body (Tomasi & Kanade
    1992).

    Parameters
    ----------
    n_bodies : int
        Rigid bodies (the clusters).
    n_points : int
        Points per body.
    frames : int
        Camera frames.
    seed : int
        The same seed gives the same data.

    Returns
    -------
    X : ndarray, shape (n_bodies * n_points, 2 * frames)
        The trajectories, one per row.
    labels : ndarray, shape (n_bodies * n_points,)
        The body of each trajectory.
    """
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    n_points, frames = check_int(n_points, "n_points"), check_int(frames, "frames")
    bodies = []
    for _ in range(check_int(n_bodies, "n_bodies")):
        P = np.vstack([rng.standard_normal((3, n_points)), np.ones(n_points)])
        bodies.append(
            np.concatenate([rng.standard_normal((2, 4)) @ P for _ in range(frames)])
        )
    return np.hstack(bodies).T, np.repeat(np.arange(n_bodies), n_points)


def faces(n_faces: int = 3, n_images: int = 40, pixels: int = 100, seed: int = 0):
    """Images of convex Lambertian objects under distant lights, with attached shadows.

    Each object has random unit normals and albedos per pixel; an image under light
    ``l`` is ``albedo * max(normal · l, 0)``, near a low-dimensional subspace per object
    (Basri & Jacobs 2003). Lights point mostly towards the object.

    Parameters
    ----------
    n_faces : int
        Objects (the clusters).
    n_images : int
        Images (lights) per object.
    pixels : int
        Pixels per image.
    seed : int
        The same seed gives the same data.

    Returns
    -------
    X : ndarray, shape (n_faces * n_images, pixels)
        The images, one per row.
    labels : ndarray, shape (n_faces * n_images,)
        The object of each image.
    """
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    n_images, pixels = check_int(n_images, "n_images"), check_int(pixels, "pixels")
    images = []
    for _ in range(check_int(n_faces, "n_faces")):
        normals = rng.standard_normal((pixels, 3))
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        albedo = rng.uniform(0.3, 1, pixels)
        lights = rng.standard_normal((3, n_images)) + [[0], [0], [2]]
        images.append((albedo[:, None] * np.maximum(normals @ lights, 0)).T)
    return np.vstack(images), np.repeat(np.arange(n_faces), n_images)


def sparse_combination_batch(
    step: int,
    size: int = 64,
    n_keys: int = 12,
    n_queries: int = 8,
    dim: int = 8,
    device: torch.device | str | None = None,
):
    """A batch of the sparse-combination task, reproducible from ``step``.

    Keys are random unit vectors, values random vectors; each query is ``a k_j + b k_l``
    for two random keys and signed weights ``|a|, |b| ∈ [0.5, 1.5]``, and its target is
    ``a v_j + b v_l``.

    Parameters
    ----------
    step : int
        Seeds the batch: a training step's index, or a negative one (at least -10 000)
        for a held-out batch.
    size : int
        Tasks in the batch.
    n_keys, n_queries, dim : int
        Keys (at least 2) and queries per task, and their size.
    device : str or torch.device, optional
        Where the tensors go (default: the CPU). They are drawn on the CPU and moved,
        so a seed gives the same data on every device.

    Returns
    -------
    queries, targets : torch.Tensor, shape (size, n_queries, dim)
        The queries and their targets.
    keys, values : torch.Tensor, shape (size, n_keys, dim)
        The keys and values.
    right : torch.Tensor of bool, shape (size, n_queries, n_keys)
        The two right keys of each query.
    """
    # Negative steps seed held-out batches (the chapter's test set is step -1).
    step, size = check_int(step, "step", minimum=-10_000), check_int(size, "size")
    n_keys = check_int(n_keys, "n_keys", minimum=2)  # two right keys per query
    n_queries, dim = check_int(n_queries, "n_queries"), check_int(dim, "dim")
    g = torch.Generator().manual_seed(10_000 + step)
    k = nn.functional.normalize(torch.randn(size, n_keys, dim, generator=g), dim=-1)
    v = torch.randn(size, n_keys, dim, generator=g)
    pick = torch.rand(size, n_queries, n_keys, generator=g).argsort(-1)[..., :2]
    w = torch.randn(size, n_queries, 2, generator=g).sign()
    w = w * (0.5 + torch.rand(size, n_queries, 2, generator=g))
    C = torch.zeros(size, n_queries, n_keys).scatter_(-1, pick, w)
    return to_device((C @ k, k, v, C @ v, C != 0), device)


def combination_report(output, weights, test, n_params: int) -> dict:
    """Test error relative to target variance, exact zeros, ``|weight|`` on right keys.

    Parameters
    ----------
    output : torch.Tensor, shape (size, n_queries, dim)
        A model's outputs on ``test``.
    weights : torch.Tensor, shape (size, n_queries, n_keys), or with a head axis
        Its attention weights (reshaped to the shape of ``test[4]``).
    test : tuple of torch.Tensor, the shapes sparse_combination_batch gives
        A batch of :func:`sparse_combination_batch`.
    n_params : int
        The model's parameter count, reported alongside.

    Returns
    -------
    dict
        The relative test error, the fraction of exact zeros and the share of
        ``|weight|`` on the right keys (NaN if every weight is zero), with ``n_params``.
    """
    if not (
        isinstance(test, (tuple, list))
        and len(test) == 5
        and all(isinstance(t, torch.Tensor) for t in test)
    ):
        raise ValueError("test must be the 5 tensors of sparse_combination_batch")
    output = as_tensor(output, "output", device=test[3].device)
    weights = as_tensor(weights, "weights", device=test[3].device)
    if output.shape != test[3].shape:
        raise ValueError(
            f"output must have the targets' shape {tuple(test[3].shape)}, "
            f"got {tuple(output.shape)}"
        )
    if weights.numel() != test[4].numel():
        raise ValueError(
            f"weights must hold {test[4].numel()} entries (shape "
            f"{tuple(test[4].shape)}), got {tuple(weights.shape)}"
        )
    n_params = check_int(n_params, "n_params", minimum=0)
    W = weights.reshape(test[4].shape)
    return {
        "params": n_params,
        # in float64: squared errors of float32 outputs overflow near 1e19
        "test error / variance": ((output.double() - test[3].double()) ** 2)
        .mean()
        .item()
        / test[3].double().var().item(),
        "zero weights": (W == 0).float().mean().item(),
        "|weight| on the right keys": (
            (W.abs() * test[4]).sum() / W.abs().sum()
        ).item(),
    }


class AttentionStack(nn.Module):
    """Blocks of cross-attention to fixed keys/values, each with residual, feed-forward.

    ``h ← h + attend(h, keys, values)``, then ``h ← h + FF(h)`` with a two-layer ReLU
    feed-forward, ``n_layers`` times, from ``h = queries``. ``kind`` picks the
    attention: ``"softmax"`` or ``"sparsemax"``
    (:class:`attnlib.layers.MultiHeadAttention`, one head) or ``"ista"``
    (:class:`attnlib.sparse_coding.UnrolledISTAAttention`, which adds two scalars per
    unrolled step). The parameter counts are otherwise equal.

    Parameters
    ----------
    kind : {"softmax", "sparsemax", "ista"}
        The attention of every block.
    dim : int
        Token size.
    n_layers : int
        Blocks.
    n_iter, lam : int, float
        Unrolled steps and threshold of ``"ista"``.
    hidden : int
        Width of the feed-forward layers.

    Implements
    ----------
    Figure 4 of the self-expression paper read as a stack of layers (our construction:
    the paper sketches one layer and leaves the stack as a conjecture).
    """

    def __init__(
        self,
        kind: str,
        dim: int = 8,
        n_layers: int = 2,
        *,
        n_iter: int = 3,
        lam: float = 0.05,
        hidden: int = 16,
    ):
        super().__init__()
        if kind not in ("softmax", "sparsemax", "ista"):
            raise ValueError(
                f"kind must be 'softmax', 'sparsemax' or 'ista', got {kind!r}"
            )
        n_layers = check_int(n_layers, "n_layers")
        if kind == "ista":
            make = lambda: UnrolledISTAAttention(dim, n_iter=n_iter, lam=lam)  # noqa: E731
        else:
            make = lambda: MultiHeadAttention(dim, normalizer=kind)  # noqa: E731
        self.attn = nn.ModuleList(make() for _ in range(n_layers))
        self.ff = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
            for _ in range(n_layers)
        )

    def forward(self, queries, keys, values):
        """Return the output and the first block's weights.

        The first block codes the queries themselves over the keys, so its weights are
        the ones to compare with the task's true sparse codes.

        Parameters
        ----------
        queries : tensor, shape (..., n_q, dim)
            The starting tokens.
        keys, values : tensor, shape (..., n_k, dim)
            Fixed keys and values of every block; tensors have the module's dtype.

        Returns
        -------
        output : torch.Tensor, shape (..., n_q, dim)
            The tokens after the last block.
        weights : torch.Tensor, shape (..., n_q, n_k)
            The first block's attention weights.
        """
        like = self.ff[0][0].weight
        queries, keys, values = (
            module_input(x, name, like, min_ndim=2)
            for x, name in ((queries, "queries"), (keys, "keys"), (values, "values"))
        )
        for x, name in ((queries, "queries"), (keys, "keys"), (values, "values")):
            if x.shape[-1] != like.shape[1]:
                raise ValueError(
                    f"{name} must have dim = {like.shape[1]} features, "
                    f"got shape {tuple(x.shape)}"
                )
        h, first = queries, None
        for attn, ff in zip(self.attn, self.ff):
            out, weights = attn(h, keys, values)
            first = weights if first is None else first
            h = h + out
            h = h + ff(h)
        return h, first


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
        self.raw_b = nn.Parameter(
            torch.tensor(-8.0)
        )  # b = softplus(-8) ≈ 3e-4 at the start
        self.scale = check_positive(scale, "scale") / hidden

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
    model : nn.Module
        The trained model, in eval mode.
    losses : list of float
        The loss at every step.
    """
    X = torch.as_tensor(as_float_array(X, "X"), dtype=torch.float32, device=device)
    torch.manual_seed(check_int(seed, "seed", minimum=0))
    return _fit_self_expression(
        SelfExpressiveNet(X.shape[1], hidden).to(X.device), X, lam, n_steps, lr
    )


def _fit_self_expression(
    model: nn.Module, X: torch.Tensor, lam: float, n_steps: int, lr: float
):
    """Full-batch Adam on ``(½‖X − C X‖² + λ‖C‖₁) / n``, ``C = model(X, X)``, diag 0."""
    lam, lr = check_positive(lam, "lam"), check_positive(lr, "lr")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(check_int(n_steps, "n_steps")):
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
            eps = (
                base * 2 * torch.sigmoid(self.raw_step[t])
            )  # in (0, 2/‖K‖²): a stable step
            C = soft_threshold(
                C + eps * (queries - C @ keys) @ keys.T,
                eps * nn.functional.softplus(self.raw_lam[t]),
            )
            C = C * keep
        return C


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
    model : nn.Module
        The trained model, in eval mode.
    losses : list of float
        The loss at every step.
    """
    X = torch.as_tensor(as_float_array(X, "X"), device=device)
    torch.manual_seed(check_int(seed, "seed", minimum=0))
    return _fit_self_expression(
        LearnedISTACodes(n_iter, lam).to(X.device, X.dtype), X, lam, n_steps, lr
    )


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


def normalized_self_expression(
    X,
    normalizer: str = "softmax",
    *,
    n_steps: int = 300,
    lr: float = 0.1,
    seed: int = 0,
    device: torch.device | str | None = None,
):
    """Self-expressive coefficients on the simplex: ``C = normalizer(Z)``.

    ``Z`` is fitted to ``½‖X − C X‖²``.

    Each row of ``C`` is the softmax or sparsemax of free logits (the diagonal masked),
    so each point is written as a convex combination of the others; Adam on the logits.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The points, one per row.
    normalizer : {"softmax", "sparsemax"}
        Maps each row of logits to the simplex.
    n_steps : int
        Adam steps.
    lr : float
        Adam's learning rate.
    seed : int
        Seeds the initial logits.
    device : str or torch.device, optional
        Where ``X``, the model and the fit live (default: the CPU).

    Returns
    -------
    C : ndarray, shape (n_samples, n_samples)
        Rows on the probability simplex, zero diagonal.
    """
    norm = {"softmax": softmax, "sparsemax": sparsemax}.get(normalizer)
    if norm is None:
        raise ValueError(
            f"normalizer must be 'softmax' or 'sparsemax', got {normalizer!r}"
        )
    X = torch.as_tensor(as_float_array(X, "X"), device=device)
    lr = check_positive(lr, "lr")
    torch.manual_seed(check_int(seed, "seed", minimum=0))
    # Drawn on the CPU and moved: the same seed gives the same start on every device.
    Z = (0.01 * torch.randn(len(X), len(X), dtype=X.dtype)).to(X.device)
    Z.requires_grad_()
    mask = torch.eye(len(X), dtype=torch.bool, device=X.device)
    opt = torch.optim.Adam([Z], lr=lr)
    for _ in range(check_int(n_steps, "n_steps")):
        C = norm(Z.masked_fill(mask, -torch.inf), dim=-1)
        loss = 0.5 * ((X - C @ X) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return norm(Z.masked_fill(mask, -torch.inf), dim=-1).cpu().numpy()
