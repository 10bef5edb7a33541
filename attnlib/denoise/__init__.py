"""Denoising as attention: Gaussian filter, non-local means, learned patch transformer.

A Gaussian filter is attention whose queries and keys are pixel *positions*; non-local
means (NLM) is attention whose queries and keys are the *patches* around the pixels and
whose values are the pixels themselves; a vision-transformer layer is NLM with learned
projections, positional encodings and several heads. Images are ``(H, W)`` (grey) or
``(H, W, C)`` (channels last); the pixels, read in row-major order, are the tokens.

:func:`nonlocal_means` computes exact NLM with the conventions of
``skimage.restoration.denoise_nl_means(fast_mode=False)`` but organises the work by
offset: for each displacement ``δ`` in the search window it forms the image of squared
differences ``(y(x) - y(x + δ))²``, blurs it with the separable Gaussian patch kernel,
exponentiates, and accumulates, in compiled loops over row strips that stay in cache.
The weight of ``δ`` at ``x`` is also the weight of ``-δ`` at ``x + δ``, so only half of
the offsets are computed.
"""

from .exact import nonlocal_means
from .filters import (
    extract_patches,
    gaussian_filter_attention,
    nlm_attention,
    patch_attention,
    patch_kernel,
    patch_tokens,
    pixel_nlm,
)
from .learned import PatchAttentionDenoiser, crop_batches, psnr

__all__ = [
    "gaussian_filter_attention",
    "pixel_nlm",
    "extract_patches",
    "patch_kernel",
    "patch_tokens",
    "nlm_attention",
    "patch_attention",
    "nonlocal_means",
    "PatchAttentionDenoiser",
    "crop_batches",
    "psnr",
]
