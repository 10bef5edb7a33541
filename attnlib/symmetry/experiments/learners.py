"""Chapter 06's learners, by name: what each one fixes and what it learns.

``LEARNERS`` maps a name to a factory ``(length, embed_dim, n_knowledge) -> module``,
from the closed-form floors of ``baselines`` through an MLP on the flattened
sequence (:class:`SequenceMLP`, no symmetry built in) and one standard attention head to
:class:`~attnlib.symmetry.KnowledgeAttention` with a scalar or a matrix value map, and
with a learned skip scalar (:class:`WithSkip`). ``CONTROLS`` holds learners that
change one thing of one of them, for the chapter's controls; the sweep does not run
them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ...functional import output_of
from ...layers import MultiHeadAttention
from ...utils import as_tensor, check_int
from ...utils.boundary import checking, public
from ...utils.validation import module_input
from ..heads import KnowledgeAttention
from .baselines import MeanBaseline, RidgeCVBaseline, ScaledInput, _fixed_length

__all__ = ["CONTROLS", "LEARNERS", "SequenceMLP", "WithSkip", "identity_value_start"]


class SequenceMLP(nn.Module):
    """A plain MLP on the flattened sequence: no symmetry built in, a fixed length only.

    Parameters
    ----------
    length : int
        The one sequence length it accepts.
    embed_dim : int
        Token size.
    hidden : int
        Width of the two hidden layers.
    """

    def __init__(self, length: int, embed_dim: int, hidden: int = 128):
        super().__init__()
        self.length, self.embed_dim = (
            check_int(length, "length"),
            check_int(embed_dim, "embed_dim"),
        )
        size = self.length * self.embed_dim
        hidden = check_int(hidden, "hidden")
        self.net = nn.Sequential(
            nn.Linear(size, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, size),
        )

    @public
    def forward(self, x) -> torch.Tensor:
        """Map ``x`` to a sequence of the same shape.

        Parameters
        ----------
        x : tensor or array-like, shape (..., length, embed_dim)
            Token sequences; a tensor must have the module's dtype.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The predicted sequences.
        """
        if checking():
            x = module_input(x, "x", self.net[0].weight, min_ndim=2)
        x = _fixed_length(x, self.length, self.embed_dim)
        return self.net(x.flatten(-2)).unflatten(-1, (self.length, self.embed_dim))


class WithSkip(nn.Module):
    """``model(x) + t x``: a model plus a learned skip scalar ``t`` (starting at 0).

    The skip term is one more equivariant map (every token keeps a multiple of
    itself), so a ``KnowledgeAttention`` with it stays equivariant with knowledge.

    Parameters
    ----------
    model : nn.Module
        Maps ``(..., n, d)`` to ``(..., n, d)``.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
        self.model = model
        self.skip = nn.Parameter(torch.zeros(()))

    def forward(self, x) -> torch.Tensor:
        """``model(x) + skip · x``.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, d)
            Token sequences.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The model's output plus the skip term.
        """
        out = output_of(self.model(x))
        if checking():  # wraps the caller's model, so not public (boundary)
            x = as_tensor(x, "x", min_ndim=2, dtype=out.dtype, device=out.device)
        return out + self.skip.to(out) * x


# name -> factory(length, embed_dim, n_knowledge). A module with a ``fit`` method is
# fitted in closed form; any other is trained and tuned (``GRID``).
LEARNERS: dict[str, Callable[[int, int, int], nn.Module]] = {
    "mean": lambda n, d, k: MeanBaseline(d),
    "scaled input": lambda n, d, k: ScaledInput(),
    "ridge": lambda n, d, k: RidgeCVBaseline(n, d),
    "MLP": lambda n, d, k: SequenceMLP(n, d, hidden=64),
    # attnlib's former defaults, which the chapter's sweep was run with: tokens as rows,
    # no dropout, each projection drawn as an nn.Linear
    "MultiHeadAttention": lambda n, d, k: MultiHeadAttention(
        d, 1, batch_first=None, init="linear"
    ),
    "KnowledgeAttention, linear value": lambda n, d, k: KnowledgeAttention(
        d, k, value="linear"
    ),
    "KnowledgeAttention": lambda n, d, k: KnowledgeAttention(d, k),
    "KnowledgeAttention + skip": lambda n, d, k: WithSkip(KnowledgeAttention(d, k)),
}


def identity_value_start(head: MultiHeadAttention) -> MultiHeadAttention:
    """``head`` with its value and output maps restarted at the identity, in place.

    ``W_V = W_O = I`` and their biases zero, so that the head starts, as
    ``KnowledgeAttention``'s scalar value map ``s = 1`` does, by averaging the tokens
    themselves; its query and key projections keep their draws. Only the start
    changes: every parameter is still trained.

    Parameters
    ----------
    head : MultiHeadAttention
        A head with packed projections (``kdim == vdim == embed_dim``).

    Returns
    -------
    MultiHeadAttention
        The same head.

    Implements
    ----------
    The control of chapter 06 that varies only the start of the standard head's value
    and output maps.
    """
    if not isinstance(head, MultiHeadAttention) or head.in_proj_weight is None:
        raise ValueError("head must be a MultiHeadAttention with packed projections")
    d = head.embed_dim
    with torch.no_grad():
        head.in_proj_weight[2 * d :].copy_(torch.eye(d))
        head.out_proj.weight.copy_(torch.eye(d))
        for bias in (head.in_proj_bias, head.out_proj.bias):
            if bias is not None:
                bias[-d:].zero_()
    return head


# Controls: one learner of LEARNERS with one thing changed (same factory signature).
CONTROLS: dict[str, Callable[[int, int, int], nn.Module]] = {
    "MultiHeadAttention, identity value start": lambda n, d, k: identity_value_start(
        LEARNERS["MultiHeadAttention"](n, d, k)
    ),
}
