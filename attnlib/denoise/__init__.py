"""Denoising as attention: Gaussian filter, non-local means, learned patch transformer.

A Gaussian filter is attention whose queries and keys are pixel *positions*; non-local
means (NLM) is attention whose queries and keys are the *patches* around the pixels and
whose values are the pixels themselves; a vision-transformer layer is NLM with learned
projections, positional encodings and several heads. Images are ``(H, W)`` (grey) or
``(H, W, C)`` (channels last); the pixels, read in row-major order, are the tokens.

The package has two rooms, each re-exported here: ``filters`` (the Gaussian filter,
pixel and patch NLM as calls of attention, and :func:`nonlocal_means`, exact NLM at
scikit-image's slow-mode conventions, handed to the compiled engine
``attnlib.denoise._nlm``) and ``learned`` (:class:`PatchAttentionDenoiser`, its
training crops and :func:`psnr`).
"""

from .filters import (
    extract_patches,
    gaussian_filter_attention,
    nlm_attention,
    nonlocal_means,
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
