"""Normalizers: maps from a row of scores to a probability vector, and their losses.

Each map is a *regularised prediction map* ``argmax_p <p, x> - Ω(p)`` over the
probability simplex (Def. 1 of the sparse-continuous attention paper): the Shannon
negentropy gives softmax, the 2-Tsallis negentropy sparsemax, and the α-Tsallis
negentropy α-entmax, which puts exactly zero weight on low scores when α > 1.

The threshold τ of sparsemax and entmax is found without sorting, by Newton's method
from below (Michelot's algorithm at α = 2); on a CPU it runs as compiled loops over the
rows (the private engine ``_entmax_loops``, C compiled once per machine), so that each
row is read from memory once; where no C compiler is present, and off the CPU, the torch
engine ``_entmax`` sorts or bisects instead.
:func:`attnlib.functional.attention` knows ``"sparsemax"`` and ``"entmax"`` (α = 1.5) as
normalizers by name.

A script written for the ``entmax`` package (Peters et al., 2019; Correia et al., 2019)
runs on attnlib by changing its import to ``attnlib.normalizers``: every public name of
the package (1.3) is here with its signature and defaults (``sparsemax``, ``entmax15``,
``entmax_bisect``, ``sparsemax_bisect``, ``normmax_bisect``, ``budget_bisect``, their
modules, the losses and their modules), and the package's own test files pass against
it with only their import rewritten (``tests/test_entmax_own_tests.py``). The
departures, each for a reason, are listed in ``attnlib.normalizers.packaged`` and
``attnlib.normalizers.modules`` (``k`` and ``n_iter`` never make a result coarser; a
target equal to ``ignore_index`` is ignored whatever its sign). Unlike the package, a
slice that is entirely ``-inf`` (every key masked) gets zeros and a zero gradient, as
in :func:`attnlib.functional.attention`.

One idea per module:

* ``attnlib.normalizers.maps``: softmax, sparsemax and entmax, with their backward
  passes and the threshold search;
* ``attnlib.normalizers.hard``: the hard choice (hardmax) and its straight-through
  form, the limits the others relax;
* ``attnlib.normalizers.packaged``: the ``entmax`` package's bisection maps
  (``entmax_bisect`` for any α > 0, ``normmax_bisect``, ``budget_bisect``, ...) and
  their modules;
* ``attnlib.normalizers.tsallis``: the Tsallis entropies, the β-exponential and
  β-logarithm, and the Fenchel–Young loss;
* ``attnlib.normalizers.losses``: the package's loss functions (per-row losses);
* ``attnlib.normalizers.modules``: the maps and their losses as ``nn.Module``s with the
  ``entmax`` package's signatures (``Sparsemax``, ``Entmax15``, ``Entmax``, the losses);
* ``attnlib.normalizers.common``: the checks and row plumbing the two share.
"""

from . import hard, losses, maps, modules, packaged, tsallis
from .hard import *  # noqa: F403
from .losses import *  # noqa: F403
from .maps import *  # noqa: F403
from .modules import *  # noqa: F403
from .packaged import *  # noqa: F403
from .packaged import (  # private, as in the package, whose tests call them
    _entmax_threshold_and_support as _entmax_threshold_and_support,
)
from .packaged import (
    _sparsemax_threshold_and_support as _sparsemax_threshold_and_support,
)
from .tsallis import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += maps.__all__
__all__ += hard.__all__
__all__ += packaged.__all__
__all__ += tsallis.__all__
__all__ += losses.__all__
__all__ += modules.__all__
