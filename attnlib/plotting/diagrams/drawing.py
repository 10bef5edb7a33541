"""Drawing pieces of the diagrams: a figure in inches, boxes, arrows, grids of cells."""

from __future__ import annotations

import io

import matplotlib as mpl
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from ...utils.validation import check_positive, check_type
from ..style import PALETTE

__all__ = ["Diagram", "DIAGRAM_INCHES", "smallest_text_px"]

#: Width of a diagram in inches: 576 CSS px as SVG (72 pt per inch, 4/3 px per pt).
DIAGRAM_INCHES = 6.0
#: Smallest font of a diagram (points): 10 pt at 6 in scales to 9 CSS px at 390 px.
SMALL = 11
BIG = 12
BLUE, ORANGE, GREEN, VERMILION, PINK, SKY = PALETTE[:6]
INK = "#222222"


class Diagram(Figure):
    """A matplotlib Figure that a notebook shows as SVG (vector: sharp at any width).

    Not managed by pyplot (it has its own Agg canvas), so a cell that returns one shows
    it once, as its value, and nothing needs closing.

    Parameters
    ----------
    figsize : tuple of float
        Width and height in inches.
    """

    def __init__(self, figsize=(DIAGRAM_INCHES, 3.0)):
        super().__init__(figsize=figsize)
        FigureCanvasAgg(self)

    def _repr_svg_(self) -> str:
        buf = io.StringIO()
        with mpl.rc_context({"svg.fonttype": "path", "svg.hashsalt": "attnlib"}):
            self.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.05)
        return buf.getvalue()


def smallest_text_px(fig: Figure, column_px: float = 390.0) -> float:
    """The smallest visible text of ``fig`` in CSS px once scaled to ``column_px`` wide.

    The figure is measured as it is saved (its tight box, 96 CSS px per inch): no
    wider than the column, it displays at its natural size; a wider one is scaled
    down to the column.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, as it will be saved.
    column_px : float
        Width of the column it is shown in, in CSS px (390: a phone).

    Returns
    -------
    float
        The smallest font of its visible text, in CSS px; ``inf`` without text.
    """
    check_type(fig, "fig", Figure, "a matplotlib Figure")
    column_px = check_positive(column_px, "column_px")
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    box = fig.get_tightbbox(canvas.get_renderer())
    shown = min(1.0, column_px / ((box.width + 0.1) * 96.0))
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(mpl.text.Text)
        if t.get_visible() and t.get_text().strip()
    ]
    return min(sizes) * 96.0 / 72.0 * shown if sizes else float("inf")


def _canvas(height: float) -> tuple[Diagram, mpl.axes.Axes]:
    """A diagram ``DIAGRAM_INCHES`` by ``height`` inches; its one axis counts inches."""
    fig = Diagram(figsize=(DIAGRAM_INCHES, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, DIAGRAM_INCHES)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _text(ax, x, y, s, size=SMALL, **kw):
    kw = {"ha": "center", "va": "center", "color": INK, **kw}
    return ax.text(x, y, s, fontsize=size, **kw)


def _box(ax, x, y, w, h, label="", color=BLUE, fill=0.15, size=BIG, **kw):
    """A rounded box with its lower-left corner at (x, y) and a centred label."""
    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0.02,rounding_size=0.06",
            fc=mpl.colors.to_rgba(color, fill),
            ec=color,
            lw=1.4,
        )
    )
    if label:
        _text(ax, x + w / 2, y + h / 2, label, size=size, **kw)


def _arrow(ax, start, end, color=INK, lw=1.4, alpha=1.0, style="-|>"):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=10 + 2 * lw,
            lw=lw,
            color=color,
            alpha=alpha,
            shrinkA=2,
            shrinkB=2,
        )
    )


def _grid(ax, x, y, values, cell, color=BLUE, vmax=None, edge="0.75", zero=None):
    """Matrix ``values`` as a grid of cells, row 0 on top, depth of ``color`` ∝ value.

    Cells equal to zero get the colour ``zero`` when given (exact zeros stand out).
    Returns the grid's lower-left corner and size for labelling.
    """
    values = np.asarray(values, dtype=float)
    n, m = values.shape
    top = vmax if vmax is not None else max(float(np.abs(values).max()), 1e-12)
    for i in range(n):
        for j in range(m):
            v = values[i, j]
            if v == 0 and zero is not None:
                fc = zero
            else:
                fc = mpl.colors.to_rgba(color, 0.08 + 0.92 * min(abs(v) / top, 1.0))
            ax.add_patch(
                Rectangle(
                    (x + j * cell, y + (n - 1 - i) * cell),
                    cell,
                    cell,
                    fc=fc,
                    ec=edge,
                    lw=0.6,
                )
            )
    return x, y, m * cell, n * cell
