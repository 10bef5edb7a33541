"""Generated documents: chapter 07b's stand-in for document classification (Table 1).

Long token sequences whose binary label is carried by a contiguous span of cue words
(:func:`span_documents`), or, in the diffuse variant, by cue words spread over the whole
document; a small classifier that reads them through discrete, continuous, combined or
oracle-located continuous attention (:class:`DocumentClassifier`); and the paper's Table
1, for the chapter to set our results beside (:data:`PAPER_TABLE1`, :func:`table1`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ...functional import attention
from ...training import to_device
from ...utils import as_tensor, check_in_range, check_int, check_positive
from ...utils.boundary import checking, public
from ...utils.validation import SEED_MAX
from ..basis import GaussianRBF
from ..densities import check_alpha
from ..modules import ContinuousAttention1D, ContinuousAttentionOutput
from ._inputs import _token_ids

__all__ = [
    "SpanDocuments",
    "span_documents",
    "DocumentClassifier",
    "PAPER_TABLE1",
    "TABLE1_ROWS",
    "table1",
]

#: Table 1 of Martins et al. (2020), "Sparse and continuous attention mechanisms"
#: (NeurIPS): IMDB test accuracy (%) by attention and number N of RBFs (``None``:
#: discrete attention over all L ≈ 280 words). Rows in the paper's order.
PAPER_TABLE1: dict[str, dict[int | None, float]] = {
    "discrete softmax": {None: 90.78},
    "discrete sparsemax": {None: 90.58},
    "continuous softmax": {32: 90.20, 64: 90.68, 128: 90.52},
    "continuous sparsemax": {32: 90.52, 64: 89.63, 128: 90.90},
    "combined softmax": {32: 90.98, 64: 90.69, 128: 89.62},
    "combined sparsemax": {32: 91.10, 64: 91.18, 128: 90.98},
}
#: The paper's row order (its "Disc. + Cont." rows are our "combined").
TABLE1_ROWS = tuple(PAPER_TABLE1)


class SpanDocuments(NamedTuple):
    """Generated "documents": token ids ``(n, length)``, labels ``(n,)``, span starts.

    Document ``b``'s cue words lie in ``[start[b], start[b] + span)``; ``start`` is
    ``(n,)``, and ``span`` is one int for every document (``span = length``: diffuse).
    """

    tokens: torch.Tensor
    labels: torch.Tensor
    start: torch.Tensor
    span: int


def span_documents(
    n: int,
    length: int = 256,
    *,
    span: int = 24,
    vocab: int = 40,
    cue: float = 0.3,
    decoys: float = 0.03,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> SpanDocuments:
    """Long token sequences whose label is told by one contiguous span placed at random.

    Tokens ``0..vocab-1`` are neutral; ``vocab..vocab+3`` are "positive" and
    ``vocab+4..vocab+7`` "negative" cue words. Inside the span a fraction ``cue`` of the
    tokens are cue words of the document's class; elsewhere a fraction ``decoys`` are
    cue words of either class, so counting cue words over the whole document is noisy
    and the model must find the span. With ``span = length`` the label is *diffuse*: cue
    words anywhere, no place matters more than another.

    Parameters
    ----------
    n, length, span : int
        Documents, tokens per document, tokens in the label-carrying span (≤
        ``length``).
    vocab : int
        Neutral words; the vocabulary has ``vocab + 8`` words.
    cue, decoys : float
        Fractions of cue words inside the span and of decoys outside it, in [0, 1].
    seed : int
        The same seed gives the same data.
    device : str or torch.device, optional
        Where the tensors go (default: the CPU). They are drawn on the CPU and moved,
        so a seed gives the same data on every device.

    Returns
    -------
    SpanDocuments
    """
    n, length, span = (
        check_int(n, "n"),
        check_int(length, "length"),
        check_int(span, "span"),
    )
    if span > length:
        raise ValueError(f"span must be at most length ({length}), got {span}")
    vocab = check_int(vocab, "vocab")
    cue = check_in_range(cue, "cue", 0.0, 1.0)
    decoys = check_in_range(decoys, "decoys", 0.0, 1.0)
    g = torch.Generator().manual_seed(
        check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )
    tokens = torch.randint(vocab, (n, length), generator=g)
    labels = torch.randint(2, (n,), generator=g)
    decoy = torch.rand(n, length, generator=g) < decoys
    tokens = torch.where(
        decoy, vocab + torch.randint(8, (n, length), generator=g), tokens
    )
    start = torch.randint(length - span + 1, (n,), generator=g)
    idx = start[:, None] + torch.arange(span)
    is_cue = torch.rand(n, span, generator=g) < cue
    cue_words = (
        vocab + 4 * (1 - labels[:, None]) + torch.randint(4, (n, span), generator=g)
    )
    tokens.scatter_(1, idx, torch.where(is_cue, cue_words, tokens.gather(1, idx)))
    return to_device(SpanDocuments(tokens, labels, start, span), device)


class DocumentClassifier(nn.Module):
    """Embedding and convolution encoder, one attention read-out, a linear classifier.

    ``kind`` is

    * ``"discrete"``: a learned query, :func:`attnlib.functional.attention` with softmax
      (α = 1) or sparsemax (α = 2);
    * ``"continuous"``: :class:`~attnlib.continuous.ContinuousAttention1D` whose μ and
      σ² come from the max-pooled encoder output (the paper's continuous model);
    * ``"combined"``: discrete attention plus continuous attention moment-matched to it,
      the two contexts summed (no parameter beyond the discrete model's);
    * ``"oracle"``: a control: continuous attention moment-matched to the uniform
      weights on the true span, so μ sits at the span's centre and σ² is its spread; the
      forward pass takes the spans' ``start``.

    Parameters
    ----------
    vocab : int
        Vocabulary size.
    kind : {"discrete", "continuous", "combined", "oracle"}
        The read-out (above).
    alpha : {1, 2}
        Softmax / Gaussian or sparsemax / truncated parabola.
    n_basis : int
        RBFs of the continuous read-out (half of standard deviation 0.1, half 0.5).
    dim : int
        Token size.
    n_classes : int
        Classes of the linear classifier.
    span : int
        Span length, for ``kind="oracle"``.
    init_var : float, optional
        For ``kind="continuous"``: start σ² at this value (the head's bias is set so
        that ``softplus(bias) = init_var``) instead of at the default initialisation's
        ``softplus(w₂ᵀv + bias)``, which with random weights and ``v ≥ 0`` is about 1.

    Implements
    ----------
    The document-classification models of §4 (Table 1) of the sparse-and-continuous
    attention paper; the oracle is ours.
    """

    KINDS = ("discrete", "continuous", "combined", "oracle")

    def __init__(
        self,
        vocab: int,
        kind: str = "discrete",
        *,
        alpha: int = 1,
        n_basis: int = 32,
        dim: int = 24,
        n_classes: int = 2,
        span: int = 24,
        init_var: float | None = None,
    ):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        self.kind, self.alpha = kind, check_alpha(alpha)
        self.span = check_int(span, "span")
        dim, n_basis = check_int(dim, "dim"), check_int(n_basis, "n_basis", minimum=2)
        self.embed = nn.Embedding(check_int(vocab, "vocab"), dim)
        self.conv = nn.Conv1d(dim, dim, 5, padding=2)
        # Only the models that attend discretely own a query: a parameter nothing reads
        # would still be counted, initialised and handed to the optimiser.
        self.query = None
        if kind in ("discrete", "combined"):
            self.query = nn.Parameter(torch.randn(1, dim) / dim**0.5)
        basis = GaussianRBF.linspace(n_basis, sigmas=(0.1, 0.5))
        head = dim if kind == "continuous" else None
        self.cont = ContinuousAttention1D(basis, in_features=head, alpha=alpha)
        if init_var is not None:
            if kind != "continuous":
                raise ValueError(
                    f"init_var applies to kind='continuous' only, got kind={kind!r}"
                )
            init_var = check_positive(init_var, "init_var")
            with torch.no_grad():  # the head's second output is σ²'s softplus argument
                self.cont.head.bias[1] = math.log(math.expm1(init_var))
        self.out = nn.Linear(dim, check_int(n_classes, "n_classes", minimum=2))

    def _span_weights(self, start, length: int, like: torch.Tensor) -> torch.Tensor:
        if checking():
            start = as_tensor(start, "start", ndim=1, device=like.device)
        pos = torch.arange(length, device=like.device)
        inside = (pos >= start[:, None]) & (pos < start[:, None] + self.span)
        return inside.to(like.dtype) / self.span

    @public
    def forward(
        self, tokens: torch.Tensor, start: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None, ContinuousAttentionOutput | None]:
        """Classify documents through one attention read-out.

        Parameters
        ----------
        tokens : tensor, shape (batch, length)
            Integer token ids in ``[0, vocab)``.
        start : tensor, shape (batch,), optional
            Where each span begins; required for, and only for, ``kind="oracle"``.

        Returns
        -------
        logits : torch.Tensor, shape (batch, n_classes)
            Class scores.
        weights : torch.Tensor, shape (batch, length), or None
            The discrete attention weights, for the kinds that attend discretely.
        continuous : ContinuousAttentionOutput or None
            The continuous read-out, for the kinds that have one.
        """
        if (start is None) == (self.kind == "oracle"):
            raise ValueError("start must be given if and only if kind is 'oracle'")
        if checking():
            vocab, device = self.embed.num_embeddings, self.embed.weight.device
            tokens = _token_ids(tokens, "tokens", "length", vocab, device)
        emb = self.embed(tokens).transpose(1, 2)
        H = torch.relu(self.conv(emb)).transpose(1, 2)  # (batch, L, dim)
        weights = cont = None
        context = 0
        if self.query is not None:
            normalizer = "softmax" if self.alpha == 1 else "sparsemax"
            q = self.query.expand(len(H), 1, -1)
            out, weights = attention(q, H, H, normalizer=normalizer)
            weights, context = weights[:, 0], out[:, 0]
        if self.kind == "continuous":
            cont = self.cont(H)
        elif self.kind == "combined":
            cont = self.cont(H, weights=weights)
        elif self.kind == "oracle":
            cont = self.cont(H, weights=self._span_weights(start, H.shape[1], H))
        if cont is not None:
            context = context + cont.context
        return self.out(context), weights, cont


def table1(rows: list[dict]):
    """Our document results beside the paper's Table 1, in its layout.

    Parameters
    ----------
    rows : list of dict
        The ``"documents"`` entries of ``results.load("continuous")``: ``attention``
        (``"discrete"``, ``"continuous"`` or ``"combined"``), ``alpha``, ``N`` (None for
        discrete) and ``accs`` (one test accuracy, a fraction, per seed).

    Returns
    -------
    pandas.DataFrame
        Rows in the paper's order; for each column (``"L"`` for discrete attention, then
        N = 32, 64, 128), ``"ours (%)"`` (median over seeds and, in brackets, the range
        min-max, in percent) and ``"paper (%)"``.
    """
    import pandas as pd

    keys = {"attention", "alpha", "N", "accs"}
    if not isinstance(rows, (list, tuple)) or not all(
        isinstance(r, dict) and keys <= r.keys() for r in rows
    ):
        raise ValueError(f"rows must be a list of dicts with the keys {sorted(keys)}")
    ours = {}
    for r in rows:
        name = f"{r['attention']} {'softmax' if r['alpha'] == 1 else 'sparsemax'}"
        accs = 100 * np.asarray(r["accs"], dtype=float)
        ours[name, r["N"]] = (
            f"{np.median(accs):.1f} ({accs.min():.1f}–{accs.max():.1f})"
        )
    columns = [None, 32, 64, 128]
    label = {None: "discrete (all L)", 32: "N = 32", 64: "N = 64", 128: "N = 128"}
    table = {}
    for n in columns:
        table[label[n], "ours (%)"] = [ours.get((name, n), "") for name in TABLE1_ROWS]
        table[label[n], "paper (%)"] = [
            f"{PAPER_TABLE1[name][n]:.2f}" if n in PAPER_TABLE1[name] else ""
            for name in TABLE1_ROWS
        ]
    return pd.DataFrame(table, index=list(TABLE1_ROWS))
