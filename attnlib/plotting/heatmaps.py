"""Weight matrices and images, alone or side by side on one shared colour scale."""

from __future__ import annotations

import math

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ..utils import check_int, check_positive
from .style import COLUMN_INCHES, _to_numpy

__all__ = ["attention_heatmap", "heatmap_grid", "image_grid"]


def _check_limits(vmin, vmax):
    """``vmin`` and ``vmax`` as floats or None; refuses ``vmin > vmax``."""
    lims = []
    for value, name in ((vmin, "vmin"), (vmax, "vmax")):
        if value is not None:
            if isinstance(value, bool) or not isinstance(
                value, (int, float, np.integer, np.floating)
            ):
                raise ValueError(f"{name} must be a number or None, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value}")
            value = float(value)
        lims.append(value)
    if lims[0] is not None and lims[1] is not None and lims[0] > lims[1]:
        raise ValueError(f"vmin must be at most vmax, got vmin={vmin} > vmax={vmax}")
    return lims


def _colour_map(cmap, zero_color):
    """The colour map, with ``zero_color`` for masked (exactly zero) cells if given."""
    if cmap not in mpl.colormaps:
        raise ValueError(f"cmap must name a matplotlib colour map, got {cmap!r}")
    cm = mpl.colormaps[cmap]
    if zero_color is not None:
        try:
            cm = cm.with_extremes(bad=mpl.colors.to_rgba(zero_color))
        except ValueError as err:
            raise ValueError(
                f"zero_color must be a matplotlib colour, got {zero_color!r}"
            ) from err
    return cm


def _scale(mats, signed, vmin, vmax, *, shared: bool = False):
    """``(signed, lo, hi)``: one colour scale for ``mats``, symmetric about 0 if signed,
    else from ``vmin`` (default 0) up; given limits are kept."""
    signed = any(bool((m < 0).any()) for m in mats) if signed is None else signed
    if signed:
        lim = max(float(np.abs(m).max()) for m in mats) or 1.0
        lo = -lim if vmin is None else vmin
        hi = lim if vmax is None else vmax
        return signed, lo, hi
    lo = 0.0 if vmin is None else vmin
    # The top is the largest weight shown: matplotlib's own (None) for one matrix,
    # unless it would fall below a given bottom; computed for panels that share it.
    if vmax is not None or (vmin is None and not shared):
        return signed, lo, vmax
    return signed, lo, max(max(float(m.max()) for m in mats), lo)


def _tick_labels(ax, query_labels, key_labels, shape) -> None:
    """Label the rows and the columns (slanted) of a matrix of ``shape`` on ``ax``."""
    for labels, set_ticks, set_labels, n in (
        (query_labels, ax.set_yticks, ax.set_yticklabels, shape[0]),
        (key_labels, ax.set_xticks, ax.set_xticklabels, shape[1]),
    ):
        if labels is not None:
            set_ticks(range(n))
            set_labels(labels)
    if key_labels is not None:
        plt.setp(ax.get_xticklabels(), rotation=45, ha="right")


def _annotate(ax, W: np.ndarray) -> None:
    """Write each weight in its cell, white on the dark cells."""
    big = np.abs(W).max()
    for (i, j), w in np.ndenumerate(W):
        ax.text(
            j,
            i,
            f"{w:.2f}",
            ha="center",
            va="center",
            fontsize=8,
            color="white" if abs(w) < 0.5 * big else "black",
        )


def _panels(arrays, name: str, kinds: str, fits) -> list[np.ndarray]:
    """``arrays`` as a non-empty list of NumPy arrays, each of which ``fits``."""
    arrays = [_to_numpy(a, name) for a in arrays]
    if not arrays or not all(fits(a) for a in arrays):
        raise ValueError(
            f"{name} must be a non-empty list of {kinds} arrays, got shapes "
            f"{[a.shape for a in arrays]}"
        )
    return arrays


def _check_titles(titles, n: int, what: str) -> None:
    """Refuse ``titles`` unless None or one per ``what`` (``n`` of them)."""
    if titles is not None and len(titles) != n:
        raise ValueError(
            f"titles must have one entry per {what} ({n}), got {len(titles)}"
        )


def _ncols(ncols, n: int) -> int:
    """Panels per row: ``ncols`` checked, or up to 4."""
    return min(n, 4) if ncols is None else check_int(ncols, "ncols")


def _panel_grid(n: int, ncols: int, width: float, row_height: float):
    """A figure and its ``(rows, ncols)`` axes for ``n`` panels, rows ``row_height``."""
    nrows = math.ceil(n / ncols)
    return plt.subplots(
        nrows,
        ncols,
        figsize=(width, row_height * nrows),
        squeeze=False,
        layout="constrained",
    )


def attention_heatmap(
    weights,
    query_labels=None,
    key_labels=None,
    *,
    ax=None,
    title: str | None = None,
    signed: bool | None = None,
    annotate: bool = False,
    colorbar: bool = True,
    cmap: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    zero_color: str | None = None,
):
    """Draw a ``[query, key]`` weight matrix: queries down the rows, keys across.

    Signed matrices (LLE, self-expression) get a diverging colour map centred at zero.
    Panels that are compared with each other should share ``vmin`` and ``vmax`` (or be
    drawn by :func:`heatmap_grid`, which does so and adds one colour bar).

    Parameters
    ----------
    weights : tensor or array-like, shape (n_q, n_k)
        The finite weights.
    query_labels : sequence of str, length n_q, optional
        Tick labels of the rows.
    key_labels : sequence of str, length n_k, optional
        Tick labels of the columns.
    ax : matplotlib Axes, optional
        Where to draw (default: the current axes).
    title : str, optional
        The axes' title.
    signed : bool, optional
        Force the diverging (True) or sequential (False) colour map; default: signed if
        any weight is negative.
    annotate : bool
        Write each weight in its cell.
    colorbar : bool
        Add a colour bar.
    cmap : str, optional
        A matplotlib colour map instead of the default.
    vmin, vmax : float, optional
        The colour scale's limits (default: 0 or ``-max|w|`` to the largest weight, or
        ``max|w|`` when signed). Fix them to compare panels; ``vmin <= vmax``.
    zero_color : str, optional
        Draw exact zeros in this colour (e.g. ``"white"``), apart from small weights:
        use it where sparsity is the point.

    Returns
    -------
    matplotlib Axes
        The axes drawn on; ``ax.images[0]`` is the image, for a shared colour bar.
    """
    W = _to_numpy(weights, "weights")
    if W.ndim != 2 or not W.size:
        raise ValueError(
            f"weights must be a non-empty 2-D [query, key] matrix, got shape {W.shape}"
        )
    vmin, vmax = _check_limits(vmin, vmax)
    ax = ax or plt.gca()
    signed, lo, hi = _scale([W], signed, vmin, vmax)
    shown = np.ma.masked_equal(W, 0.0) if zero_color is not None else W
    im = ax.imshow(
        shown,
        cmap=_colour_map(cmap or ("RdBu_r" if signed else "viridis"), zero_color),
        vmin=lo,
        vmax=hi,
        interpolation="nearest",
        aspect="auto",
    )
    ax.grid(False)
    _tick_labels(ax, query_labels, key_labels, W.shape)
    if annotate:
        _annotate(ax, W)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)
    if colorbar:
        plt.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def heatmap_grid(
    matrices,
    titles=None,
    *,
    ncols: int | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    signed: bool | None = None,
    zero_color: str | None = None,
    cmap: str | None = None,
    label: str = "weight",
    width: float = COLUMN_INCHES,
    panel_height: float | None = None,
):
    """Several ``[query, key]`` matrices on one colour scale, with one colour bar.

    The panels can be compared by colour: a nearly uniform matrix looks uniform next to
    a peaked one, because every panel maps the same value to the same colour.

    Parameters
    ----------
    matrices : sequence of tensors or arrays, each shape (n_q, n_k)
        The matrices, one per panel.
    titles : sequence of str, one per matrix, optional
        The panels' titles.
    ncols : int, optional
        Panels per row (default: up to 4).
    vmin, vmax : float, optional
        The shared scale (default: over all matrices, as :func:`attention_heatmap`).
    signed : bool, optional
        Diverging colour map centred at zero (default: if any entry is negative).
    zero_color : str, optional
        Colour of exact zeros (see :func:`attention_heatmap`).
    cmap : str, optional
        A matplotlib colour map instead of the default.
    label : str
        The colour bar's label.
    width : float
        Figure width in inches (default: the column).
    panel_height : float, optional
        Height of a row of panels in inches (default: square panels).

    Returns
    -------
    matplotlib Figure
        The figure; its last axes is the colour bar.
    """
    mats = _panels(
        matrices, "matrices", "non-empty 2-D", lambda m: m.ndim == 2 and m.size
    )
    _check_titles(titles, len(mats), "matrix")
    ncols = _ncols(ncols, len(mats))
    width = check_positive(width, "width")
    vmin, vmax = _check_limits(vmin, vmax)
    signed, vmin, vmax = _scale(mats, signed, vmin, vmax, shared=True)
    _check_limits(vmin, vmax)
    height = panel_height or 0.85 * width / ncols
    fig, axes = _panel_grid(len(mats), ncols, width, height)
    for ax in axes.flat[len(mats) :]:
        ax.axis("off")
    for i, (ax, m) in enumerate(zip(axes.flat, mats)):
        attention_heatmap(
            m,
            ax=ax,
            title=None if titles is None else titles[i],
            signed=signed,
            colorbar=False,
            cmap=cmap,
            vmin=vmin,
            vmax=vmax,
            zero_color=zero_color,
        )
        if i % ncols:
            ax.set_ylabel("")
    fig.colorbar(axes.flat[0].images[0], ax=axes, label=label, shrink=0.9)
    return fig


def image_grid(
    images,
    titles=None,
    *,
    ncols: int | None = None,
    cmap: str = "gray",
    size: float | None = None,
    vmin=0.0,
    vmax=1.0,
    colorbar: str | None = None,
    zero_color: str | None = None,
):
    """Show images side by side with optional titles, on one shared value scale.

    Parameters
    ----------
    images : sequence of tensors or arrays, each shape (H, W) or (H, W, 3|4)
        The images, values in ``[vmin, vmax]`` (clipped to it).
    titles : sequence of str, one per image, optional
        Titles above the images.
    ncols : int, optional
        Images per row (default: up to 4).
    cmap : str
        Colour map of grey images.
    size : float, optional
        Inches per image (default: the column's width shared by ``ncols`` images).
    vmin, vmax : float
        The range of the values shown, the same for every image; ``vmin <= vmax``.
    colorbar : str, optional
        Add one colour bar for all the images, with this label.
    zero_color : str, optional
        Draw exact zeros of grey images in this colour.

    Returns
    -------
    matplotlib Figure
        The figure.
    """
    images = _panels(
        images,
        "images",
        "(H, W) or (H, W, 3|4)",
        lambda im: im.ndim == 2 or (im.ndim == 3 and im.shape[-1] in (3, 4)),
    )
    _check_titles(titles, len(images), "image")
    if vmin is None or vmax is None:
        raise ValueError(f"vmin and vmax must be numbers, got {vmin!r}, {vmax!r}")
    vmin, vmax = _check_limits(vmin, vmax)
    ncols = _ncols(ncols, len(images))
    width = COLUMN_INCHES - (0.8 if colorbar else 0.0)
    size = width / ncols if size is None else check_positive(size, "size")
    if size > 100:
        raise ValueError(f"size must be at most 100 inches per image, got {size}")
    extra = 0.8 if colorbar else 0.0
    fig, axes = _panel_grid(len(images), ncols, size * ncols + extra, size)
    for ax in axes.flat:
        ax.axis("off")
    cm = _colour_map(cmap, zero_color)
    im_ = None
    for i, (ax, im) in enumerate(zip(axes.flat, images)):
        shown = np.clip(im, vmin, vmax)
        if zero_color is not None and im.ndim == 2:
            shown = np.ma.masked_equal(shown, 0.0)
        im_ = ax.imshow(shown, cmap=cm, vmin=vmin, vmax=vmax)
        if titles is not None:
            ax.set_title(titles[i], fontsize=10)
    if colorbar:
        fig.colorbar(im_, ax=axes, label=str(colorbar), shrink=0.9)
    return fig
