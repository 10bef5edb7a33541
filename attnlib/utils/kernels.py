"""What the Triton engines share: whether their kernels can run, and their launch.

The engines (``attnlib.normalizers._triton_entmax``, the rows of sparsemax and
α-entmax; ``attnlib.functional._triton_flash``, sparse attention without its weights)
launch through :func:`launch`, on the GPU of their tensors. Where Triton refuses a
kernel (it does not build with the installed Triton, or does not fit the GPU), the
launch warns once and answers False, and the caller computes with the torch engine (the
row maps) or the dense path (attention); that kernel, in that configuration on that GPU,
is not tried again. The kernels were written and tested in Triton's interpreter; a
refused forward still gets its answer, and a refused flash backward raises, naming the
way around it.

Triton is optional: without it ``HAVE_TRITON`` is False and nothing launches. No name
here is on the face of :mod:`attnlib.utils`.
"""

from __future__ import annotations

import contextlib
import warnings

import torch

try:  # triton is an optional extra
    import triton
    import triton.language as tl

    HAVE_TRITON = True
except ImportError:  # pragma: no cover - exercised where triton is absent
    HAVE_TRITON = False

__all__: list[str] = []

#: The dtypes the kernels take (they accumulate in float32).
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
#: What Triton raises for a kernel it cannot build or fit on the GPU (ptxas's failure
#: has its own error in recent releases).
REFUSALS = ()
if HAVE_TRITON:
    _ptxas = getattr(triton.runtime.errors, "PTXASError", None)
    REFUSALS = (triton.CompilationError, triton.OutOfResources, *filter(None, [_ptxas]))
#: The refused configurations, (kernel, GPU, launch options) -> Triton's message.
_refused: dict[tuple, str] = {}


def runnable() -> bool:
    """Whether the kernels can run: Triton and a real CUDA device (``device_count``, not
    ``is_available``, which answers True on the tests' simulated CUDA)."""
    return HAVE_TRITON and torch.cuda.device_count() > 0


def launch(kernel, grid, *args, **kwargs) -> bool:
    """``kernel[grid](*args, **kwargs)`` on the GPU of its first tensor argument; False
    where Triton refuses this kernel in this configuration on this GPU (warned once)."""
    device = next(a.device for a in args if isinstance(a, torch.Tensor))
    key = (kernel.__name__, device.index, tuple(sorted(kwargs.items())))
    if key in _refused:
        return False
    on_gpu = device.type == "cuda" and torch.cuda.device_count() > 0
    try:
        # Triton launches on the current GPU: make it the tensors' one
        with torch.cuda.device(device) if on_gpu else contextlib.nullcontext():
            kernel[grid](*args, **kwargs)
    except REFUSALS as err:
        # the message only: the exception's traceback would hold the call's tensors
        _refused[key] = f"{type(err).__name__}: {str(err)[:300]}"
        warnings.warn(
            f"Triton cannot build or fit attnlib's kernel {kernel.__name__} here "
            f"({_refused[key]}); the torch engine computes instead",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    return True


if HAVE_TRITON:

    @triton.jit
    def pow_pos(base, expo):
        """``base ** expo`` where ``base > 0``, else 0 (in float32)."""
        safe = tl.where(base > 0, base, 1.0)
        return tl.where(base > 0, tl.exp2(expo * tl.log2(safe)), 0.0)
