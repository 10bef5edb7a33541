"""What the chapters need from the book around them: numbers glued into the prose.

The book-facing layer (with :mod:`attnlib.plotting` and :mod:`attnlib.results`): it may
import every other part of attnlib, and nothing in the library imports it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["glue"]


def glue(name: str, value, display: bool = False) -> None:
    """Record a computed value under ``name`` so that the chapter's prose can quote it.

    When the book is built, myst-nb pastes the value wherever the markdown says
    ``{glue:text}`name:.3f` ``, so a number in the prose is always the one the cell
    computed. Where myst-nb is not installed (a chapter opened in Colab), nothing is
    recorded and the value is shown only if ``display`` is true.

    Parameters
    ----------
    name : str
        The key the prose uses, unique in the book (chapters prefix it, e.g.
        ``"ch05_..."``).
    value : object
        The value to record (a number, a string, a figure, a table).
    display : bool, default=False
        Also show the value in the cell's output.
    """
    if isinstance(value, np.generic):  # myst-nb formats Python numbers, not NumPy's
        value = value.item()
    try:
        from myst_nb import glue as record
    except ImportError:
        if display:
            from IPython.display import display as show

            show(value)
        return
    record(name, value, display=display)
