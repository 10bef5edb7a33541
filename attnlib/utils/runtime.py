"""Where a computation runs: seeds, the device, the memory left.

A chapter's setup cell calls :func:`set_seed` and :func:`get_device` once and passes
the device on; an experiment function that is given none computes on the CPU
(:func:`device_or_cpu`), never on a device picked behind the caller's back;
:func:`attnlib.kernel_regression.nadaraya_watson` asks :func:`available_memory` before
it allocates a weight matrix.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .validation import check_int

__all__ = ["set_seed", "get_device", "device_or_cpu", "available_memory"]


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
        return _as_device(prefer, "prefer")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_or_cpu(device: torch.device | str | None = None) -> torch.device:
    """The device a caller asked for, as a ``torch.device``; the CPU when it asked none.

    Parameters
    ----------
    device : str or torch.device, optional
        A device such as ``"cpu"``, ``"cuda"`` or ``"cuda:1"``; ``None`` means the CPU.

    Returns
    -------
    torch.device
        ``torch.device(device)``, or ``torch.device("cpu")`` for ``None``.
    """
    return torch.device("cpu") if device is None else _as_device(device, "device")


def _as_device(value, name: str) -> torch.device:
    """``value`` (a device name or a ``torch.device``) as a ``torch.device``; anything
    else, or a name torch does not know, is a ValueError naming ``name``."""
    if isinstance(value, torch.device):
        return value
    message = f"{name} must be a device name such as 'cpu' or 'cuda', got {value!r}"
    if not isinstance(value, str):
        raise ValueError(message)
    try:
        return torch.device(value)
    except RuntimeError as err:
        raise ValueError(message) from err


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
