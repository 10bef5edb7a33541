"""Chapter 03's experiments: a learned baseline that is not attention, and the tables.

- ``cnn``: :class:`SmallCNNDenoiser`, a residual convolutional denoiser sized like
  :class:`attnlib.denoise.PatchAttentionDenoiser`, and :func:`baseline_run`, which
  trains both the same way (the question: what does the attention buy?);
- ``tables``: the committed denoising results (``results.load("denoise")``) as the
  chapter's tables of PSNR and time.

Every public name is importable from here.
"""

from . import cnn, tables
from .cnn import *  # noqa: F403
from .tables import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += cnn.__all__
__all__ += tables.__all__
