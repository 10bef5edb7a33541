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

from __future__ import annotations

import math
import numbers
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .attention import SCORES, attention
from .kernel_sums import _FAST as _JIT
from .kernel_sums import fast_exp
from .utils import as_tensor, check_int, check_positive

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

# Bounds the memory of the chunked attention paths: queries per chunk times keys.
_MAX_SCORES = 2**22


# --------------------------------------------------------------------------- inputs


def _as_image(image, name: str = "image") -> tuple[torch.Tensor, bool]:
    """Return the image as a ``(C, H, W)`` tensor and whether it was a NumPy array."""
    from_numpy = not isinstance(image, torch.Tensor)
    t = as_tensor(image, name)
    if t.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be (H, W) or (H, W, C), got shape {tuple(t.shape)}"
        )
    return (t[None] if t.ndim == 2 else t.permute(2, 0, 1)), from_numpy


def _like_input(chw: torch.Tensor, grey: bool, from_numpy: bool):
    out = chw[0] if grey else chw.permute(1, 2, 0)
    return out.detach().cpu().numpy() if from_numpy else out


def _odd_patch_size(patch_size) -> int:
    # scikit-image rounds an even patch size up to the next odd one so the patch has a
    # centre.
    s = check_int(patch_size, "patch_size")
    return s + 1 - s % 2


def _pixel_grid(h: int, w: int, *, dtype, device) -> torch.Tensor:
    rows, cols = torch.meshgrid(
        torch.arange(h, dtype=dtype, device=device),
        torch.arange(w, dtype=dtype, device=device),
        indexing="ij",
    )
    return torch.stack([rows.reshape(-1), cols.reshape(-1)], dim=1)


def _chunked_attention(
    q, k, v, *, window=None, positions=None, **kwargs
) -> torch.Tensor:
    """Attention output for many queries, in query chunks so memory stays bounded.

    ``window`` (an int) restricts query ``i`` to keys within Chebyshev distance
    ``window`` of it in ``positions`` (the pixel grid); that square mask is the search
    window.
    """
    step = max(1, _MAX_SCORES // k.shape[0])
    outs = []
    for start in range(0, q.shape[0], step):
        mask = None
        if window is not None:
            gap = (
                (positions[start : start + step, None, :] - positions[None, :, :])
                .abs()
                .amax(-1)
            )
            mask = gap <= window
        outs.append(
            attention(q[start : start + step], k, v, mask=mask, **kwargs).output
        )
    return torch.cat(outs)


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


def image_is_grey(image) -> bool:
    return (
        np.ndim(image) == 2 if not isinstance(image, torch.Tensor) else image.ndim == 2
    )


def pixel_nlm(image, h: float):
    """The simplest non-local means: each pixel attends to pixels of similar intensity.

    Every pixel attends to every pixel of similar intensity.

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
    s = _odd_patch_size(patch_size)
    padded = _reflect_pad(chw, s // 2)
    cols = F.unfold(padded[None], s)[0]  # (C·s·s, H·W), ordered (channel, row, col)
    c = chw.shape[0]
    return cols.reshape(c, s * s, -1).permute(2, 1, 0).reshape(cols.shape[1], -1)


def _reflect_pad(chw: torch.Tensor, r: int) -> torch.Tensor:
    if r == 0:
        return chw
    # Padding stays in PyTorch so that gradients reach the image through the border
    # pixels.
    if r < chw.shape[-2] and r < chw.shape[-1]:
        return F.pad(chw[None], (r, r, r, r), mode="reflect")[0]
    # Pads larger than the image: NumPy's repeated reflection, as indices into the
    # tensor.
    rows, cols = (
        torch.from_numpy(np.pad(np.arange(n), r, mode="reflect")).to(chw.device)
        for n in chw.shape[-2:]
    )
    return chw[:, rows][:, :, cols]


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
    s = _odd_patch_size(patch_size)
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
    h = check_positive(h, "h")
    c = chw.shape[0]
    g = patch_kernel(patch_size, dtype=chw.dtype, device=chw.device)
    g2 = torch.outer(g, g).reshape(-1)
    scale = (g2 / (c * h * h * g2.sum())).sqrt().repeat_interleave(c)
    return extract_patches(chw.permute(1, 2, 0), patch_size) * scale


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
    tokens = patch_tokens(chw.permute(1, 2, 0), patch_size, h)
    values = chw.reshape(c, -1).T
    pos = _pixel_grid(hh, ww, dtype=chw.dtype, device=chw.device)
    if sigma == 0:
        kwargs = {"score": "neg_sq_dist", "temperature": 0.5}
    else:
        bias = 2 * sigma**2 / h**2
        kwargs = {
            "score": lambda q, k: (2 * SCORES["neg_sq_dist"](q, k) + bias).clamp(max=0),
            "temperature": 1.0,
        }
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
    row, col = int(pixel[0]), int(pixel[1])
    sigma = check_positive(sigma, "sigma", allow_zero=True)
    tokens = patch_tokens(chw.permute(1, 2, 0), patch_size, h)
    query = tokens[row * ww + col][None]
    scores = 2 * SCORES["neg_sq_dist"](query, tokens) + 2 * sigma**2 / h**2
    mask = None
    if patch_distance is not None:
        radius = check_int(patch_distance, "patch_distance", minimum=0)
        pos = _pixel_grid(hh, ww, dtype=chw.dtype, device=chw.device)
        mask = (pos - pos[row * ww + col]).abs().amax(-1)[None] <= radius
    _, weights = attention(
        scores.clamp(max=0),
        tokens,
        tokens[:, :1],
        score=lambda q, k: q,
        mask=mask,
        temperature=1.0,
    )
    return weights.reshape(hh, ww)


# ----------------------------------------------------------------------- fast exact NLM
# The loops below are compiled by numba (cached on disk) and run over row strips: for a
# strip of ``strip_rows`` rows and one offset δ, the squared differences of the two
# shifted images are blurred by the separable patch kernel (a row pass, then a column
# pass), exponentiated with the vectorised exponential of ``kernel_sums``, and added to
# the sums at x (weight of +δ) and at x + δ (the same weight, for -δ). A strip's rows,
# buffers and sums stay in the L2 cache while all the offsets pass over them.


@numba.njit(**_JIT)
def _nlm_strip(pad, vals, g, offsets, y0, y1, factor, bias, floor, num, den, hz, e, w):
    """Add the weights of ``offsets`` for the pixels of rows ``[y0, y1)``.

    ``offsets`` has rows ``(dy, dx)``.
    """
    # Every inner loop runs over slices indexed from 0: LLVM then vectorises it (offset
    # indices such as a[j0 + j] kept it scalar and cost a factor of two).
    c, hh, ww = vals.shape
    s = g.shape[0]
    zero = floor - floor  # in the image's dtype, so that float32 stays float32
    for o in range(offsets.shape[0]):
        dy, dx = offsets[o, 0], offsets[o, 1]
        stop = min(y1, hh - dy)
        if stop <= y0:
            continue
        j0, j1 = max(0, -dx), min(ww, ww - dx)
        n, m = j1 - j0, j1 - j0 + s - 1
        for t in range(
            stop - y0 + s - 1
        ):  # the row pass, on padded rows y0 .. stop + 2r
            for ch in range(c):
                a, b = (
                    pad[ch, y0 + t, j0 : j0 + m],
                    pad[ch, y0 + t + dy, j0 + dx : j0 + dx + m],
                )
                if ch == 0:
                    for j in range(m):
                        diff = a[j] - b[j]
                        e[j] = diff * diff
                else:
                    for j in range(m):
                        diff = a[j] - b[j]
                        e[j] += diff * diff
            row, first = hz[t, :n], e[:n]
            for j in range(n):
                row[j] = g[0] * first[j]
            for u in range(1, s):
                shifted = e[u : u + n]
                for j in range(n):
                    row[j] += g[u] * shifted[j]
        for i in range(stop - y0):  # the column pass, the weight, and both sums
            first = hz[i, :n]
            for j in range(n):
                w[j] = g[0] * first[j]
            for t in range(1, s):
                below = hz[i + t, :n]
                for j in range(n):
                    w[j] += g[t] * below[j]
            for j in range(n):
                w[j] = fast_exp(max(min(bias - factor * w[j], zero), floor))
            y = y0 + i
            fwd, bwd = den[y, j0:j1], den[y + dy, j0 + dx : j1 + dx]
            for j in range(n):
                fwd[j] += w[j]
            for j in range(n):
                bwd[j] += w[j]
            for ch in range(c):
                out, src = num[ch, y, j0:j1], vals[ch, y + dy, j0 + dx : j1 + dx]
                for j in range(n):
                    out[j] += w[j] * src[j]
                out, src = num[ch, y + dy, j0 + dx : j1 + dx], vals[ch, y, j0:j1]
                for j in range(n):
                    out[j] += w[j] * src[j]


@numba.njit(**_JIT)
def _nlm_rows(pad, vals, g, offsets, strips, factor, bias, floor, num, den):
    """:func:`_nlm_strip` for each ``(y0, y1)`` row of ``strips``, own buffers each."""
    ww, s = vals.shape[2], g.shape[0]
    height = int((strips[:, 1] - strips[:, 0]).max()) if strips.shape[0] else 0
    hz = np.empty((height + s - 1, ww), dtype=vals.dtype)
    e = np.empty(ww + s - 1, dtype=vals.dtype)
    w = np.empty(ww, dtype=vals.dtype)
    for k in range(strips.shape[0]):
        _nlm_strip(
            pad,
            vals,
            g,
            offsets,
            strips[k, 0],
            strips[k, 1],
            factor,
            bias,
            floor,
            num,
            den,
            hz,
            e,
            w,
        )


def _half_window(d_rows: int, d_cols: int) -> np.ndarray:
    """The offsets δ > 0 in row-major order as ``(dy, dx)`` rows: half the window."""
    offsets = [(0, dx) for dx in range(1, d_cols + 1)]
    offsets += [
        (dy, dx) for dy in range(1, d_rows + 1) for dx in range(-d_cols, d_cols + 1)
    ]
    return np.array(offsets, dtype=np.int64).reshape(-1, 2)


def _nlm_offsets(
    chw: torch.Tensor,
    s: int,
    d_rows: int,
    d_cols: int,
    h: float,
    var: float,
    strip_rows: int,
) -> torch.Tensor:
    """Exact NLM by offsets (see the comment above).

    ``chw`` is ``(C, H, W)`` float32 or float64.
    """
    c, hh, ww = chw.shape
    vals = np.ascontiguousarray(chw.detach().cpu().numpy())
    dtype = vals.dtype
    pad = np.ascontiguousarray(_reflect_pad(torch.from_numpy(vals), s // 2).numpy())
    g = patch_kernel(s, dtype=torch.float64).numpy()
    # Fold the normalisation of the patch distance, 1 / (C h² (Σg)²), into one factor.
    factor = dtype.type(1 / (c * h * h * g.sum() ** 2))
    # Weights below the smallest normal float are flushed to it: a weight of 1e-38
    # (1e-307 in float64) beside the centre's 1 changes nothing, and denormals would be
    # slow.
    floor = dtype.type(math.log(np.finfo(dtype).tiny) + 0.5)
    offsets = _half_window(d_rows, d_cols)
    starts = np.arange(0, hh, strip_rows)
    strips = np.stack([starts, np.minimum(starts + strip_rows, hh)], 1).astype(np.int64)
    workers = max(1, min(torch.get_num_threads(), len(strips)))

    def work(share):
        num, den = np.zeros((c, hh, ww), dtype), np.zeros((hh, ww), dtype)
        _nlm_rows(
            pad,
            vals,
            g.astype(dtype),
            offsets,
            share,
            factor,
            dtype.type(2 * var / h**2),
            floor,
            num,
            den,
        )
        return num, den

    # Each worker takes a contiguous run of strips (the sums it adds below a strip are
    # those of its next strip, still in its cache) and keeps its own sums; the compiled
    # loops release the GIL, so Python threads run them side by side. PyTorch's thread
    # setting is read, never changed.
    shares = np.array_split(strips, workers)
    if workers == 1:
        sums = [work(shares[0])]
    else:
        with ThreadPoolExecutor(workers) as pool:
            sums = list(pool.map(work, shares))
    # The centre offset: distance max(-2σ²/h², 0) = 0, weight exactly one.
    num = vals + sum(n for n, _ in sums)
    den = 1 + sum(d for _, d in sums)
    return torch.from_numpy(num / den).to(chw.device)


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

    With the parameters and meaning of scikit-image's slow mode.

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
        Grey or channels-last colour image; tensors keep their dtype and device. Grey or
        channels-last colour image. The computation runs in its dtype, float32 or
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
    if window is None:
        d_rows, d_cols = hh - 1, ww - 1
    elif window == "square":
        d_rows = d_cols = check_int(patch_distance, "patch_distance", minimum=0)
        d_rows, d_cols = min(d_rows, hh - 1), min(d_cols, ww - 1)
    else:
        raise ValueError(f"window must be 'square' or None, got {window!r}")
    with torch.no_grad():
        work = chw if chw.dtype in (torch.float32, torch.float64) else chw.float()
        out = _nlm_offsets(work, s, d_rows, d_cols, h, sigma**2, strip_rows).to(
            chw.dtype
        )
    return _like_input(out, image_is_grey(image), from_numpy)


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
        self.proj = nn.Parameter(
            torch.stack([torch.eye(dim, dtype=torch.float64), *rotations]).float()
        )  # q = k = token @ proj[head]
        self.h = check_positive(h, "h")
        self.log_h_scale = nn.Parameter(
            torch.zeros(self.num_heads)
        )  # learned bandwidth h·e^scale per head
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

        Also its shape, and whether it was batched.
        """
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
        x = as_tensor(
            image,
            "image",
            min_ndim=2,
            dtype=dtype,
            device=self.proj.device,
            allow_empty=True,
        )
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
        if not torch.isfinite(x).all():
            raise ValueError("image contains NaN or infinite values")
        return bhwc.permute(0, 3, 1, 2), tuple(x.shape), batched

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
        tokens = torch.stack(
            [patch_tokens(im.permute(1, 2, 0), self.patch_size, 1.0) for im in bchw]
        )  # h enters below
        q = (
            tokens[:, None] @ self.proj
        )  # (B, heads, n, dim): query = key for self-attention
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
            pos_sq = (
                2 * SCORES["neg_sq_dist"](pos, pos) / (hh * ww)
            )  # -|x - x'|², scaled to the image
            scores = scores + self.pos_weight[:, None, None] * pos_sq
        mask = None
        if self.patch_distance is not None:
            mask = (pos[:, None] - pos[None]).abs().amax(-1) <= self.patch_distance
        values = bchw.reshape(b, 1, c, -1).transpose(
            -1, -2
        )  # (B, 1, n, C), shared by the heads
        out, _ = attention(
            scores, scores, values, score=lambda s, _k: s, mask=mask, temperature=1.0
        )
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
    g = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))

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
