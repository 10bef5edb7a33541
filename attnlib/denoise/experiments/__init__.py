"""Chapter 03's experiments: a learned baseline that is not attention, and the tables.

- ``cnn``: :class:`SmallCNNDenoiser`, a residual convolutional denoiser sized like
  :class:`attnlib.denoise.PatchAttentionDenoiser`, and :func:`baseline_run`, which
  trains both the same way (the question: what does the attention buy?);
- ``tables``: the committed denoising results (``results.load("denoise")``) as the
  chapter's tables of PSNR and time.

Every public name is importable from here.
"""

from .cnn import (
    SmallCNNDenoiser,
    baseline_run,
    cnn_matching,
    count_parameters,
    training_images,
)
from .tables import baseline_table, psnr_table, quality_table, speed_table

__all__ = [
    "SmallCNNDenoiser",
    "baseline_run",
    "cnn_matching",
    "count_parameters",
    "training_images",
    "baseline_table",
    "quality_table",
    "speed_table",
    "psnr_table",
]
