"""Symmetry: why a map that ignores the choice of embedding must look like attention.

A sequence-to-sequence map is *orthogonal equivariant* when rotating the embedding space
rotates its output in the same way. Ma & Ying (2022) show that such a map returns, for
every token, a combination of the input tokens whose coefficients depend only on inner
products; with "knowledge" vectors ``Z`` living in the same space, the coefficients may
depend on ``Z``'s inner products with the tokens, and self-attention is the simplest
finite-parameter instance of that form.

Convention: tokens are rows, as everywhere in attnlib. A sequence is ``X`` of shape
``(n, d)``, the knowledge ``Z`` is ``(k, d)``, a rotation acts as ``X -> X @ Q.T`` and a
permutation of the tokens as ``X -> P @ X``. The paper writes tokens as columns
(``X ∈ R^{d×n}``, ``f(X) = X g(XᵀX)``); its coefficient matrix ``g`` is our
``weights.T`` and its ``ZᵀX`` is our ``X @ Z.T``.

The group elements and the equivariance test live in ``attnlib.symmetry.groups``,
the heads of that form in ``attnlib.symmetry.heads``; every name is imported from
here.
"""

from . import groups, heads
from .groups import *  # noqa: F403
from .heads import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += groups.__all__
__all__ += heads.__all__
