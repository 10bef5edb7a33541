"""Attention in one equation.

Every chapter of the book is a call of :func:`attention`: choose how queries are
compared with keys (the *score*), how a row of scores becomes weights (the
*normalizer*), and which keys each query may see (the *mask*). Tokens are rows: ``q`` is
``(..., n_q, d)``, ``k`` is ``(..., n_k, d)``, ``v`` is ``(..., n_k, d_v)``, and the
weights are indexed ``[query, key]``. The papers put tokens in columns; their
coefficient matrix ``C`` is our ``weights.T``.

:func:`scaled_dot_product_attention` is the same equation in PyTorch's shape of call
(a drop-in for ``torch.nn.functional.scaled_dot_product_attention``), returning the
output only. The package reads by concern: ``scores`` (what a query and a key are
compared by), ``core`` and ``sdpa`` (the two faces), and their private trusted parts:
``_arguments`` (the checks, once), ``_dense`` (the weights path) and ``_fused`` (the
paths without weights: SDPA and the flash kernels, ``_triton_flash``).
"""

from __future__ import annotations

from .core import AttentionResult, attend, attention
from .core import output_of as output_of
from .scores import SCORES, resolve
from .scores import Normalizer as Normalizer
from .scores import Score as Score
from .sdpa import scaled_dot_product_attention

__all__ = [
    "AttentionResult",
    "attention",
    "scaled_dot_product_attention",
    "attend",
    "resolve",
    "SCORES",
]
