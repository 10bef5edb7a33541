"""The transformer blocks built from :func:`attnlib.functional.attention`.

:class:`MultiHeadAttention` runs several heads of the one equation in learned subspaces;
:class:`TransformerEncoderLayer` wraps it with a feed-forward block, residuals and layer
norms. Both take ``nn.MultiheadAttention``'s and ``nn.TransformerEncoderLayer``'s
arguments, defaults, parameters and state dicts (both ways), and the same ``score``
and ``normalizer`` as :func:`~attnlib.functional.attention`.
"""

from __future__ import annotations

from .encoder import TransformerEncoderLayer
from .multihead import MultiHeadAttention

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer"]
