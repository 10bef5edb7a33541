"""Nadaraya–Watson kernel regression, written as attention.

The estimator predicts at a query point a weighted average of the training targets, the
weights being a kernel between the query and each training input, normalised to sum to
one. That is attention with queries = the query points, keys = the training inputs and
values = the training targets. For the Gaussian kernel the normalisation is a softmax of
``-||x - x_j||² / (2σ²)``: :func:`~attnlib.functional.attention` with
``score="neg_sq_dist"`` and ``temperature=σ²``. What attention adds is a learned
projection ``q = W x, k = W x``;
:class:`MetricNadarayaWatson` learns it.

Two ways of normalising are used, both through :func:`attnlib.functional.attention`:

* ``"gaussian"`` and ``"laplace"`` are exponentials of a score, so their weights are a
  softmax of ``log κ`` (robust: a tiny bandwidth gives the nearest neighbour, not 0/0);
* the compact kernels (``"epanechnikov"``, ``"boxcar"``...) and callables return
  kernel values ``κ(x, x_j) >= 0`` as the score, and a row normaliser divides by their
  sum (Eq. (5) of the self-expression paper as written). A query with no training
  point inside a compact kernel's support has an all-zero row: that raises a
  ``ValueError`` rather than returning NaN.
"""

try:  # the chapters' extras, not in the slim install (pip install attnlib)
    import numba  # noqa: F401
    import scipy  # noqa: F401
    import sklearn  # noqa: F401
except ModuleNotFoundError as err:
    raise ModuleNotFoundError(
        f"{__name__} needs {err.name}, one of the chapters' extras: "
        "pip install 'attnlib[book]'",
        name=err.name,
    ) from err

from . import core, estimators
from .core import *  # noqa: F403
from .estimators import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += core.__all__
__all__ += estimators.__all__
