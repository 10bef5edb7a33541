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

Until a committed run on real hardware has verified a kernel (:data:`VERIFIED`, empty
so far), it runs on CUDA only when asked: with the environment variable
``ATTNLIB_TRITON=1``; by default CUDA tensors go to the torch engine.
``ATTNLIB_TRITON=0`` turns every kernel off, verified ones included. And on its first
use per kernel family, specialisation, dtype and device a kernel is checked against the
torch engine on a small probe (masked rows, ties, a large offset, a row that is
entirely ``-inf``, rows longer than one block): where they disagree it warns once and
the torch engine computes instead (:func:`probed`).

Triton is optional: without it ``HAVE_TRITON`` is False and nothing launches. No name
here is on the face of :mod:`attnlib.utils`.
"""

from __future__ import annotations

import contextlib
import os
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


#: The environment variable that asks for the kernels ("1") or turns them off ("0").
ENV = "ATTNLIB_TRITON"
#: The kernel families a committed run on real hardware has verified ("rows": the row
#: maps of normalizers._triton_entmax; "flash": functional._triton_flash). None yet.
VERIFIED: frozenset[str] = frozenset()
#: The first-use checks done, (family, specialisation, dtype, device) -> passed.
_probed: dict[tuple, bool] = {}


def enabled(family: str) -> bool:
    """Whether the kernels of ``family`` may run: verified on hardware, or asked for
    with ``ATTNLIB_TRITON=1`` (read at each call; ``0`` turns them all off)."""
    flag = os.environ.get(ENV, "").strip()
    return flag != "0" and (flag == "1" or family in VERIFIED)


def probed(key: tuple, probe) -> bool:
    """Whether the kernel of ``key`` = (family, specialisation, dtype, device) passed
    its first-use check against the torch engine.

    ``probe()`` runs once per key: it returns None where the kernel agrees with the
    torch engine, False where Triton refused to build it (the launch has warned), or
    a message saying where they disagree; then this warns once and answers False
    ever after for that key, so that the caller computes with the torch engine.
    """
    if key not in _probed:
        _probed[key] = True  # the probe's own calls launch the kernel unchecked
        try:
            verdict = probe()
        finally:
            _probed.pop(key)
        _probed[key] = verdict is None
        if isinstance(verdict, str):
            family, kind, dtype, device = key
            warnings.warn(
                f"attnlib's Triton kernel {family} (specialisation {kind}, {dtype}, "
                f"{device}) disagrees with the torch engine on its first-use check "
                f"({verdict}); the torch engine computes instead",
                RuntimeWarning,
                stacklevel=3,
            )
    return _probed[key]


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


#: The flash probe's tolerance (relative to the largest entry), by dtype: float32
#: dots may run in TF32 where torch allows it.
FLASH_TOL = {torch.float32: 2e-3, torch.float16: 1e-2, torch.bfloat16: 6e-2}


def probe_flash(flash, kind: int, dtype, device, normalize, n: int = 70):
    """The flash attention ``flash`` (``functional._triton_flash``'s function) of
    specialisation ``kind`` on ``dtype`` and ``device`` against the dense torch engine
    (``normalize``, α-entmax of float64 scores on the CPU), forward and backward: None
    where they agree, False where Triton refused a kernel, else where they disagree.

    The probe: two heads of ``n`` queries and keys (more than one block of each), two
    tied keys, a random mask with a query that attends no key, then a causal call.
    """
    alpha = {1: 2.0, 2: 1.5}.get(kind, 1.3)
    gen = torch.Generator().manual_seed(52)
    q, k, v, do = (torch.randn(1, 2, n, 8, generator=gen, dtype=torch.float64)
                   for _ in range(4))  # fmt: skip
    k[..., 1, :] = k[..., 0, :]  # tied scores
    keep = torch.rand(1, 1, n, n, generator=gen) < 0.8
    keep[..., 3, :] = False  # a query with no key
    for mask, causal in ((keep, False), (None, True)):
        ins = [t.to(dtype) for t in (q, k, v)]
        dev = [t.to(device).requires_grad_(True) for t in ins]
        try:
            with torch.enable_grad():
                out = flash(*dev, alpha=alpha, causal=causal,
                            mask=None if mask is None else mask.to(device))  # fmt: skip
                if out is None:
                    return False
                got = [out, *torch.autograd.grad(out, dev, do.to(dtype).to(device))]
        except RuntimeError as err:  # a refused backward says so
            if "cannot build" in str(err):
                return False
            raise
        ref64 = [t.double().requires_grad_(True) for t in ins]
        with torch.enable_grad():
            s = ref64[0] @ ref64[1].transpose(-1, -2) / 8**0.5
            allowed = torch.ones(n, n, dtype=torch.bool) if mask is None else mask
            if causal:
                allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
            p = normalize(s.masked_fill(~allowed, float("-inf")), alpha)
            ref_out = p @ ref64[2]
            ref = [ref_out, *torch.autograd.grad(ref_out, ref64, do)]
        for name, a, b in zip(("output", "dq", "dk", "dv"), got, ref):
            err = (a.detach().double().cpu() - b).abs().max() / b.abs().max()
            if not err <= FLASH_TOL[dtype]:  # NaN fails too
                what = "causal" if causal else "masked"
                return f"{name} of a {what} call off by {float(err):.2g} of its largest"
    return None


def flash_checked(flash, kind: int, q: torch.Tensor, normalize, n: int) -> bool:
    """Whether the flash kernels of ``kind`` passed, on ``q``'s dtype and device, their
    first-use check (:func:`probe_flash` with ``n`` queries and keys, run here once)."""
    key = ("flash_entmax_attention", kind, q.dtype, str(q.device))
    return probed(
        key, lambda: probe_flash(flash, kind, q.dtype, q.device, normalize, n)
    )
