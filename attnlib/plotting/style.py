"""The book's figure style: the palette, the column's width, readable fonts."""

from __future__ import annotations

import io
import sys

import matplotlib as mpl
import numpy as np
import PIL.Image
import torch

from ..utils import check_numeric

__all__ = ["PALETTE", "COLUMN_INCHES", "DPI", "SHARPNESS", "use_book_style"]

#: Width of the book's text column in inches, at :data:`DPI`: about 680 px.
COLUMN_INCHES = 6.8
#: Dots per inch of the book's figures, inline and in sliders (1 in = 100 px).
DPI = 100
#: Pixels per displayed pixel of the book's PNGs (inline figures and slider frames): a
#: figure is rendered at ``SHARPNESS * DPI`` and shown at its natural size, so that it
#: stays sharp on a phone's or a laptop's high-density screen.
SHARPNESS = 2

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

    Changes ``matplotlib.rcParams`` for the rest of the session. In a notebook
    (IPython), figures are also shown as PNGs at ``SHARPNESS`` times their natural
    resolution, with their natural width as metadata: the page shows them at the
    column's width, sharp on a high-density screen.
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
            # 13 pt on a column-wide figure shows at 8 CSS px or more in a 390 px phone
            # column (a figure shown at about half its natural width): the smallest
            # text a reader can take (tests/test_site.py measures it on the built pages;
            # at 12 pt, 14 figures came out at 7.6-8.0 px).
            "font.size": 13,
            "axes.titlesize": 13,
            "axes.labelsize": 13,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "legend.frameon": False,
        }
    )
    _show_sharp_pngs()


def _sharp_png(fig):
    """A figure as a PNG at ``SHARPNESS`` x its resolution, with its natural width."""
    if not fig.axes and not fig.lines and not fig.texts:
        return None  # as IPython's own formatter: an empty figure shows nothing
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=SHARPNESS * fig.dpi, bbox_inches="tight")
    data = buf.getvalue()
    with PIL.Image.open(io.BytesIO(data)) as image:
        width = image.size[0] // SHARPNESS
    # The width alone: a height as well would fix it on a phone's narrower column.
    return data, {"width": width}


def _show_sharp_pngs() -> None:
    """Show figures in IPython through :func:`_sharp_png` (nothing outside IPython)."""
    ipython = sys.modules.get(
        "IPython"
    )  # loaded where a notebook runs; not a dependency
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    backend = mpl.rcParams["backend"]
    if "inline" in backend:
        # Load the inline backend now: on its first load it registers IPython's own
        # figure formatter, which would replace this one after the setup cell.
        import matplotlib.pyplot as plt

        plt.switch_backend(backend)
    png = shell.display_formatter.formatters["image/png"]
    png.for_type(mpl.figure.Figure, _sharp_png)


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
