"""A learned denoiser that is not attention: chapter 03's baseline for learned NLM.

The baseline for the learned NLM layer.

Chapter 03 trains :class:`attnlib.denoise.PatchAttentionDenoiser` (non-local means with
learned projections) and asks what the attention buys. The fair comparison is a learned
model of the same size trained the same way that has no attention at all: a small
residual convolutional network, in the spirit of DnCNN (Zhang et al., 2017), sized to
match.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..utils import check_int, module_input

__all__ = ["SmallCNNDenoiser", "cnn_matching", "count_parameters"]


def count_parameters(model: nn.Module) -> int:
    """Number of trainable scalars of ``model``.

    Parameters
    ----------
    model : nn.Module
        Any module.

    Returns
    -------
    int
        The number of entries of its parameters that require a gradient.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class SmallCNNDenoiser(nn.Module):
    """Residual three-layer CNN: the image minus a predicted noise map.

    Three ``kernel_size`` convolutions (1 → ``width`` → ``width`` → 1 channels, ReLU
    between, reflect padding so the output has the input's size); the output is
    ``x - net(x)``. The last convolution starts at zero, so an untrained model returns
    its input, as an untrained ``PatchAttentionDenoiser`` returns NLM: both start from a
    known denoiser rather than from noise (the CNN from the weakest one, the identity).

    Parameters
    ----------
    width : int
        Channels of the two hidden layers; the model has
        ``k²·w + w + k²·w² + w + k²·w + 1`` parameters (``k = kernel_size``).
    kernel_size : int
        Odd side of every convolution kernel.

    Implements
    ----------
    Not in the self-expression paper: a learned, local, input-independent filter of the
    same size as chapter 03's learned attention, so that the chapter can tell what
    attention adds over learning alone.
    """

    def __init__(self, width: int = 8, kernel_size: int = 3):
        super().__init__()
        self.width = check_int(width, "width")
        self.kernel_size = check_int(kernel_size, "kernel_size")
        if self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        k, w = self.kernel_size, self.width
        self.convs = nn.ModuleList(
            [nn.Conv2d(1, w, k), nn.Conv2d(w, w, k), nn.Conv2d(w, 1, k)]
        )
        nn.init.zeros_(self.convs[-1].weight)
        nn.init.zeros_(self.convs[-1].bias)

    def forward(self, image) -> torch.Tensor:
        """Denoise a grey image.

        Parameters
        ----------
        image : tensor or array-like, shape (H, W)
            A tensor must have the module's dtype; an array-like is converted to it.

        Returns
        -------
        torch.Tensor, shape (H, W)
            The denoised image, in the module's dtype.
        """
        x = module_input(image, "image", self.convs[0].weight)
        if x.ndim != 2:
            raise ValueError(
                f"image must be a grey (H, W) array, got shape {tuple(x.shape)}"
            )
        r = self.kernel_size // 2
        if min(x.shape) <= r:
            raise ValueError(
                f"image must be larger than {r} pixels per side, got {tuple(x.shape)}"
            )
        y = x[None, None]
        for i, conv in enumerate(self.convs):
            y = conv(F.pad(y, (r, r, r, r), mode="reflect"))
            if i < len(self.convs) - 1:
                y = torch.relu(y)
        return x - y[0, 0]


def cnn_matching(n_params: int, kernel_size: int = 3) -> SmallCNNDenoiser:
    """The :class:`SmallCNNDenoiser` whose parameter count is closest to ``n_params``.

    Parameters
    ----------
    n_params : int
        The parameter count to match (e.g. an attention denoiser's).
    kernel_size : int
        Odd width of the convolutions.

    Returns
    -------
    SmallCNNDenoiser
        A fresh model of the best width.
    """
    n_params = check_int(n_params, "n_params")
    k2 = check_int(kernel_size, "kernel_size") ** 2

    def count(w: int) -> int:
        return k2 * w + w + k2 * w * w + w + k2 * w + 1

    widths = range(1, int(np.sqrt(n_params)) + 2)
    best = min(widths, key=lambda w: abs(count(w) - n_params))
    return SmallCNNDenoiser(best, kernel_size)
