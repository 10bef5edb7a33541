"""Locally linear embedding (LLE) as masked self-attention.

Each point (a *query*) writes itself as an affine combination of its ``K`` nearest
neighbours (the *keys*, which are also the *values*). The coefficients are the rows of a
``[query, key]`` weight matrix ``W`` that is zero outside the k-nearest-neighbour *mask*
and whose rows sum to one, like attention weights. Unlike softmax attention, a weight
may be negative and depends on all of the query's neighbours at once, through their
local Gram matrix. The embedding keeps those weights and finds low-dimensional points
that they reconstruct as well as possible: the bottom eigenvectors of
``(I - W)ᵀ(I - W)``.

The papers put tokens in columns; their coefficients ``c_ij`` (key ``i``, query ``j``)
are our ``W[j, i]``.

One idea per module:

* ``attnlib.lle.weights``: the neighbourhoods and the barycentric weights (LLE's first
  two steps, and LLE as one call of attention);
* ``attnlib.lle.embedding``: the embedding those weights define (the third step) and the
  scikit-learn estimator.
"""

try:  # the chapters' extras, not in the slim install (pip install attnlib)
    import scipy  # noqa: F401
    import sklearn  # noqa: F401
except ModuleNotFoundError as err:
    raise ModuleNotFoundError(
        f"{__name__} needs {err.name}, one of the chapters' extras: "
        "pip install 'attnlib[book]'",
        name=err.name,
    ) from err

from . import embedding, weights
from .embedding import *  # noqa: F403
from .weights import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += weights.__all__
__all__ += embedding.__all__
