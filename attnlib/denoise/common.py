"""The shared plumbing of the denoisers: images as tensors, pixel grids, chunks."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..functional import attend
from ..utils import as_tensor, check_int

# Helpers of the package's modules: nothing here is public.
__all__: list[str] = []

# Bounds the memory of the chunked attention paths: queries per chunk times keys.
_MAX_SCORES = 2**22


# --------------------------------------------------------------------------- inputs


def _as_image(image, name: str = "image") -> tuple[torch.Tensor, bool]:
    """Return the image as a ``(C, H, W)`` tensor and whether it was a NumPy array."""
    from_numpy = not isinstance(image, torch.Tensor)
    t = as_tensor(image, name)
    if t.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be (H, W) or (H, W, C), got shape {tuple(t.shape)}"
        )
    return (t[None] if t.ndim == 2 else t.permute(2, 0, 1)), from_numpy


def _like_input(chw: torch.Tensor, grey: bool, from_numpy: bool):
    out = chw[0] if grey else chw.permute(1, 2, 0)
    return out.detach().cpu().numpy() if from_numpy else out


def _odd_patch_size(patch_size) -> int:
    # scikit-image rounds an even patch size up to the next odd one so the patch has a
    # centre.
    s = check_int(patch_size, "patch_size")
    return s + 1 - s % 2


def _pixel_grid(h: int, w: int, *, dtype, device) -> torch.Tensor:
    rows, cols = torch.meshgrid(
        torch.arange(h, dtype=dtype, device=device),
        torch.arange(w, dtype=dtype, device=device),
        indexing="ij",
    )
    return torch.stack([rows.reshape(-1), cols.reshape(-1)], dim=1)


def _chunked_attention(
    q, k, v, *, window=None, positions=None, **kwargs
) -> torch.Tensor:
    """Attention output for many queries, in query chunks so memory stays bounded.

    ``window`` (an int) restricts query ``i`` to keys within Chebyshev distance
    ``window`` of it in ``positions`` (the pixel grid); that square mask is the search
    window. ``q``, ``k``, ``v`` come from a checked image and are not checked again.
    """
    step = max(1, _MAX_SCORES // k.shape[0])
    outs = []
    for start in range(0, q.shape[0], step):
        mask = None
        if window is not None:
            mask = _window_mask(positions[start : start + step], positions, window)
        outs.append(attend(q[start : start + step], k, v, mask=mask, **kwargs).output)
    return torch.cat(outs)


def _window_mask(queries: torch.Tensor, keys: torch.Tensor, radius) -> torch.Tensor:
    """The square search window: True where a key's pixel is ``radius`` or nearer."""
    return (queries[:, None, :] - keys[None, :, :]).abs().amax(-1) <= radius


def image_is_grey(image) -> bool:
    return (
        np.ndim(image) == 2 if not isinstance(image, torch.Tensor) else image.ndim == 2
    )


def _reflect_pad(chw: torch.Tensor, r: int) -> torch.Tensor:
    if r == 0:
        return chw
    # Padding stays in PyTorch so that gradients reach the image through the border
    # pixels.
    if r < chw.shape[-2] and r < chw.shape[-1]:
        return F.pad(chw[None], (r, r, r, r), mode="reflect")[0]
    # Pads larger than the image: NumPy's repeated reflection, as indices into the
    # tensor.
    rows, cols = (
        torch.from_numpy(np.pad(np.arange(n), r, mode="reflect")).to(chw.device)
        for n in chw.shape[-2:]
    )
    return chw[:, rows][:, :, cols]
