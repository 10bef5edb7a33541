"""Cluttered digits: chapter 07b's stand-in for visual question answering (Table 2).

``load_digits`` digits pasted at random into noisy, cluttered canvases
(:func:`cluttered_digits`), and a small CNN that reads its feature grid through discrete
attention or through a 2-D Gaussian or truncated paraboloid moment-matched to it
(:class:`DigitClassifier`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ...functional import attention
from ...training import to_device
from ...utils import check_int, check_positive
from ...utils.boundary import checking, public
from ...utils.validation import SEED_MAX, module_input
from ..basis import GaussianRBF
from ..densities import check_alpha
from ..modules import ContinuousAttention2D, ContinuousAttentionOutput

__all__ = ["ClutteredDigits", "cluttered_digits", "DigitClassifier"]


class ClutteredDigits(NamedTuple):
    """``load_digits`` digits pasted at random into noisy, cluttered canvases."""

    images: torch.Tensor  # (n, 1, size, size) in [0, 1]
    labels: torch.Tensor  # (n,)
    corner: torch.Tensor  # (n, 2): top-left (row, col) of the digit


def cluttered_digits(
    n: int,
    size: int = 32,
    *,
    n_clutter: int = 4,
    noise: float = 0.1,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> ClutteredDigits:
    """Canvases, each with one 8 × 8 ``load_digits`` digit (the label) placed at random.

    ``n_clutter`` random 3 × 3 crops of other digits are scattered as clutter, and
    Gaussian noise is added.

    Parameters
    ----------
    n : int
        Canvases.
    size : int
        Side of each canvas, at least 8.
    n_clutter : int
        Clutter crops per canvas.
    noise : float
        Standard deviation of the Gaussian noise.
    seed : int
        The same seed gives the same data.
    device : str or torch.device, optional
        Where the tensors go (default: the CPU). They are drawn on the CPU and moved,
        so a seed gives the same data on every device.

    Returns
    -------
    ClutteredDigits
        ``images`` ``(n, 1, size, size)``, ``labels`` ``(n,)`` and each digit's
        top-left ``corner`` ``(n, 2)``.
    """
    from sklearn.datasets import load_digits

    n, size = check_int(n, "n"), check_int(size, "size", minimum=8)
    n_clutter = check_int(n_clutter, "n_clutter", minimum=0)
    noise = check_positive(noise, "noise", allow_zero=True)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    digits = load_digits()
    glyphs, targets = digits.images / 16.0, digits.target
    pick = rng.integers(len(glyphs), size=n)
    canvas = noise * rng.standard_normal((n, size, size))
    corner = rng.integers(0, size - 7, size=(n, 2))
    for b in range(n):
        for _ in range(n_clutter):
            g = glyphs[rng.integers(len(glyphs))]
            i, j = rng.integers(0, 6, 2)
            r, c = rng.integers(0, size - 2, 2)
            canvas[b, r : r + 3, c : c + 3] += g[i : i + 3, j : j + 3]
        r, c = corner[b]
        canvas[b, r : r + 8, c : c + 8] += glyphs[pick[b]]
    images = torch.as_tensor(
        np.clip(canvas, 0, 1), dtype=torch.get_default_dtype()
    ).unsqueeze(1)
    digits = ClutteredDigits(
        images, torch.as_tensor(targets[pick]), torch.as_tensor(corner)
    )
    return to_device(digits, device)


class DigitClassifier(nn.Module):
    """A small CNN feature map, one attention read-out over it, a linear classifier.

    The feature map lies on a grid; the read-out attends over the grid cells.

    The encoder halves the resolution once (a ``size × size`` canvas gives a
    ``size/2 × size/2`` grid) and its cells see 16 × 16 pixels (a 3 × 3 convolution, a 2
    × 2 pooling, three more 3 × 3 convolutions), enough to hold an 8 × 8 digit whatever
    its offset; batch normalisation keeps the small network trainable at the chapter's
    step counts. ``kind`` is ``"discrete"`` (attention over the cells: a learned query
    against a linear map of the cell features as keys, the features as values) or
    ``"continuous"``: the same discrete weights moment-matched to a 2-D Gaussian (α = 1)
    or truncated paraboloid (α = 2), whose expectation of the RBF-fitted feature map is
    the context, as in the paper's visual question answering model.

    Parameters
    ----------
    kind : {"discrete", "continuous"}
        The read-out (above).
    alpha : {1, 2}
        Softmax / Gaussian or sparsemax / truncated paraboloid.
    n_side : int
        The continuous read-out's basis is an ``n_side × n_side`` grid of RBFs (match
        the feature grid).
    channels : int
        Feature size.
    n_classes : int
        Classes of the linear classifier.

    Implements
    ----------
    The 2-D attention models of §4 (Table 2, Figure 3) of the sparse-and-continuous
    attention paper.
    """

    def __init__(
        self,
        kind: str = "discrete",
        *,
        alpha: int = 1,
        n_side: int = 8,
        channels: int = 32,
        n_classes: int = 10,
    ):
        super().__init__()
        if kind not in ("discrete", "continuous"):
            raise ValueError(f"kind must be 'discrete' or 'continuous', got {kind!r}")
        self.kind, self.alpha = kind, check_alpha(alpha)
        channels, n_side = check_int(channels, "channels"), check_int(n_side, "n_side")

        def block(c_in, c_out):
            return [
                nn.Conv2d(c_in, c_out, 3, padding=1),
                nn.BatchNorm2d(c_out),
                nn.ReLU(),
            ]

        self.features = nn.Sequential(
            *block(1, 16),
            nn.MaxPool2d(2),
            *block(16, channels),
            *block(channels, channels),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(),
        )
        self.key = nn.Linear(channels, channels)
        self.query = nn.Parameter(torch.randn(1, channels) / channels**0.5)
        self.cont = ContinuousAttention2D(
            GaussianRBF.grid(n_side, 1.0 / (2 * n_side) ** 2), alpha=alpha, n_angles=32
        )
        self.out = nn.Linear(channels, check_int(n_classes, "n_classes", minimum=2))

    @public
    def forward(
        self, images: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, ContinuousAttentionOutput | None]:
        """Classify canvases through one attention read-out over the feature grid.

        Parameters
        ----------
        images : tensor or array-like, shape (batch, 1, size, size)
            Canvases (:func:`cluttered_digits`); a tensor must have the module's dtype.

        Returns
        -------
        logits : torch.Tensor, shape (batch, n_classes)
            Class scores.
        weights : torch.Tensor, shape (batch, h·w)
            The discrete attention over the grid cells.
        continuous : ContinuousAttentionOutput or None
            The continuous read-out (``kind="continuous"`` only).
        """
        if checking():
            images = module_input(images, "images", self.key.weight, ndim=4)
        F = self.features(images).permute(0, 2, 3, 1)  # (batch, h, w, channels)
        cells = F.flatten(1, 2)
        normalizer = "softmax" if self.alpha == 1 else "sparsemax"
        out, weights = attention(
            self.query.expand(len(F), 1, -1),
            self.key(cells),
            cells,
            normalizer=normalizer,
        )
        if self.kind == "discrete":
            return self.out(out[:, 0]), weights[:, 0], None
        cont = self.cont(F, weights=weights[:, 0])
        return self.out(cont.context), weights[:, 0], cont
