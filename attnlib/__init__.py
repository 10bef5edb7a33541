"""attnlib: the library of *Attention Before Attention*.

One module per idea; every chapter of the book imports it. The core is
:func:`attnlib.attention.attention`, of which every other method is a special case.
"""

from . import attention  # the module, callable as the function (see its end)
from .attention import AttentionResult
from .layers import MultiHeadAttention, TransformerEncoderLayer

__version__ = "0.1.0"

__all__ = [
    "attention",
    "AttentionResult",
    "MultiHeadAttention",
    "TransformerEncoderLayer",
    "__version__",
]
