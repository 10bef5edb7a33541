"""Denoising filters as attention: the Gaussian filter, pixel NLM and patch NLM.

A Gaussian filter is attention whose queries and keys are pixel *positions*; non-local
means (NLM) is attention whose queries and keys are the *patches* around the pixels and
whose values are the pixels themselves. Each is one call of
:func:`attnlib.functional.attention`, chunked so that memory stays bounded.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F

from ..functional import SCORES, attention
from ..utils import check_int, check_positive
from .common import (
    _as_image,
    _chunked_attention,
    _like_input,
    _odd_patch_size,
    _pixel_grid,
    _reflect_pad,
    _window_mask,
    image_is_grey,
)

__all__ = [
    "extract_patches",
    "gaussian_filter_attention",
    "nlm_attention",
    "patch_attention",
    "patch_kernel",
    "patch_tokens",
    "pixel_nlm",
]

# ------------------------------------------------------------ local and pixel attention


def gaussian_filter_attention(image, sigma: float, *, truncate: float = 4.0):
    """Gaussian filtering written as attention over pixel positions.

    Queries and keys are the pixels' ``(row, col)`` coordinates, values their
    intensities, the score is ``-||x - x'||² / (2σ²)``, and each query sees only the
    keys in the square of radius ``round(truncate · σ)`` around it (the filter's
    support). Away from the border this is
    ``scipy.ndimage.gaussian_filter(image, sigma, truncate=truncate)``; at the border
    the weights are renormalised over the pixels that exist instead of reflecting the
    image.

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image; tensors keep their dtype and device.
    sigma : float
        Width of the Gaussian, in pixels.
    truncate : float
        Support radius in units of ``sigma``, as in SciPy.

    Returns
    -------
    ndarray or torch.Tensor, shape of ``image``
        The filtered image, of ``image``'s type.

    Implements
    ----------
    Eq. (5) of the self-expression paper with the Gaussian kernel (Eq. 6), §3.2.
    """
    chw, from_numpy = _as_image(image)
    sigma = check_positive(sigma, "sigma")
    truncate = check_positive(truncate, "truncate")
    c, h, w = chw.shape
    pos = _pixel_grid(h, w, dtype=chw.dtype, device=chw.device)
    values = chw.reshape(c, -1).T
    # A support wider than the image is the whole image: cap it (a huge sigma or
    # truncate gives the plain mean, the filter's limit, not an integer overflow).
    radius = int(min(truncate * sigma + 0.5, max(h, w)))
    out = _chunked_attention(
        pos,
        pos,
        values,
        window=radius,
        positions=pos,
        score="neg_sq_dist",
        temperature=sigma**2,
    )
    return _like_input(out.T.reshape(c, h, w), image_is_grey(image), from_numpy)


def pixel_nlm(image, h: float):
    """The simplest non-local means: each pixel attends to pixels of similar intensity.

    Queries, keys and values are the pixels' intensities (vectors, for colour images)
    and the weights are ``softmax(-||y - y'||² / (2h²))`` over the whole image.

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image; tensors keep their dtype and device.
    h : float
        Width of the intensity kernel, in grey levels.

    Returns
    -------
    ndarray or torch.Tensor, shape of ``image``
        The denoised image, of ``image``'s type.

    Implements
    ----------
    Eq. (8) of the self-expression paper.
    """
    chw, from_numpy = _as_image(image)
    h = check_positive(h, "h")
    c = chw.shape[0]
    tokens = chw.reshape(c, -1).T
    out = _chunked_attention(
        tokens, tokens, tokens, score="neg_sq_dist", temperature=h**2
    )
    return _like_input(out.T.reshape(chw.shape), image_is_grey(image), from_numpy)


# --------------------------------------------------------------------------- patches


def extract_patches(image, patch_size: int = 7) -> torch.Tensor:
    """The patch around every pixel, flattened into a row: step 1 and 2 of NLM.

    The image is padded by reflection (as scikit-image does) so every pixel has a full
    patch.

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image; tensors keep their dtype and device.
    patch_size : int
        Side of the square patch; an even size is rounded up to the next odd one.

    Returns
    -------
    torch.Tensor, shape (H·W, patch_size² · C)
        Row ``i·W + j`` holds the patch centred at pixel ``(i, j)``, ordered (row, col,
        channel).

    Implements
    ----------
    Steps 1-2 of non-local means as listed in §3.2 of the self-expression paper.
    """
    chw, _ = _as_image(image)
    return _extract_patches(chw, _odd_patch_size(patch_size))


def _extract_patches(chw: torch.Tensor, s: int) -> torch.Tensor:
    """:func:`extract_patches` of a checked ``(C, H, W)`` image, odd side ``s``."""
    padded = _reflect_pad(chw, s // 2)
    cols = F.unfold(padded[None], s)[0]  # (C·s·s, H·W), ordered (channel, row, col)
    c = chw.shape[0]
    return cols.reshape(c, s * s, -1).permute(2, 1, 0).reshape(cols.shape[1], -1)


def patch_kernel(
    patch_size: int = 7, *, dtype=torch.float32, device=None
) -> torch.Tensor:
    """The 1-D Gaussian weights of the patch distance.

    The 2-D weight of patch offset ``(t, u)`` is the outer product; this is
    scikit-image's kernel, which gives the patch border about ``e^{-2}`` of the centre's
    weight.

    Parameters
    ----------
    patch_size : int
        Side ``s`` of the patch; an even size is rounded up to the next odd one.
    dtype : torch.dtype
        The result's dtype.
    device : torch.device or str, optional
        The result's device.

    Returns
    -------
    torch.Tensor, shape (s,)
        The unnormalised weights, 1 at the centre.

    Implements
    ----------
    The Gaussian-weighted patch distance of non-local means (Buades et al. 2005), §3.2
    of the self-expression paper, with scikit-image's width.
    """
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(
            f"dtype must be a floating torch dtype (the weights are not integers), "
            f"got {dtype!r}"
        )
    return _patch_kernel(_odd_patch_size(patch_size), dtype, device)


def _patch_kernel(s: int, dtype, device) -> torch.Tensor:
    """:func:`patch_kernel` of a checked odd side ``s``."""
    t = torch.arange(s, dtype=dtype, device=device) - s // 2
    if s == 1:
        return torch.ones(1, dtype=dtype, device=device)
    a = (s - 1) / 4
    return torch.exp(-(t**2) / (2 * a * a))


def patch_tokens(image, patch_size: int = 7, h: float = 0.1) -> torch.Tensor:
    """Patches scaled so their squared distance is NLM's patch distance over ``h²``.

    Each patch entry is multiplied by the square root of its normalised Gaussian weight,
    ``sqrt(g(t) g(u) / (C h² Σ g))``, so ``||p_i - p_j||²`` is the Gaussian-weighted
    mean squared difference of the two patches, over ``h²``.

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image.
    patch_size : int
        Side of the patches (rounded up to odd).
    h : float
        The NLM bandwidth, in grey levels.

    Returns
    -------
    torch.Tensor, shape (H·W, patch_size² · C)
        One token per pixel, row-major.

    Implements
    ----------
    The patch form of non-local means in §3.2 of the self-expression paper (its Gaussian
    kernel on the patches around two pixels), with scikit-image's Gaussian-weighted
    patch distance, written as a Euclidean distance between tokens.
    """
    chw, _ = _as_image(image)
    return _patch_tokens(chw, _odd_patch_size(patch_size), check_positive(h, "h"))


def _patch_tokens(chw: torch.Tensor, s: int, h: float) -> torch.Tensor:
    """:func:`patch_tokens` of a checked ``(C, H, W)`` image, odd side ``s``."""
    c = chw.shape[0]
    g = _patch_kernel(s, chw.dtype, chw.device)
    g2 = torch.outer(g, g).reshape(-1)
    # 1/h after the square root: h·h underflows to 0 for h below about 1e-19 (float32),
    # which made every token infinite.
    scale = ((g2 / (c * g2.sum())).sqrt() / h).repeat_interleave(c)
    if not torch.isfinite(scale).all():
        raise ValueError(
            f"h={h!r} is too small for {chw.dtype} tokens: 1/h overflows (give a "
            f"larger h, or the image in float64)"
        )
    return _extract_patches(chw, s) * scale


def _nlm_scores(q: torch.Tensor, k: torch.Tensor, bias: float) -> torch.Tensor:
    """NLM's scores of patch tokens, ``-max(||q-k||² - bias, 0)``, ``bias = 2σ²/h²``."""
    return (2 * SCORES["neg_sq_dist"](q, k) + bias).clamp(max=0)


def nlm_attention(
    image,
    patch_size: int = 7,
    patch_distance: int | None = 11,
    h: float = 0.1,
    sigma: float = 0.0,
):
    """Non-local means as literally one attention call over patch tokens.

    The reference path.

    Queries = keys = :func:`patch_tokens`, values = pixels, score
    ``-max(||q-k||² - 2σ²/h², 0)`` (``neg_sq_dist`` at temperature 1/2 when
    ``sigma = 0``), softmax, and a square mask of radius ``patch_distance`` (``None``:
    global). Memory grows with the number of pixels, so this is for small images;
    :func:`nonlocal_means` computes the same thing fast.

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image.
    patch_size : int
        Side of the patches (rounded up to odd).
    patch_distance : int, optional
        Radius of the square search window; ``None`` for the whole image.
    h : float
        The NLM bandwidth, in grey levels.
    sigma : float
        The noise's standard deviation, subtracted from the patch distances.

    Returns
    -------
    ndarray or torch.Tensor, shape of ``image``
        The denoised image, of ``image``'s type.

    Implements
    ----------
    §3.2 of the self-expression paper (NLM = attention with patch queries and keys);
    Buades et al. (2005).
    """
    chw, from_numpy = _as_image(image)
    c, hh, ww = chw.shape
    sigma = check_positive(sigma, "sigma", allow_zero=True)
    window = (
        None
        if patch_distance is None
        else check_int(patch_distance, "patch_distance", minimum=0)
    )
    tokens = _patch_tokens(chw, _odd_patch_size(patch_size), check_positive(h, "h"))
    values = chw.reshape(c, -1).T
    pos = _pixel_grid(hh, ww, dtype=chw.dtype, device=chw.device)
    if sigma == 0:
        kwargs = {"score": "neg_sq_dist", "temperature": 0.5}
    else:
        bias = 2 * sigma**2 / h**2
        kwargs = {"score": lambda q, k: _nlm_scores(q, k, bias), "temperature": 1.0}
    out = _chunked_attention(
        tokens, tokens, values, window=window, positions=pos, **kwargs
    )
    return _like_input(out.T.reshape(c, hh, ww), image_is_grey(image), from_numpy)


def patch_attention(
    image,
    pixel,
    patch_size: int = 7,
    h: float = 0.1,
    patch_distance: int | None = None,
    sigma: float = 0.0,
):
    """Where one pixel attends: its NLM weights over the image.

    An ``(H, W)`` map summing to one.

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image; tensors keep their dtype and device.
    pixel : (int, int)
        ``(row, col)`` of the query pixel.
    patch_size, h, sigma : int, float, float
        As in :func:`nonlocal_means`.
    patch_distance : int, optional
        Search radius; ``None`` (default) lets the pixel attend to the whole image.

    Returns
    -------
    torch.Tensor, shape (H, W)
        The pixel's attention weights over the image, summing to one.

    Implements
    ----------
    One row of the patch NLM weights of §3.2 of the self-expression paper (Eq. 8 on
    patches), as an image.
    """
    chw, _ = _as_image(image)
    _, hh, ww = chw.shape
    row, col = _check_pixel(pixel, hh, ww)
    sigma = check_positive(sigma, "sigma", allow_zero=True)
    tokens = _patch_tokens(chw, _odd_patch_size(patch_size), check_positive(h, "h"))
    query = tokens[row * ww + col][None]
    scores = _nlm_scores(query, tokens, 2 * sigma**2 / h**2)
    mask = None
    if patch_distance is not None:
        radius = check_int(patch_distance, "patch_distance", minimum=0)
        pos = _pixel_grid(hh, ww, dtype=chw.dtype, device=chw.device)
        mask = _window_mask(pos[row * ww + col][None], pos, radius)
    _, weights = attention(
        scores,
        tokens,
        tokens[:, :1],
        score=lambda q, k: q,
        mask=mask,
        temperature=1.0,
    )
    return weights.reshape(hh, ww)


def _check_pixel(pixel, hh: int, ww: int) -> tuple[int, int]:
    """``pixel`` checked as a ``(row, col)`` pair of integers inside an H×W image."""
    if not (isinstance(pixel, (tuple, list)) and len(pixel) == 2):
        raise ValueError(f"pixel must be a (row, col) pair, got {pixel!r}")
    inside = all(
        isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in pixel
    ) and (0 <= pixel[0] < hh and 0 <= pixel[1] < ww)
    if not inside:
        raise ValueError(
            f"pixel must be a (row, col) pair of integers inside the image, whose "
            f"(H, W) is {(hh, ww)}, got {pixel!r}"
        )
    return int(pixel[0]), int(pixel[1])
