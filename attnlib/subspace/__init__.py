"""Self-expressive subspace clustering: each sample a combination of the others.

Self-expressiveness writes every sample as a combination of the *other* samples,
``X ≈ C X`` with ``diag(C) = 0``: a global, signed self-attention whose weights are
learned by solving an optimisation problem rather than computed from a query–key score.
Tokens are rows, so row ``i`` of ``C`` expresses sample ``i`` (``C[query, key]``); the
self-expression paper puts samples in columns and its ``C`` is our ``C.T``.

The package holds chapter 05's code, one module per part of the idea; every public name
is importable from here.

- ``expression``: the self-expressive coefficients for three regularisers (LSR and
  LRSC in closed form, SSC through the row-wise Lasso solvers of ``lasso``);
- ``clustering``: the affinity, spectral clustering and the scikit-learn estimator
  (which refines its labels by the K-subspaces of ``ksubspaces``);
- ``lasso``: the checked entries of the row-wise Lasso solvers, which hand the checked
  arrays to the private engines of ``_lasso`` (homotopy, active set, ISTA, FISTA);
- ``ksubspaces``: K-subspaces, the refinement of ``SubspaceClustering``;
- ``sparse_coding``: sparse-coding attention, the same Lasso read as an attention layer
  (unrolled ISTA).

The chapter's experiments (data, experiment models, trained runs) are in
``attnlib.subspace.experiments``.
"""

from . import clustering, expression, ksubspaces, lasso, sparse_coding
from .clustering import *  # noqa: F403
from .expression import *  # noqa: F403
from .ksubspaces import *  # noqa: F403
from .lasso import *  # noqa: F403
from .sparse_coding import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += expression.__all__
__all__ += clustering.__all__
__all__ += lasso.__all__
__all__ += ksubspaces.__all__
__all__ += sparse_coding.__all__
