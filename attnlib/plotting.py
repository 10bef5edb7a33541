"""One consistent, colour-blind-safe style for every figure of the book."""

from __future__ import annotations

import math

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch

from .utils import check_int, check_positive

__all__ = ["PALETTE", "use_book_style", "attention_heatmap", "image_grid"]

#: Okabe–Ito colours, distinguishable under the common colour-vision deficiencies.
PALETTE = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
]


def use_book_style() -> None:
    """Set matplotlib defaults for the book: the palette, readable fonts, light grids.

    Changes ``matplotlib.rcParams`` for the rest of the session.
    """
    mpl.rcParams.update(
        {
            "axes.prop_cycle": mpl.cycler(color=PALETTE),
            "image.cmap": "viridis",
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "savefig.bbox": "tight",
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "legend.frameon": False,
        }
    )


def _to_numpy(x, name: str) -> np.ndarray:
    """A finite numeric array from a tensor (any dtype, device) or array-like."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        x = (x.double() if x.is_floating_point() else x).numpy()
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{name} must be an array of numbers, got {type(x).__name__}"
        ) from err
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


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
):
    """Draw a ``[query, key]`` weight matrix: queries down the rows, keys across.

    Keys run along the columns.

    Signed matrices (LLE, self-expression) get a diverging colour map centred at zero.

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

    Returns
    -------
    matplotlib Axes
        The axes drawn on.
    """
    W = _to_numpy(weights, "weights")
    if W.ndim != 2:
        raise ValueError(
            f"weights must be a 2-D [query, key] matrix, got shape {W.shape}"
        )
    ax = ax or plt.gca()
    signed = bool((W < 0).any()) if signed is None else signed
    if signed:
        lim = float(np.abs(W).max()) or 1.0
        im = ax.imshow(
            W,
            cmap=cmap or "RdBu_r",
            vmin=-lim,
            vmax=lim,
            interpolation="nearest",
            aspect="auto",
        )
    else:
        im = ax.imshow(
            W, cmap=cmap or "viridis", vmin=0, interpolation="nearest", aspect="auto"
        )
    ax.grid(False)
    for labels, set_ticks, set_labels, n in (
        (query_labels, ax.set_yticks, ax.set_yticklabels, W.shape[0]),
        (key_labels, ax.set_xticks, ax.set_xticklabels, W.shape[1]),
    ):
        if labels is not None:
            set_ticks(range(n))
            set_labels(labels)
    if key_labels is not None:
        plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
    if annotate:
        for (i, j), w in np.ndenumerate(W):
            ax.text(
                j,
                i,
                f"{w:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if abs(w) < 0.5 * np.abs(W).max() else "black",
            )
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)
    if colorbar:
        plt.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def image_grid(
    images,
    titles=None,
    *,
    ncols: int | None = None,
    cmap: str = "gray",
    size: float = 2.6,
    vmin=0.0,
    vmax=1.0,
):
    """Show images side by side with optional titles.

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
    size : float
        Inches per image.
    vmin, vmax : float
        The range of the values shown.

    Returns
    -------
    matplotlib Figure
        The figure.
    """
    images = [_to_numpy(im, "images") for im in images]
    if not images or any(
        im.ndim not in (2, 3) or (im.ndim == 3 and im.shape[-1] not in (3, 4))
        for im in images
    ):
        raise ValueError(
            "images must be a non-empty list of (H, W) or (H, W, 3|4) arrays, got "
            f"shapes {[im.shape for im in images]}"
        )
    if titles is not None and len(titles) != len(images):
        raise ValueError(
            f"titles must have one entry per image ({len(images)}), got {len(titles)}"
        )
    ncols = min(len(images), 4) if ncols is None else check_int(ncols, "ncols")
    size = check_positive(size, "size")
    if size > 100:
        raise ValueError(f"size must be at most 100 inches per image, got {size}")
    nrows = math.ceil(len(images) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False
    )
    for ax in axes.flat:
        ax.axis("off")
    for i, (ax, im) in enumerate(zip(axes.flat, images)):
        ax.imshow(np.clip(im, vmin, vmax), cmap=cmap, vmin=vmin, vmax=vmax)
        if titles is not None:
            ax.set_title(titles[i], fontsize=10)
    fig.tight_layout()
    return fig
