"""A toy monotone-alignment task, chapter 07b's stand-in for machine translation.

It stands in for the paper's machine translation.

In the paper's De→En model every output step attends over the source, and the continuous
densities' means run close to the diagonal of the attention map (its Figure 2). The toy
keeps only that structure: the target's step ``i`` must copy the source token at
position ``round(i (S - 1) / (T - 1))``, a monotone alignment, so each step has to read
one place of the source and the places move forward with ``i``. :class:`AlignmentModel`
reads the source through discrete attention or through one continuous density per target
step.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from ...errors import TrainingDivergedError
from ...functional import attention
from ...training import evaluating, to_device, train
from ...utils import check_int
from ...utils.validation import SEED_MAX, check_type
from ..attention import continuous_attention_1d
from ..basis import GaussianRBF, ridge_value_coefficients
from ..densities import check_alpha, gaussian_pdf, truncated_parabola_pdf
from ._inputs import _row_batches, _token_ids

__all__ = [
    "AlignmentTask",
    "monotone_alignment",
    "AlignmentModel",
    "fit_alignment",
    "alignment_accuracy",
    "alignment_means",
]


class AlignmentTask(NamedTuple):
    """Source ids ``(n, S)``, target ids ``(n, T)``, aligned source positions ``(T,)``.

    Every sequence shares one monotone alignment: step ``t`` copies the source token at
    ``aligned[t]``, so ``target = source[:, aligned]``.
    """

    source: torch.Tensor
    target: torch.Tensor
    aligned: torch.Tensor


def monotone_alignment(
    n: int,
    source_len: int = 16,
    target_len: int = 8,
    *,
    vocab: int = 20,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> AlignmentTask:
    """Random sources; target step ``i`` is source token ``round(i (S-1)/(T-1))``.

    Parameters
    ----------
    n : int
        Sequences.
    source_len, target_len : int
        S ≥ T ≥ 2.
    vocab : int
        Token ids ``0..vocab-1``.
    seed : int
        The same seed gives the same data.
    device : str or torch.device, optional
        Where the tensors go (default: the CPU). They are drawn on the CPU and moved,
        so a seed gives the same data on every device.

    Returns
    -------
    AlignmentTask
    """
    n, S, T = (
        check_int(n, "n"),
        check_int(source_len, "source_len", minimum=2),
        check_int(target_len, "target_len", minimum=2),
    )
    if T > S:
        raise ValueError(f"target_len must be at most source_len ({S}), got {T}")
    g = torch.Generator().manual_seed(
        check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )
    source = torch.randint(check_int(vocab, "vocab", minimum=2), (n, S), generator=g)
    aligned = torch.round(
        torch.arange(T, dtype=torch.float64) * (S - 1) / (T - 1)
    ).long()
    return to_device(AlignmentTask(source, source[:, aligned], aligned), device)


class AlignmentModel(nn.Module):
    """Embed the source, let each target step attend over it, classify the copied token.

    Each target step ``i`` has a learned query ``q_i``. ``kind="discrete"``: attention
    of ``q_i`` against the source embeddings plus learned positional embeddings (softmax
    or sparsemax). ``kind="continuous"``: ``μ_i = sigmoid(w₁ᵀq_i)`` and
    ``σ_i² = softplus(w₂ᵀq_i)`` give a Gaussian (α = 1) or truncated parabola (α = 2)
    over the source's positions in ``[0, 1]``, read through the ridge-fitted value
    function on ``n_basis`` RBFs.

    Parameters
    ----------
    vocab, source_len, target_len : int
        Vocabulary size, source length S (the learned positions of the discrete model)
        and target length T.
    kind : {"discrete", "continuous"}
        The read-out (above).
    alpha : {1, 2}
        Softmax / Gaussian or sparsemax / truncated parabola.
    dim : int
        Embedding size.
    n_basis : int
        RBFs, half of standard deviation 0.03 and half 0.1 (continuous only).

    Implements
    ----------
    A toy of the machine-translation use of continuous attention in §4 (Figure 2) of the
    sparse-and-continuous attention paper: one density per output step over the source.
    """

    def __init__(
        self,
        vocab: int,
        source_len: int,
        target_len: int,
        kind: str = "continuous",
        *,
        alpha: int = 1,
        dim: int = 32,
        n_basis: int = 32,
    ):
        super().__init__()
        if kind not in ("discrete", "continuous"):
            raise ValueError(f"kind must be 'discrete' or 'continuous', got {kind!r}")
        self.kind, self.alpha = kind, check_alpha(alpha)
        dim, self.source_len = (
            check_int(dim, "dim"),
            check_int(source_len, "source_len"),
        )
        self.embed = nn.Embedding(check_int(vocab, "vocab"), dim)
        self.query = nn.Parameter(
            torch.randn(check_int(target_len, "target_len"), dim) / dim**0.5
        )
        if kind == "discrete":
            self.position = nn.Parameter(
                torch.randn(check_int(source_len, "source_len"), dim) / dim**0.5
            )
        else:
            self.head = nn.Linear(dim, 2)
            self.basis = GaussianRBF.linspace(
                check_int(n_basis, "n_basis", minimum=2), sigmas=(0.03, 0.1)
            )
        self.out = nn.Linear(dim, vocab)

    def _check_source(self, source) -> torch.Tensor:
        vocab, device = self.embed.num_embeddings, self.query.device
        source = _token_ids(source, "source", "S", vocab, device)
        if self.kind == "discrete" and source.shape[1] != self.source_len:
            raise ValueError(
                f"source must have source_len = {self.source_len} tokens (the learned "
                f"positions), got {source.shape[1]}"
            )
        return source

    def forward(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits for each target step and the attention over source positions.

        Parameters
        ----------
        source : tensor, shape (batch, S)
            Integer token ids in ``[0, vocab)``; ``S = source_len`` for the discrete
            model.

        Returns
        -------
        logits : torch.Tensor, shape (batch, T, vocab)
            Scores of the copied token at each target step.
        attention : torch.Tensor, shape (batch, T, S)
            The weights over source positions; for the continuous model the density at
            the source positions, ``p_i(t_ℓ)``, scaled to sum to one over ℓ (for display
            only).
        """
        H = self.embed(self._check_source(source))  # (batch, S, dim)
        b, S, _ = H.shape
        q = self.query.expand(b, -1, -1)
        if self.kind == "discrete":
            normalizer = "softmax" if self.alpha == 1 else "sparsemax"
            context, weights = attention(q, H + self.position, H, normalizer=normalizer)
            return self.out(context), weights
        pos = torch.linspace(0, 1, S, dtype=H.dtype, device=H.device)
        a, s = self.head(self.query).unbind(-1)
        # The same floor on σ² as the continuous-attention modules: never a point mass.
        mu, sigma2 = torch.sigmoid(a), nn.functional.softplus(s) + 1e-4
        r = continuous_attention_1d(mu, sigma2, self.basis, self.alpha)  # (T, N)
        B = ridge_value_coefficients(H, pos, self.basis)  # (batch, N, dim)
        context = r @ B  # (batch, T, dim)
        pdf = gaussian_pdf if self.alpha == 1 else truncated_parabola_pdf
        dens = pdf(pos, mu[:, None], sigma2[:, None]).detach()
        dens = dens / dens.sum(-1, keepdim=True).clamp_min(1e-30)
        return self.out(context), dens.expand(b, -1, -1)


def _check_model_task(model, task) -> None:
    check_type(model, "model", AlignmentModel, "an AlignmentModel")
    check_type(task, "task", AlignmentTask, "an AlignmentTask (see monotone_alignment)")


def fit_alignment(
    model: AlignmentModel,
    task: AlignmentTask,
    *,
    n_steps: int,
    batch: int = 32,
    lr: float = 1e-2,
    seed: int = 0,
    progress: bool = True,
    desc: str = "training",
) -> list[float]:
    """Train ``model`` on ``task`` with cross-entropy over every target step.

    By :func:`attnlib.training.train`.

    Parameters
    ----------
    model : AlignmentModel
        The model to train (in place).
    task : AlignmentTask
        Source and target sequences (:func:`monotone_alignment`).
    n_steps, batch, lr, seed, progress, desc : int, int, float, int, bool, str
        As in :func:`attnlib.training.train`; ``seed`` also draws the mini-batches.

    Returns
    -------
    list of float
        The loss at every step.
    """
    _check_model_task(model, task)
    batches = _row_batches(
        lambda idx: (task.source[idx], task.target[idx]), len(task.source), batch, seed
    )
    calls = 0

    def loss(m, b):
        nonlocal calls
        calls += 1
        try:
            logits = m(b[0])[0]
        except ValueError as err:
            # After a step, a non-finite density comes from the parameters the step
            # made: the run diverged (the first call sees the initial model only).
            if calls == 1 or "NaN or infinite" not in str(err):
                raise
            raise TrainingDivergedError(
                f"lr = {lr} made the model's outputs NaN or infinite; try a smaller lr"
            ) from err
        return nn.functional.cross_entropy(logits.flatten(0, 1), b[1].flatten())

    return train(
        model,
        loss,
        batches,
        n_steps=n_steps,
        lr=lr,
        seed=seed,
        progress=progress,
        desc=desc,
    )


def alignment_accuracy(model: AlignmentModel, task: AlignmentTask) -> float:
    """Fraction of target tokens (all steps of all sequences) that ``model`` gets right.

    Parameters
    ----------
    model : AlignmentModel
        Evaluated in eval mode; its mode is restored after.
    task : AlignmentTask
        Source and target sequences (:func:`monotone_alignment`).

    Returns
    -------
    float
        The accuracy, in [0, 1].
    """
    _check_model_task(model, task)
    with evaluating(model):
        logits, _ = model(task.source)
    target = task.target.to(logits.device)  # the model computes where it lives
    return (logits.argmax(-1) == target).double().mean().item()


def alignment_means(model: AlignmentModel) -> tuple[torch.Tensor, torch.Tensor]:
    """The continuous model's density means μ_i and variances σ_i², one per target step.

    Parameters
    ----------
    model : AlignmentModel
        A model with ``kind="continuous"``.

    Returns
    -------
    mu, sigma2 : torch.Tensor, shape (T,)
        The means in [0, 1] and the variances (with their floor).
    """
    if not isinstance(model, AlignmentModel) or model.kind != "continuous":
        raise ValueError(
            "model must be a continuous AlignmentModel (kind='continuous')"
        )
    with torch.no_grad():
        a, s = model.head(model.query).unbind(-1)
    return torch.sigmoid(a), nn.functional.softplus(s) + 1e-4
