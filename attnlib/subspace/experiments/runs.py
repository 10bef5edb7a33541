"""Chapter 05's trained experiments, one seed at a time, for the committed sweep.

Each function runs one experiment of chapter 05 for one seed, which draws the data and
initialises every model, and returns a flat dictionary of numbers. The sweep over seeds
(``benchmarks/self_expression.py``) writes ``attnlib/results/self_expression.json``;
the chapter asserts its claims on the medians and ranges there, and
``tests/test_results.py`` recomputes one seed.

- :func:`held_out_run`: coefficients of held-out points from the exact Lasso, five
  unrolled ISTA steps before and after their step sizes and thresholds are learned, and
  a SENet-style network; held-out clustering accuracy of each.
- :func:`normalized_run`: SSC's coefficients normalised after solving (ℓ1, softmax,
  sparsemax), self-expression constrained to the simplex, and softmax attention, each
  as an affinity for spectral clustering.
- :func:`stack_run`: Figure 4 of the self-expression paper as a two-block stack
  (softmax, sparsemax, unrolled ISTA) on the sparse-combination task.
"""

from __future__ import annotations

import numpy as np
import torch

from ...data import union_of_subspaces
from ...functional import attention
from ...training import evaluating, train
from ...utils import check_int
from ...utils.boundary import checking, public, trusted
from ...utils.validation import SEED_MAX
from .. import (
    affinity,
    clustering_accuracy,
    self_expressive,
    spectral_clustering,
)
from ..lasso import lasso_codes
from ..sparse_coding import sparse_coding_attention
from .held_out import (
    LearnedISTACodes,
    assign_by_coefficients,
    fit_learned_ista,
    fit_self_expressive_net,
)
from .simplex import normalized_self_expression
from .stack import AttentionStack, combination_report, sparse_combination_batch

__all__ = ["held_out_run", "normalized_run", "stack_run", "HELD_OUT", "NORMALIZED"]

#: Names of the four ways :func:`held_out_run` codes held-out points, in the order
#: of its accuracies.
HELD_OUT = (
    "exact Lasso",
    "ISTA steps, untrained",
    "ISTA steps, learned",
    "SENet-style",
)
#: Names of the seven normalised affinities :func:`normalized_run` compares, in the
#: order of its accuracies.
NORMALIZED = (
    "SSC, rows l1-normalised",
    "SSC, then softmax(|C|), tau = 1",
    "SSC, then sparsemax(|C|), tau = 1",
    "SSC, then sparsemax(|C|/tau), tau = 0.1",
    "softmax(Z), Z fitted",
    "sparsemax(Z), Z fitted",
    "softmax attention (XX^T / 0.05)",
)


@public
def held_out_run(seed: int, *, n_per_subspace: int = 200) -> dict:
    """Held-out clustering accuracy of four ways to code new points, for one seed.

    Half of the points (five random 6-dimensional subspaces of R^9) are fitted: SSC
    clusters them, and the learned coders train on them. Each held-out point gets the
    cluster carrying most of its ``|c|`` over the fitted points.

    Parameters
    ----------
    seed : int
        Draws the subspaces, the points, the split and every initialisation.
    n_per_subspace : int
        Points per subspace, fitted and held out together.

    Returns
    -------
    dict
        ``fit accuracy`` and one held-out accuracy per name of ``HELD_OUT``.
    """
    if checking():
        seed, n_per_subspace = _entrance(seed, n_per_subspace)
    with trusted():
        return _held_out(seed, n_per_subspace)


def _entrance(seed, n_per_subspace) -> tuple[int, int]:
    """A run's seed and its points per subspace, checked once at its entrance."""
    seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    return seed, check_int(n_per_subspace, "n_per_subspace")


def _held_out(seed: int, n_per_subspace: int) -> dict:
    """:func:`held_out_run` of checked arguments."""
    data = union_of_subspaces(5, 6, 9, n_per_subspace, seed=seed)
    n = len(data.X)
    fit, new = np.random.default_rng(seed).permutation(n)[: 2 * (n // 2)].reshape(2, -1)
    X_fit, X_new = data.X[fit], data.X[new]
    labels_fit = spectral_clustering(affinity(self_expressive(X_fit, "ssc", 0.002)), 5)
    T = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    senet, _ = fit_self_expressive_net(X_fit, lam=0.03, n_steps=200, seed=seed)
    lista, _ = fit_learned_ista(X_fit, n_iter=5, lam=0.01, n_steps=100, seed=seed)
    with evaluating(lista):
        codes = [
            lasso_codes(X_new, X_fit, 0.002),
            LearnedISTACodes(5, 0.01)(T(X_new), T(X_fit)).numpy(),
            lista(T(X_new), T(X_fit)).numpy(),
            senet(T(X_new), T(X_fit)).numpy(),
        ]
    out = {"fit accuracy": clustering_accuracy(data.labels[fit], labels_fit)}
    for name, C in zip(HELD_OUT, codes):
        labels = assign_by_coefficients(C, labels_fit, 5)
        out[name] = clustering_accuracy(data.labels[new], labels)
    return out


@public
def normalized_run(seed: int, *, n_per_subspace: int = 60) -> dict:
    """Clustering accuracy of normalised self-expressive coefficients, for one seed.

    Parameters
    ----------
    seed : int
        Draws the subspaces and points, and the initial logits of the fitted rows.
    n_per_subspace : int
        Points per subspace (five subspaces of dimension 6 in R^9).

    Returns
    -------
    dict
        One accuracy per name of ``NORMALIZED``, and ``cold keys``, the mean number
        of keys sparsemax keeps per point at tau = 0.1.
    """
    if checking():
        seed, n_per_subspace = _entrance(seed, n_per_subspace)
    with trusted():
        return _normalized(seed, n_per_subspace)


def _normalized(seed: int, n_per_subspace: int) -> dict:
    """:func:`normalized_run` of checked arguments."""
    d = union_of_subspaces(5, 6, 9, n_per_subspace, seed=seed)
    n = len(d.X)
    C = np.abs(self_expressive(d.X, "ssc", 0.002))
    mask = ~torch.eye(n, dtype=torch.bool)

    def normalise(S, normalizer, tau=1.0):
        return attention(
            d.X,
            d.X,
            d.X,
            score=lambda q, k: torch.as_tensor(S),
            normalizer=normalizer,
            mask=mask,
            temperature=tau,
        ).weights.numpy()

    cold = normalise(C, "sparsemax", 0.1)
    coefs = [
        C / np.maximum(C.sum(1, keepdims=True), 1e-300),
        normalise(C, "softmax"),
        normalise(C, "sparsemax"),
        cold,
        normalized_self_expression(d.X, seed=seed),
        normalized_self_expression(d.X, "sparsemax", seed=seed),
        normalise(d.X @ d.X.T, "softmax", 0.05),
    ]
    out = {
        name: clustering_accuracy(d.labels, spectral_clustering(affinity(W), 5))
        for name, W in zip(NORMALIZED, coefs)
    }
    out["cold keys"] = float((cold > 0).sum(1).mean())
    return out


@public
def stack_run(seed: int, *, n_steps: int = 200) -> dict:
    """Two-block stacks of three attentions on the sparse-combination task, one seed.

    Parameters
    ----------
    seed : int
        Seeds the training batches (steps ``1000 seed + t``), the held-out batch (step
        ``-1 - seed``) and every initialisation.
    n_steps : int
        Adam steps per stack (lr 0.02, batches of 64 tasks).

    Returns
    -------
    dict
        For each of ``softmax``, ``sparsemax``, ``ista`` and ``lasso`` (the Lasso solved
        by 300 ISTA steps, nothing learned): the relative test error, the share of exact
        zeros and of ``|weight|`` on the right keys, and the parameter count, under keys
        ``"<kind> <quantity>"``.
    """
    if checking():
        seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
        n_steps = check_int(n_steps, "n_steps")
    with trusted():
        return _stack(seed, n_steps)


def _stack(seed: int, n_steps: int) -> dict:
    """:func:`stack_run` of checked arguments."""
    test = sparse_combination_batch(-1 - seed, 512)
    loss_fn = lambda model, b: ((model(*b[:3])[0] - b[3]) ** 2).mean()  # noqa: E731
    batches = lambda step: sparse_combination_batch(1000 * seed + step)  # noqa: E731
    reports = {}
    for kind in ("softmax", "sparsemax", "ista"):
        torch.manual_seed(seed)
        model = AttentionStack(kind, dim=8, n_layers=2)
        train(
            model,
            loss_fn,
            batches,
            n_steps=n_steps,
            lr=2e-2,
            seed=seed,
            device=test[0].device,
            progress=False,
        )
        with evaluating(model):
            n_params = sum(p.numel() for p in model.parameters())
            out, W = model(*test[:3])
            reports[kind] = combination_report(out, W, test, n_params)
    lasso = sparse_coding_attention(*test[:3], lam=0.01, n_iter=300)
    reports["lasso"] = combination_report(*lasso, test, 0)
    short = {
        "test error / variance": "error",
        "zero weights": "zeros",
        "|weight| on the right keys": "right",
        "params": "params",
    }
    return {
        f"{kind} {short[q]}": float(v)
        for kind, rep in reports.items()
        for q, v in rep.items()
    }
