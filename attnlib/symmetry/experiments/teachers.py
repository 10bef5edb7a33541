"""Chapter 06's task: random teachers, the sequences they label, and the error score.

Each seed draws a new teacher (:func:`make_teacher`), orthogonal equivariant with
knowledge, and :func:`knowledge_task` labels Gaussian token sequences with it, with
label noise for training and without for testing; :func:`relative_error` is the score
of every learner, 0 for a perfect prediction and 1 for predicting zero.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ...functional import output_of
from ...training import evaluating
from ...utils import as_tensor, check_int, check_positive
from ...utils.validation import SEED_MAX
from ..heads import KnowledgeAttention

__all__ = ["TEACHERS", "make_teacher", "knowledge_task", "relative_error"]

TEACHERS = ("quadratic", "rbf")
# One stream per kind of draw: a seed's teacher, its data and a learner seeded with
# torch.manual_seed(seed) must be separate draws (with one stream the learner started
# at the teacher's parameters and the first inputs were its knowledge vectors).
_TEACHER, _DATA = 1, 2


def _stream(seed: int, kind: int) -> int:
    """A seed for the ``kind`` draws of ``seed``, independent of every other kind."""
    return int(np.random.SeedSequence([seed, kind]).generate_state(1, np.uint64)[0])


def make_teacher(
    embed_dim: int,
    n_knowledge: int,
    *,
    kernel: str = "quadratic",
    sharpness: float = 2.0,
    seed: int = 0,
) -> KnowledgeAttention:
    """A random one-head :class:`~attnlib.symmetry.KnowledgeAttention`, scalar values.

    With ``value="scalar"``.

    ``kernel`` is one of ``TEACHERS``: ``"quadratic"`` lies in the class of the
    ``KnowledgeAttention`` learner, ``"rbf"`` has the same symmetries but lies outside
    it. ``sharpness`` scales the knowledge vectors, hence the scores by its square:
    larger values give peakier attention and a harder task.

    Parameters
    ----------
    embed_dim, n_knowledge : int
        Token size and knowledge vectors.
    kernel : str
        One of ``TEACHERS``.
    sharpness : float
        Scales the knowledge vectors.
    seed : int
        Seeds the teacher's parameters.

    Returns
    -------
    KnowledgeAttention
        The teacher, without gradients.

    Implements
    ----------
    A target that is orthogonal equivariant with knowledge (Definition 2 of the symmetry
    paper) and permutation equivariant; the RBF score is the kernel of its
    §3.3.
    """
    if kernel not in TEACHERS:
        raise ValueError(f"kernel must be one of {TEACHERS}, got {kernel!r}")
    check_positive(sharpness, "sharpness")
    seed = _stream(check_int(seed, "seed", minimum=0, maximum=SEED_MAX), _TEACHER)
    # The caller's global stream is left where it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        teacher = KnowledgeAttention(embed_dim, n_knowledge, kernel=kernel)
        with torch.no_grad():
            teacher.knowledge.mul_(sharpness)
            try:  # a unit-scale probe: its scores must not overflow
                teacher(torch.randn(1, 2, embed_dim))
            except ValueError as err:
                raise ValueError(
                    f"sharpness = {sharpness} makes the teacher's scores overflow; "
                    "use a smaller one"
                ) from err
    return teacher.requires_grad_(False)


def knowledge_task(
    teacher: nn.Module,
    n_sequences: int,
    length: int,
    *,
    noise: float = 0.0,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian token sequences ``X`` ``(n_sequences, length, d)``, noisy targets.

    The clean targets are equivariant with the teacher's knowledge whenever the teacher
    is (a :class:`~attnlib.symmetry.KnowledgeAttention` with ``value="scalar"``);
    ``noise`` is the standard deviation of the Gaussian noise added to every target
    entry.

    Parameters
    ----------
    teacher : nn.Module
        A module with an ``embed_dim`` (:func:`make_teacher`).
    n_sequences, length : int
        Sequences and tokens per sequence.
    noise : float
        Standard deviation of the label noise.
    seed : int
        The same seed gives the same data.

    Returns
    -------
    x, y : torch.Tensor, shape (n_sequences, length, embed_dim)
        Inputs and noisy targets, in the teacher's dtype.
    """
    n_sequences, length = (
        check_int(n_sequences, "n_sequences"),
        check_int(length, "length"),
    )
    noise = check_positive(noise, "noise", allow_zero=True)
    if not (isinstance(teacher, nn.Module) and hasattr(teacher, "embed_dim")):
        raise ValueError(
            "teacher must be a module with an embed_dim, such as make_teacher's, "
            f"got {type(teacher).__name__}"
        )
    g = torch.Generator().manual_seed(
        _stream(check_int(seed, "seed", minimum=0, maximum=SEED_MAX), _DATA)
    )
    p = next(teacher.parameters())
    x = torch.randn(n_sequences, length, teacher.embed_dim, generator=g).to(p)
    eps = noise * torch.randn(x.shape, generator=g).to(p)
    with torch.no_grad():
        return x, teacher(x) + eps


def relative_error(model: Callable, x, y) -> float:
    """``‖model(x) − y‖² / ‖y‖²`` without gradients: 0 is perfect, 1 is predicting zero.

    A module is evaluated in eval mode (dropout off, batch norm on its running
    statistics) and its mode restored after.

    Parameters
    ----------
    model : callable
        Maps ``x`` to a tensor (or an attention result) of ``y``'s shape.
    x : tensor or array-like, shape (..., n, d)
        Inputs.
    y : tensor or array-like, shape of ``model(x)``
        Targets, not all zero.

    Returns
    -------
    float
        The relative squared error, computed in float64.
    """
    if not callable(model):
        raise ValueError(f"model must be callable, got {type(model).__name__}")
    x = as_tensor(x, "x", min_ndim=2)
    y = as_tensor(y, "y", min_ndim=2, device=x.device)
    with evaluating(model):
        pred = output_of(model(x))
        y = y.to(pred.device)  # a module computes where its parameters are
        if pred.shape != y.shape:
            raise ValueError(
                f"model(x) has shape {tuple(pred.shape)} but y has {tuple(y.shape)}"
            )
        # In float64: squared norms of float32 data under- or overflow at 1e±20.
        pred, y = pred.double(), y.double()
        scale = (y**2).sum()
        if scale == 0:
            raise ValueError("y is zero: the relative error is undefined")
        return float(((pred - y) ** 2).sum() / scale)
