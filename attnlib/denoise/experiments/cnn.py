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
from scipy import ndimage
from skimage import color, data, img_as_float
from torch import nn
from torch.nn import functional as F

from ...training import evaluating, train
from ...utils import check_int, check_positive, device_or_cpu
from ...utils.boundary import checking, public, trusted
from ...utils.validation import SEED_MAX, module_input
from .. import PatchAttentionDenoiser, crop_batches, nonlocal_means, psnr

__all__ = [
    "SmallCNNDenoiser",
    "baseline_run",
    "cnn_matching",
    "count_parameters",
    "training_images",
]


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

    @public
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
        r = self.kernel_size // 2
        x = image
        if checking():
            x = module_input(image, "image", self.convs[0].weight)
            if x.ndim != 2:
                raise ValueError(
                    f"image must be a grey (H, W) array, got shape {tuple(x.shape)}"
                )
            if min(x.shape) <= r:
                raise ValueError(
                    f"image must be larger than {r} pixels per side, got "
                    f"{tuple(x.shape)}"
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


def training_images() -> list[np.ndarray]:
    """The grey training images of chapter 03's learned denoisers (scikit-image's).

    ``brick``, ``grass``, ``gravel`` and two opposite quarters of ``astronaut``
    (grey); ``camera``, the test image, is not among them.

    Returns
    -------
    list of ndarray
        Five grey images, float64 in [0, 1].
    """

    astro = color.rgb2gray(data.astronaut())
    return [
        img_as_float(data.brick()),
        img_as_float(data.grass()),
        img_as_float(data.gravel()),
        astro[:256, :256],
        astro[256:, 256:],
    ]


@public
def baseline_run(
    seed: int,
    *,
    n_steps: int = 2000,
    cnn_steps: int | None = None,
    lr: float = 0.005,
    widths=(4, 8, 16, 32),
    heads=(1, 4),
    noise: float = 0.1,
    return_images: bool = False,
    device=None,
) -> dict:
    """One seed of chapter 03's learned-attention-against-CNN comparison.

    Trains :class:`attnlib.denoise.PatchAttentionDenoiser` (patch 5, window 5; one
    head, and four heads with the positional bias) and :class:`SmallCNNDenoiser` of
    each width in ``widths``, all with Adam at ``lr`` for ``n_steps`` steps on the
    same stream of 16×16 noisy crops of :func:`training_images` (the CNNs for
    ``cnn_steps`` steps if given), and scores them on a
    held-out 64×64 crop of ``camera`` beside exact NLM (``h = 1.2σ``, ``sigma = σ``)
    and a Gaussian filter (width 0.75), the settings the chapter's validated sweep
    picks at σ = 0.1. ``seed`` sets the test crop's noise, the crop stream and every
    model's initialisation (``torch.manual_seed(seed)`` before each is built).

    Parameters
    ----------
    seed : int
        Seed of the noise draw, the crop stream and the initialisations.
    n_steps : int
        Optimiser steps of the attention layers.
    cnn_steps : int, optional
        Optimiser steps of the CNNs (default ``n_steps``); they learn more slowly.
    lr : float
        Adam's learning rate.
    widths : sequence of int
        Hidden widths of the CNNs.
    heads : sequence of int
        Head counts of the attention layers (more than one adds the positional bias).
    noise : float
        Standard deviation of the Gaussian noise.
    return_images : bool
        Also return the clean and noisy test crops and every method's output.
    device : torch.device or str, optional
        Where the models are moved, train and run (default: the CPU); the test crop
        is scored on the host.

    Returns
    -------
    dict
        ``"psnr"``: PSNR (dB) on the test crop of every method; ``"parameters"``:
        trainable parameters of every learned model; with ``return_images``,
        ``"images"``: ``"clean"``, ``"noisy"`` and every method's output (arrays).
    """
    if checking():
        seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
        n_steps = check_int(n_steps, "n_steps")
        if cnn_steps is not None:
            cnn_steps = check_int(cnn_steps, "cnn_steps")
        lr, noise = check_positive(lr, "lr"), check_positive(noise, "noise")
    cnn_steps = n_steps if cnn_steps is None else cnn_steps
    with trusted():
        return _baseline(
            seed, n_steps, cnn_steps, lr, widths, heads, noise, return_images, device
        )


def _baseline(
    seed, n_steps, cnn_steps, lr, widths, heads, noise, return_images, device
) -> dict:
    """:func:`baseline_run` of checked arguments (the widths and heads are checked by
    the models they build)."""
    where = device_or_cpu(device)
    clean = img_as_float(data.camera())[60:124, 200:264]
    noisy = clean + noise * np.random.default_rng(seed).standard_normal(clean.shape)
    out = {
        "Gaussian filter": ndimage.gaussian_filter(noisy, 0.75),
        "exact NLM": nonlocal_means(noisy, 5, 5, 1.2 * noise, sigma=noise),
    }
    builders = {
        f"attention, {h} head{'s' * (h > 1)}": (
            lambda h=h: PatchAttentionDenoiser(
                5, h=noise, num_heads=h, positional=h > 1, patch_distance=5
            )
        )
        for h in heads
    }
    builders.update(
        {f"CNN, width {w}": (lambda w=w: SmallCNNDenoiser(w)) for w in widths}
    )
    images, n_params = training_images(), {}
    for name, build in builders.items():
        torch.manual_seed(seed)
        model = build().to(where)
        n_params[name] = count_parameters(model)
        train(
            model,
            lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
            crop_batches(images, crop=16, noise=noise, seed=seed),
            n_steps=cnn_steps if name.startswith("CNN") else n_steps,
            lr=lr,
            seed=seed,
            device=where,
            progress=False,
        )
        with evaluating(model):
            x = torch.tensor(noisy, dtype=torch.float32, device=where)
            out[name] = model(x).cpu().numpy()
    result = {
        "psnr": {k: float(psnr(clean, v)) for k, v in out.items()},
        "parameters": n_params,
    }
    if return_images:
        result["images"] = {"clean": clean, "noisy": noisy, **out}
    return result
