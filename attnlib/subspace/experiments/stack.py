"""Figure 4 of the self-expression paper as a stack, and the task it is trained on.

In the sparse-combination task (:func:`sparse_combination_batch`) every target is a
sparse, signed combination of values, the situation self-expression describes;
:class:`AttentionStack` stacks blocks of softmax, sparsemax or unrolled-ISTA
attention with residual connections and feed-forwards, and
:func:`combination_report` scores a trained stack: its test error, its exact zeros,
and how much of its weight lands on the right keys.
"""

from __future__ import annotations

import torch
from torch import nn

from ...layers import MultiHeadAttention
from ...training import to_device
from ...utils import as_tensor, check_int
from ...utils.boundary import checking, public, trusted
from ...utils.validation import module_input
from ..sparse_coding import UnrolledISTAAttention

__all__ = ["sparse_combination_batch", "combination_report", "AttentionStack"]


@public
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
        Seeds the batch: a training step's index, or a negative one for a held-out
        batch.
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
    # Negative steps seed held-out batches (the chapter's test set is step -1). Steps
    # down to -10 000 keep the generator seeds they always had; below that (the test
    # sets of shifted seeds, ATTNLIB_SEED_OFFSET) they move far above every training
    # batch's seed, so that no held-out batch is ever a training batch.
    if checking():
        step = check_int(step, "step", minimum=-(2**40))
        size, dim = check_int(size, "size"), check_int(dim, "dim")
        n_keys = check_int(n_keys, "n_keys", minimum=2)  # two right keys per query
        n_queries = check_int(n_queries, "n_queries")
    g = torch.Generator().manual_seed(
        10_000 + step if step >= -10_000 else 2**41 - step
    )
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
    """A stack of cross-attention blocks over fixed keys and values.

    ``h ← h + attend(h, keys, values)``, then ``h ← h + FF(h)`` with a two-layer ReLU
    feed-forward, ``n_layers`` times, from ``h = queries``. ``kind`` picks the
    attention: ``"softmax"`` or ``"sparsemax"``
    (:class:`attnlib.layers.MultiHeadAttention`, one head) or ``"ista"``
    (:class:`attnlib.subspace.UnrolledISTAAttention`, which adds two
    scalars per unrolled step). The parameter counts are otherwise equal.

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
            make = lambda: MultiHeadAttention(  # noqa: E731
                dim, 1, batch_first=None, normalizer=kind, init="linear"
            )  # attnlib's former defaults, which the chapter's runs used
        self.attn = nn.ModuleList(make() for _ in range(n_layers))
        # MultiHeadAttention's weights per head, (..., 1, n_q, n_k), as in the runs
        self._per_head = {} if kind == "ista" else {"average_attn_weights": False}
        self.ff = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
            for _ in range(n_layers)
        )

    @public
    def forward(self, queries, keys, values):
        """Return the output and the first block's weights.

        Only the first block codes the queries themselves over the keys (later blocks
        code the updated tokens): its weights are the ones to compare with the task's
        true sparse codes.

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
        if checking():
            queries, keys, values = self._checked(queries, keys, values)
        h, first = queries, None
        with trusted():  # the blocks read the tokens checked here and their own
            for attn, ff in zip(self.attn, self.ff):
                out, weights = attn(h, keys, values, **self._per_head)
                first = weights if first is None else first
                h = h + out
                h = h + ff(h)
        return h, first

    def _checked(self, queries, keys, values) -> tuple[torch.Tensor, ...]:
        """The three inputs as tensors of the module's dtype, ``dim`` wide."""
        like = self.ff[0][0].weight
        checked = tuple(
            module_input(x, name, like, min_ndim=2)
            for x, name in ((queries, "queries"), (keys, "keys"), (values, "values"))
        )
        for x, name in zip(checked, ("queries", "keys", "values")):
            if x.shape[-1] != like.shape[1]:
                raise ValueError(
                    f"{name} must have dim = {like.shape[1]} features, "
                    f"got shape {tuple(x.shape)}"
                )
        return checked
