"""The transformer blocks built from :func:`attnlib.functional.attention`.

:class:`MultiHeadAttention` runs several heads of the one equation in learned subspaces;
:class:`TransformerEncoderLayer` wraps it with a feed-forward block, residuals and layer
norms, and :class:`TransformerDecoderLayer` adds attention to an encoder's output. They
take ``nn.MultiheadAttention``'s, ``nn.TransformerEncoderLayer``'s and
``nn.TransformerDecoderLayer``'s arguments, defaults, parameters and state dicts (both
ways), and the same ``score`` and ``normalizer`` as
:func:`~attnlib.functional.attention`.
"""

from __future__ import annotations

from .decoder import TransformerDecoderLayer
from .encoder import TransformerEncoderLayer
from .multihead import MultiHeadAttention

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer"]
