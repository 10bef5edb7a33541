"""Denoising as attention: Gaussian filter, non-local means, learned patch transformer.

A Gaussian filter is attention whose queries and keys are pixel *positions*; non-local
means (NLM) is attention whose queries and keys are the *patches* around the pixels and
whose values are the pixels themselves; a vision-transformer layer is NLM with learned
projections, positional encodings and several heads. Images are ``(H, W)`` (grey) or
``(H, W, C)`` (channels last); the pixels, read in row-major order, are the tokens.

The package has three rooms, each re-exported here: ``filters`` (the Gaussian filter,
pixel and patch NLM as calls of attention), ``exact`` (:func:`nonlocal_means`, exact
NLM at scikit-image's slow-mode conventions, handed to the compiled engine
``attnlib.denoise._nlm``) and ``learned`` (:class:`PatchAttentionDenoiser`, its
training crops and :func:`psnr`).
"""

from . import exact, filters, learned
from .exact import *  # noqa: F403
from .filters import *  # noqa: F403
from .learned import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += filters.__all__
__all__ += exact.__all__
__all__ += learned.__all__
