"""The book's figure style: the palette, the column's width, readable fonts."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import torch

from ..utils import check_numeric

__all__ = ["PALETTE", "COLUMN_INCHES", "DPI", "use_book_style"]

#: Width of the book's text column in inches, at :data:`DPI`: about 680 px.
COLUMN_INCHES = 6.8
#: Dots per inch of the book's figures, inline and in sliders (1 in = 100 px).
DPI = 100

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
            # The column's width at 100 dpi: a figure displays at its natural size.
            "figure.figsize": (COLUMN_INCHES, 4.0),
            "figure.dpi": DPI,
            "savefig.dpi": DPI,
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
    """A finite real array from a tensor (any device) or array-like of numbers."""
    check_numeric(x, name)
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
