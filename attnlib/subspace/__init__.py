"""Self-expressive subspace clustering: each sample a combination of the others.

Self-expressiveness writes every sample as a combination of the *other* samples,
``X ≈ C X`` with ``diag(C) = 0``: a global, signed self-attention whose weights are
learned by solving an optimisation problem rather than computed from a query–key score.
Tokens are rows, so row ``i`` of ``C`` expresses sample ``i`` (``C[query, key]``); the
self-expression paper puts samples in columns and its ``C`` is our ``C.T``.

This module holds the idea: the self-expressive coefficients for three regularisers
(LSR and LRSC in closed form, SSC through the row-wise Lasso solvers of
:mod:`attnlib.lasso`), the affinity, spectral clustering and the scikit-learn estimator
(which refines its labels by the K-subspaces of :mod:`attnlib.ksubspaces`).
Sparse-coding attention, the same Lasso read as an attention layer, is in
:mod:`attnlib.sparse_coding`.
"""

from ..lasso import SolverInfo, soft_threshold  # noqa: F401 (re-exported)
from ..sparse_coding import (  # noqa: F401 (re-exported)
    UnrolledISTAAttention,
    sparse_coding_attention,
)
from .clustering import (
    SubspaceClustering,
    affinity,
    clustering_accuracy,
    spectral_clustering,
)
from .expression import DEFAULT_LAM, self_expressive, ssc_objective

# soft_threshold and SolverInfo (attnlib.lasso), sparse_coding_attention and
# UnrolledISTAAttention (attnlib.sparse_coding) stay importable from here; they are not
# listed, so that the API reference documents them once.
__all__ = [
    "DEFAULT_LAM",
    "ssc_objective",
    "self_expressive",
    "affinity",
    "spectral_clustering",
    "clustering_accuracy",
    "SubspaceClustering",
]
