"""Exact non-local means at scikit-image's slow-mode conventions.

:func:`nonlocal_means` checks its image once and hands it to the compiled engine
``attnlib.denoise._nlm.nlm_offsets``; the attention forms of NLM are in
``attnlib.denoise.filters``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..utils import check_int, check_positive
from ._nlm import nlm_offsets
from .common import _as_image, _like_input, _odd_patch_size, _reflect_pad, image_is_grey
from .filters import _patch_kernel

__all__ = ["nonlocal_means"]


def nonlocal_means(
    image,
    patch_size: int = 7,
    patch_distance: int = 11,
    h: float = 0.1,
    sigma: float = 0.0,
    *,
    window: str | None = "square",
    strip_rows: int = 32,
):
    """Exact non-local means denoising, as scikit-image's slow mode.

    Each pixel ``x`` becomes a weighted mean of the pixels ``x + δ`` of its search
    window (``|δ|∞ ≤ patch_distance``, clipped to the image), with weight
    ``exp(-max(d²(x, x+δ) - 2σ², 0) / h²)`` where ``d²`` is the Gaussian-weighted mean
    squared difference of the two patches (averaged over channels; image reflected at
    the border). Unlike scikit-image, the exponential is exact to a few ulps of the
    dtype and no weight is cut off (weights below the smallest normal number count as
    that number).

    Parameters
    ----------
    image : array-like or tensor, shape (H, W) or (H, W, C)
        Grey or channels-last colour image; tensors keep their dtype and device. The
        computation runs in its dtype, float32 or
        float64, at nearly the same speed (float64 agrees with a float64 NumPy
        restatement to about 1e-15); other dtypes are computed in float32 and cast back,
        and array-likes of non-float types become float32. Tensors on other devices are
        computed on the CPU.
    patch_size : int
        Side of the patches; even sizes are rounded up to the next odd one, as
        scikit-image does.
    patch_distance : int
        Radius of the square search window.
    h : float
        Cut-off distance in grey levels: larger ``h`` averages more.
    sigma : float
        Standard deviation of the noise, subtracted from the patch distances when
        positive.
    window : {"square", None}
        ``None`` ignores ``patch_distance`` and searches the whole image (truly global
        NLM).
    strip_rows : int
        Tuning: rows per strip, the unit of work that stays in cache while every offset
        of the window passes over it. The strips are shared between
        ``torch.get_num_threads()`` worker threads (PyTorch's setting is read, not
        changed).

    Returns
    -------
    Same type, dtype and shape as ``image``: the denoised image.

    Implements
    ----------
    Buades, Coll and Morel (2005), as in ``skimage.restoration.denoise_nl_means`` with
    ``fast_mode=False``; §3.2 of the self-expression paper (NLM as patch
    self-attention).
    """
    chw, from_numpy = _as_image(image)
    s = _odd_patch_size(patch_size)
    h = check_positive(h, "h")
    sigma = check_positive(sigma, "sigma", allow_zero=True)
    strip_rows = check_int(strip_rows, "strip_rows")
    _, hh, ww = chw.shape
    d_rows, d_cols = _search_radii(window, patch_distance, hh, ww)
    work = chw if chw.dtype in (torch.float32, torch.float64) else chw.float()
    vals = work.detach().cpu().numpy()
    pad = _reflect_pad(torch.from_numpy(vals), s // 2).numpy()
    g = _patch_kernel(s, torch.float64, None).numpy()
    with np.errstate(over="ignore", divide="ignore"):  # the patch distances' factor
        factor = vals.dtype.type(1 / (len(vals) * h * h * g.sum() ** 2))
    if not np.isfinite(factor):
        raise ValueError(
            f"h={h!r} is too small for {vals.dtype}: 1/h² overflows it (the filter's "
            "limit h -> 0 keeps only patches equal to the centre's; use a larger h)"
        )
    out = nlm_offsets(vals, pad, g, d_rows, d_cols, h, sigma**2, strip_rows)
    out = torch.from_numpy(out).to(device=chw.device, dtype=chw.dtype)
    return _like_input(out, image_is_grey(image), from_numpy)


def _search_radii(window, patch_distance, hh: int, ww: int) -> tuple[int, int]:
    """The search window's radii along rows and columns, clipped to the image."""
    if window is None:
        return hh - 1, ww - 1
    if window == "square":
        d = check_int(patch_distance, "patch_distance", minimum=0)
        return min(d, hh - 1), min(d, ww - 1)
    raise ValueError(f"window must be 'square' or None, got {window!r}")
