"""One consistent, colour-blind-safe style for every figure and table of the book.

Figures are drawn at the width of the book's text column (``COLUMN_INCHES`` at ``DPI``
dots per inch, about 680 px), so that they display at their natural size. The package
holds the style (``style``), weight matrices and images on shared colour scales
(``heatmaps``), coefficient maps of grouped points (``blocks``), a slider over
precomputed figures that needs no kernel (``slider``), tables for readers (``tables``)
and one drawn diagram per chapter (``diagrams``, shown as SVG); every public name is
importable from ``attnlib.plotting``.
"""

from . import blocks, diagrams, heatmaps, slider, style, tables
from .blocks import *  # noqa: F403
from .diagrams import *  # noqa: F403
from .heatmaps import *  # noqa: F403
from .slider import *  # noqa: F403
from .style import *  # noqa: F403
from .tables import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += style.__all__
__all__ += heatmaps.__all__
__all__ += blocks.__all__
__all__ += slider.__all__
__all__ += tables.__all__
__all__ += diagrams.__all__
