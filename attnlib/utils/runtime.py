"""Where a computation runs: seeds, the device, the memory left.

A chapter's setup cell calls :func:`set_seed` and :func:`get_device` once and passes
the device on; every randomised experiment of a chapter takes its seeds from
:func:`seeds`, which the environment variable ``ATTNLIB_SEED_OFFSET`` shifts
(:func:`seed_offset`), so that a reader re-runs the whole chapter on seeds of their
own; an experiment function that is given no device computes on the CPU
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

__all__ = [
    "set_seed",
    "seed_offset",
    "seeds",
    "get_device",
    "device_or_cpu",
    "available_memory",
]

# The variable that moves every seed of a chapter (and of a benchmark sweep).
SEED_OFFSET_VARIABLE = "ATTNLIB_SEED_OFFSET"
# Offsets stay small enough that a seed derived as ``seed * 1000 + j`` still fits
# NumPy's range ``[0, 2**32 - 1]``.
MAX_SEED_OFFSET = 10**6


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


def seed_offset() -> int:
    """The shift ``ATTNLIB_SEED_OFFSET`` gives every seed of a chapter (default 0).

    Returns
    -------
    int
        The variable's value, an int in ``[0, 10**6]``; 0 when it is unset or empty.

    Raises
    ------
    ValueError
        If the variable is set to anything but such an int.
    """
    raw = os.environ.get(SEED_OFFSET_VARIABLE, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED_OFFSET:
        raise ValueError(
            f"{SEED_OFFSET_VARIABLE} must be an int in [0, {MAX_SEED_OFFSET}],"
            f" got {raw!r}"
        )
    return value


def seeds(base) -> list[int]:
    """A chapter's seeds, each shifted by :func:`seed_offset`.

    ``seeds(5)`` is ``[0, 1, 2, 3, 4]`` when ``ATTNLIB_SEED_OFFSET`` is unset and
    ``[k, k + 1, ..., k + 4]`` when it is ``k``: a chapter that draws every random
    number from these seeds is re-run on seeds nobody has seen by setting the variable.

    Parameters
    ----------
    base : int or sequence of int
        How many seeds (``range(base)``), or the base seeds themselves (non-negative,
        distinct).

    Returns
    -------
    list of int
        ``[s + seed_offset() for s in base]``.
    """
    if isinstance(base, (int, np.integer)) and not isinstance(base, bool):
        base = range(check_int(base, "base", minimum=1))
    if isinstance(base, (str, bytes)) or not hasattr(base, "__iter__"):
        raise ValueError(f"base must be an int or a sequence of ints, got {base!r}")
    base = list(base)
    if not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0
        for s in base
    ):  # one check of the whole sequence, not one per seed
        raise ValueError(f"base must hold non-negative integer seeds, got {base!r}")
    base = [int(s) for s in base]
    if not base or len(set(base)) != len(base):
        raise ValueError(f"base must hold distinct seeds, got {base!r}")
    offset = seed_offset()
    return [s + offset for s in base]


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
