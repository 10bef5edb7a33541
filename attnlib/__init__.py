"""attnlib: the library of *Attention Before Attention*.

One module per idea; every chapter of the book imports it. The core is
``attnlib.attention`` (:func:`attnlib.functional.attention`), of which every other
method is a special case. The package ``attnlib.functional`` holds it with its scores
and engines, as ``torch.nn.functional`` holds ``scaled_dot_product_attention``; the
function and the package have different names, so ``attnlib.attention`` is always the
function.
"""

from .functional import AttentionResult, attention, scaled_dot_product_attention
from .layers import MultiHeadAttention, TransformerEncoderLayer

__version__ = "0.1.0"

__all__ = [
    "attention",
    "scaled_dot_product_attention",
    "AttentionResult",
    "MultiHeadAttention",
    "TransformerEncoderLayer",
    "__version__",
]
