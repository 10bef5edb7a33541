"""Normalizers: maps from a row of scores to a probability vector, and their losses.

Each map is a *regularised prediction map* ``argmax_p <p, x> - Ω(p)`` over the
probability simplex (Def. 1 of the sparse-continuous attention paper): the Shannon
negentropy gives softmax, the 2-Tsallis negentropy sparsemax, and the α-Tsallis
negentropy α-entmax, which puts exactly zero weight on low scores when α > 1.

The threshold τ of sparsemax and entmax is found without sorting, by Newton's method
from below (Michelot's algorithm at α = 2); on a CPU it runs as compiled loops over the
rows (the private engines ``_entmax_loops`` and ``_entmax_numba``), so that each row is
read from memory once.
:func:`attnlib.functional.attention` knows ``"sparsemax"`` and ``"entmax"`` (α = 1.5) as
normalizers by name.

One idea per module:

* ``attnlib.normalizers.maps``: softmax, sparsemax and entmax, with their backward
  passes and the threshold search;
* ``attnlib.normalizers.tsallis``: the Tsallis entropies, the β-exponential and
  β-logarithm, and the Fenchel–Young loss;
* ``attnlib.normalizers.modules``: the maps and their losses as ``nn.Module``s with the
  ``entmax`` package's signatures (``Sparsemax``, ``Entmax15``, ``Entmax``, the losses);
* ``attnlib.normalizers.common``: the checks and row plumbing the two share.
"""

from . import maps, modules, tsallis
from .maps import *  # noqa: F403
from .modules import *  # noqa: F403
from .tsallis import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += maps.__all__
__all__ += tsallis.__all__
__all__ += modules.__all__
