"""What ``device=None`` means to an experiment: the CPU, never a device picked for it.

Experiment functions take ``device=`` and build their data, models and metrics there
(PyTorch's convention: the caller chooses once, in a chapter's setup cell). Left out,
they stay on the CPU; choosing an accelerator is the caller's business
(:func:`~attnlib.utils.get_device`), not something a function does behind its back.
"""

from __future__ import annotations

import torch

__all__ = ["device_or_cpu"]


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
    if device is None:
        return torch.device("cpu")
    if isinstance(device, torch.device):
        return device
    message = f"device must be a device name such as 'cpu' or 'cuda', got {device!r}"
    if not isinstance(device, str):
        raise ValueError(message)
    try:
        return torch.device(device)
    except RuntimeError as err:
        raise ValueError(message) from err
