"""What chapter 07b's experiment modules share: token ids and random mini-batches."""

from __future__ import annotations

import torch

from ...utils import check_int
from ...utils.validation import SEED_MAX

# Helpers of the package's modules: nothing here is public.
__all__: list[str] = []


def _token_ids(x, name: str, length: str, vocab: int, device) -> torch.Tensor:
    """``x`` as a ``(batch, length)`` integer tensor of ids in ``[0, vocab)``."""
    try:
        ids = torch.as_tensor(x, device=device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"{name} must be integer token ids, got {type(x).__name__}"
        ) from err
    if ids.is_floating_point() or ids.dtype == torch.bool or ids.ndim != 2:
        raise ValueError(
            f"{name} must be a (batch, {length}) integer tensor, got {ids.dtype} of "
            f"shape {tuple(ids.shape)}"
        )
    if ids.numel() and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"{name} must lie in [0, vocab = {vocab}), got values outside")
    return ids


def _row_batches(rows, n: int, batch, seed):
    """``train``'s ``batches``: ``rows`` of ``batch`` indices below ``n`` (``seed``)."""
    batch = check_int(batch, "batch")
    g = torch.Generator().manual_seed(
        check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )
    return lambda step: rows(torch.randint(n, (batch,), generator=g))
