"""One drawn diagram per chapter: boxes, arrows, matrices as grids, a few numbers.

Each function returns a :class:`Diagram`, a matplotlib Figure drawn in inches (one axis,
no ticks) that shows itself as SVG in a notebook and on the built page. The figures are
narrower than the column (``DIAGRAM_INCHES``) and their smallest text is 10 points, so
that on a phone, with the figure scaled to a 390 px column, no label is under 8 CSS px
(:func:`smallest_text_px` measures it). Colours are the book's Okabe–Ito palette;
matrices are drawn as grids of cells, a weight as the depth of one hue.

Call one in a chapter's diagram cell, e.g. ``attnlib.plotting.diagrams.qkv_lookup()``:
the figure is not managed by pyplot, so it shows once, as the cell's value.
"""

from . import chapters_01_04, chapters_05_08, drawing
from .chapters_01_04 import *  # noqa: F403
from .chapters_05_08 import *  # noqa: F403
from .drawing import *  # noqa: F403

__all__: list[str] = []
__all__ += drawing.__all__
__all__ += chapters_01_04.__all__
__all__ += chapters_05_08.__all__
