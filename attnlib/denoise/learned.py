"""Learned non-local means: one patch-attention layer, its training data and its metric.

A vision-transformer layer is NLM with learned projections, positional encodings and
several heads: :class:`PatchAttentionDenoiser` starts as NLM and learns from there.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..functional import SCORES, attend
from ..utils import as_tensor, check_int, check_positive
from ..utils.boundary import checking, public
from ..utils.validation import SEED_MAX
from .common import _odd_patch_size, _pixel_grid, _window_mask
from .filters import _patch_tokens

__all__ = [
    "PatchAttentionDenoiser",
    "crop_batches",
    "psnr",
]

# -------------------------------------------------------------------------- learned NLM


class PatchAttentionDenoiser(nn.Module):
    """One attention layer over patch tokens, initialised to non-local means.

    Each pixel's patch (flattened, Gaussian-weighted as in :func:`patch_tokens`) is a
    token. Queries and keys are learned linear maps of the tokens (identity at
    initialisation), the score is ``-||q - k||²`` per head at temperature ``h²``, values
    are the pixels, and heads are averaged with learned mixing weights. Head 0 starts
    with the identity projection and the others with random rotations, which leave NLM
    unchanged but break the heads' symmetry. Attention is restricted to a square window,
    so the layer is global NLM when ``patch_distance`` covers the image.

    Parameters
    ----------
    patch_size : int
        Side of the patches.
    h : float
        Initial bandwidth (every head starts as NLM with this ``h``).
    num_heads : int
        Heads; each has its own query/key projection and bandwidth.
    channels : int
        Image channels (1 for grey).
    positional : bool
        Add a learned relative positional encoding to the scores: a per-head weight on
        minus the squared distance ``|x - x'|²`` between the pixels (zero at
        initialisation).
    patch_distance : int, optional
        Search radius (``None``: global).

    Attributes
    ----------
    proj : Parameter, shape (num_heads, dim, dim)
        Query/key projection of each head, ``dim = patch_size² · channels``.
    log_h_scale, mix : Parameter, shape (num_heads,)
        Log-scale of each head's bandwidth and the logits of the head mixture.
    pos_weight : Parameter, shape (num_heads,), or None
        Weight of the positional score (only with ``positional=True``).

    Implements
    ----------
    §3.2 of the self-expression paper: NLM plus the ViT ingredients (learned
    projections, positional encoding, several heads) that it lacks.
    """

    def __init__(
        self,
        patch_size: int = 5,
        h: float = 0.1,
        num_heads: int = 1,
        *,
        channels: int = 1,
        positional: bool = False,
        patch_distance: int | None = 7,
    ):
        super().__init__()
        self.patch_size = _odd_patch_size(patch_size)
        self.num_heads = check_int(num_heads, "num_heads")
        self.channels = check_int(channels, "channels")
        self.patch_distance = (
            None
            if patch_distance is None
            else check_int(patch_distance, "patch_distance", minimum=0)
        )
        dim = self.patch_size**2 * self.channels
        # Head 0 starts at the identity, the others at random rotations: rotations leave
        # every patch distance, hence the output, unchanged (the layer is still NLM),
        # but they give the heads different gradients, without which identical heads
        # would stay identical.
        g = torch.Generator().manual_seed(0)
        rotations = [
            torch.linalg.qr(torch.randn(dim, dim, generator=g, dtype=torch.float64))[0]
            for _ in range(self.num_heads - 1)
        ]
        # q = k = token @ proj[head]
        self.proj = nn.Parameter(
            torch.stack([torch.eye(dim, dtype=torch.float64), *rotations]).float()
        )
        self.h = check_positive(h, "h")
        # learned bandwidth h·e^scale per head
        self.log_h_scale = nn.Parameter(torch.zeros(self.num_heads))
        self.mix = nn.Parameter(torch.zeros(self.num_heads))
        self.pos_weight = (
            nn.Parameter(torch.zeros(self.num_heads)) if positional else None
        )

    def extra_repr(self) -> str:
        return (
            f"patch_size={self.patch_size}, h={self.h}, num_heads={self.num_heads}, "
            f"channels={self.channels}, positional={self.pos_weight is not None}, "
            f"patch_distance={self.patch_distance}"
        )

    def _as_batch(self, image) -> tuple[torch.Tensor, tuple[int, ...], bool]:
        """The input as ``(B, C, H, W)`` in the module's dtype.

        Also its shape, and whether it was batched. A tensor that a public function of
        attnlib hands the layer (a training run's crop) is taken as it is.
        """
        x = self._checked(image) if checking() else image
        c = self.channels
        layouts = {
            2: "(H, W)",
            3: "(B, H, W)" if c == 1 else f"(H, W, {c})",
            4: f"(B, H, W, {c})",
        }
        channels_last = x.ndim == 4 or (x.ndim == 3 and c != 1)
        if (
            x.ndim not in layouts
            or (x.ndim == 2 and c != 1)
            or (channels_last and x.shape[-1] != c)
        ):
            expected = " or ".join(v for k, v in layouts.items() if k != 2 or c == 1)
            raise ValueError(
                f"image must be {expected} for channels={c}, got shape {tuple(x.shape)}"
            )
        batched = x.ndim == 4 or (x.ndim == 3 and c == 1)
        bhwc = (
            x[None, ..., None]
            if x.ndim == 2
            else x[..., None]
            if not channels_last
            else x
            if batched
            else x[None]
        )
        if min(bhwc.shape[1:3]) == 0:
            raise ValueError(
                "image must have at least one row and one column, got shape "
                f"{tuple(x.shape)}"
            )
        if checking() and not torch.isfinite(x).all():
            raise ValueError("image contains NaN or infinite values")
        return bhwc.permute(0, 3, 1, 2), tuple(x.shape), batched

    def _checked(self, image) -> torch.Tensor:
        """``image`` as a tensor of the module's dtype, on its device."""
        dtype = self.proj.dtype
        if (
            isinstance(image, torch.Tensor)
            and image.is_floating_point()
            and image.dtype != dtype
        ):
            raise ValueError(
                f"image must have the module's dtype {dtype} (call .to() on one of "
                f"them), got {image.dtype}"
            )
        return as_tensor(
            image,
            "image",
            min_ndim=2,
            dtype=dtype,
            device=self.proj.device,
            allow_empty=True,
        )

    @public
    def forward(self, image) -> torch.Tensor:
        """Denoise ``image``.

        Parameters
        ----------
        image : tensor or array-like, shape (H, W), (B, H, W), (H, W, C) or (B, H, W, C)
            Grey images ``(H, W)`` or a batch ``(B, H, W)`` when ``channels=1``; colour
            images ``(H, W, C)`` or ``(B, H, W, C)``, channels last, otherwise. A tensor
            must have the module's dtype; an array-like is converted to it.

        Returns
        -------
        torch.Tensor
            The denoised image(s), same shape as ``image``.
        """
        bchw, shape, _ = self._as_batch(image)
        b, c, hh, ww = bchw.shape
        if b == 0:
            return bchw.permute(0, 2, 3, 1).reshape(shape)
        # h enters below
        tokens = torch.stack([_patch_tokens(im, self.patch_size, 1.0) for im in bchw])
        # (B, heads, n, dim): query = key for self-attention
        q = tokens[:, None] @ self.proj
        dist = 2 * SCORES["neg_sq_dist"](q, q)  # -‖q - k‖², 0 on the diagonal
        if not torch.isfinite(dist).all():
            raise ValueError(
                f"image: its patch distances overflow {dist.dtype}; rescale it to [0, "
                "1]"
            )
        # 1 / h² in float64, capped at the dtype's largest value: a tiny h gives the
        # identity (each pixel keeps itself), its limit, instead of 0 / 0.
        inv = (1 / (self.h**2 * torch.exp(2 * self.log_h_scale.double()))).clamp(
            max=torch.finfo(dist.dtype).max
        )
        scores = (dist * inv.to(dist.dtype)[:, None, None]).clamp(
            min=torch.finfo(dist.dtype).min
        )
        pos = _pixel_grid(hh, ww, dtype=bchw.dtype, device=bchw.device)
        if self.pos_weight is not None:
            # -|x - x'|², scaled to the image
            pos_sq = 2 * SCORES["neg_sq_dist"](pos, pos) / (hh * ww)
            scores = scores + self.pos_weight[:, None, None] * pos_sq
        mask = None
        if self.patch_distance is not None:
            mask = _window_mask(pos, pos, self.patch_distance)
        # (B, 1, n, C), shared by the heads
        values = bchw.reshape(b, 1, c, -1).transpose(-1, -2)
        out, _ = attend(
            scores, scores, values, score=lambda s, _k: s, mask=mask
        )  # the temperature of a score callable is 1 (its scores are scaled above)
        mixed = (torch.softmax(self.mix, 0)[:, None, None] * out).sum(1)  # (B, n, C)
        return mixed.reshape(b, hh, ww, c).reshape(shape)


def crop_batches(images, crop: int = 16, noise: float = 0.1, *, seed: int = 0):
    """Training pairs for :class:`PatchAttentionDenoiser`.

    Each call cuts a random ``crop × crop`` window from a random image of ``images``
    (grey, values in [0, 1]) and adds fresh Gaussian noise of standard deviation
    ``noise``.

    Parameters
    ----------
    images : sequence of array-like or tensor, each of shape (H, W) or (H, W, C)
        The clean training images (at least one), each at least ``crop`` pixels high and
        wide.
    crop : int, default=16
        Side of the square crops.
    noise : float, default=0.1
        Standard deviation of the added Gaussian noise (0 gives clean pairs).
    seed : int, default=0
        Seed of the generator that picks images, windows and noise.

    Returns
    -------
    callable
        ``batches(step) -> (noisy, clean)``, two float32 tensors (the dtype of a fresh
        denoiser) of shape ``(crop, crop)`` or ``(crop, crop, C)``; ``step`` is
        ignored (each call draws anew).

    Implements
    ----------
    No equation: the training pairs of chapter 03's learned denoiser.
    """
    if isinstance(images, (str, bytes)) or not hasattr(images, "__len__"):
        raise ValueError(
            f"images must be a sequence of images, got {type(images).__name__}"
        )
    if len(images) == 0:
        raise ValueError("images must hold at least one image, got none")
    images = [
        as_tensor(im, f"images[{i}]", dtype=torch.float32).detach()
        for i, im in enumerate(images)
    ]
    for i, im in enumerate(images):
        if im.ndim not in (2, 3):
            raise ValueError(
                f"images[{i}] must be (H, W) or (H, W, C), got shape {tuple(im.shape)}"
            )
    crop = check_int(crop, "crop", maximum=min(min(im.shape[:2]) for im in images))
    noise = check_positive(noise, "noise", allow_zero=True)
    g = torch.Generator().manual_seed(
        check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )

    def batches(step: int):
        im = images[int(torch.randint(len(images), (1,), generator=g))]
        i, j = (
            int(torch.randint(n - crop + 1, (1,), generator=g)) for n in im.shape[:2]
        )
        clean = im[i : i + crop, j : j + crop]
        return clean + noise * torch.randn(clean.shape, generator=g), clean

    return batches


def psnr(clean, estimate, data_range: float = 1.0) -> float:
    """Peak signal-to-noise ratio in dB, ``10 log10(data_range² / MSE)``.

    The same number as ``skimage.metrics.peak_signal_noise_ratio`` (computed in float64
    whatever the inputs' dtype); ``inf`` when ``estimate`` equals ``clean``, its limit.

    Parameters
    ----------
    clean : array-like or tensor, shape (H, W), (H, W, C) or any shape
        The reference image.
    estimate : array-like or tensor, same shape as ``clean``
        The image to score.
    data_range : float, default=1.0
        The range of the pixel values (1 for images in [0, 1], 255 for 8-bit ones).

    Returns
    -------
    float
        The PSNR in decibels.

    Implements
    ----------
    No equation of the papers: the standard definition, as
    ``skimage.metrics.peak_signal_noise_ratio`` computes it.
    """
    data_range = check_positive(data_range, "data_range")
    c = as_tensor(clean, "clean", dtype=torch.float64).detach().cpu()
    e = as_tensor(estimate, "estimate", dtype=torch.float64).detach().cpu()
    if c.shape != e.shape:
        raise ValueError(
            f"estimate must have clean's shape {tuple(c.shape)}, got {tuple(e.shape)}"
        )
    # Halves and a scale keep differences and squares near float64's limit finite.
    diff = c / 2 - e / 2
    scale = float(diff.abs().max())
    if scale == 0:
        return math.inf
    log_mse = math.log10(4 * float(((diff / scale) ** 2).mean())) + 2 * math.log10(
        scale
    )
    return 20 * math.log10(data_range) - 10 * log_mse
