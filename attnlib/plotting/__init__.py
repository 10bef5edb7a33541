"""One consistent, colour-blind-safe style for every figure and table of the book.

Figures are drawn at the width of the book's text column (``COLUMN_INCHES`` at ``DPI``
dots per inch, about 680 px), so that they display at their natural size. The package
holds the style (``style``), weight matrices and images on shared colour scales
(``heatmaps``), a slider over precomputed figures that needs no kernel (``slider``),
and tables for readers (``tables``); every public name is importable from
``attnlib.plotting``.
"""

from .heatmaps import attention_heatmap, heatmap_grid, image_grid
from .slider import FrameSlider, frame_slider
from .style import COLUMN_INCHES, DPI, PALETTE, use_book_style
from .tables import table

__all__ = [
    "PALETTE",
    "COLUMN_INCHES",
    "DPI",
    "use_book_style",
    "attention_heatmap",
    "heatmap_grid",
    "image_grid",
    "frame_slider",
    "FrameSlider",
    "table",
]
