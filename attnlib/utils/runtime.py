"""Where a computation runs: seeds, the device, the memory left.

A chapter's setup cell calls :func:`set_seed` and :func:`get_device` once;
:func:`attnlib.kernel_regression.nadaraya_watson` asks :func:`available_memory` before
it allocates a weight matrix.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .validation import check_int

__all__ = ["set_seed", "get_device", "available_memory"]


def set_seed(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's generators so a chapter is reproducible.

    Parameters
    ----------
    seed : int
        A seed in ``[0, 2**32 - 1]`` (NumPy's range).
    """
    seed = check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 (the global generator is what gets seeded)
    torch.manual_seed(seed)


def get_device(prefer: str | None = None) -> torch.device:
    """The device to compute on: ``prefer`` if given, else CUDA if present, else CPU.

    Parameters
    ----------
    prefer : str or torch.device, optional
        A device such as ``"cpu"`` or ``"cuda:0"``.

    Returns
    -------
    torch.device
        The device.
    """
    if prefer is not None:
        if not isinstance(prefer, (str, torch.device)):
            raise ValueError(
                f"prefer must be a device name such as 'cpu' or 'cuda', got {prefer!r}"
            )
        try:
            return torch.device(prefer)
        except RuntimeError as err:
            raise ValueError(
                f"prefer must be a device name such as 'cpu' or 'cuda', got {prefer!r}"
            ) from err
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def available_memory() -> int:
    """Bytes the system can still give (``MemAvailable``), else total physical memory.

    Returns
    -------
    int
        ``2**63`` where neither is known.
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**63
