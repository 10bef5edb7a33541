"""The compiled row loops behind sparsemax and entmax on the CPU, ready in milliseconds.

The loops (``_entmax_loops.c`` beside this file) are compiled once per machine with the
system's C compiler (``$CC``, else ``cc``) and cached as a shared library; every later
process loads that library with ctypes, and its first sparsemax call takes about 4 ms.
The same loops from numba, which compiles the library's other loops, cost a new process
numba's own start-up on that first call even with every loop in its cache (0.25 s of
CPU on a quiet machine, 1 s on a loaded one): longer than the call itself on any input
a chapter passes. Where no C compiler is present or the build fails, :func:`available`
is False and the maps run on the torch engine (``attnlib.normalizers._entmax``) instead.

The library is cached in ``$ATTNLIB_CACHE_DIR`` if that is set, else in ``__pycache__``
beside this file, else in the user's cache directory (``~/.cache/attnlib``), under a
name that hashes the source, the compiler flags and the platform, so that an edited
source or another instruction set builds anew. The instruction set is the level that
PyTorch detects (AVX2 or AVX-512 on x86-64), not the exact CPU, so that a cache shared
between machines of one level stays valid.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

__all__ = ["forward", "backward", "available"]

_SOURCE = Path(__file__).with_name("_entmax_loops.c")
# IEEE semantics except what the loops' reductions need to vectorise: no
# -ffinite-math-only (-inf marks a masked key): the fastmath flags of the
# library's numba loops.
_FLAGS = [
    "-O3",
    "-fPIC",
    "-shared",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fno-signed-zeros",
    "-fassociative-math",
    "-freciprocal-math",
    "-ffp-contract=fast",
]
_ISA = {"AVX512": "-march=x86-64-v4", "AVX2": "-march=x86-64-v3"}

#: How many times this process ran the C compiler (a test reads it).
builds = 0


def _isa_flags() -> list[str]:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return []
    get = getattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    flag = _ISA.get(get())
    return [flag] if flag else []


def _cache_dirs() -> list[Path]:
    if os.environ.get("ATTNLIB_CACHE_DIR"):
        return [Path(os.environ["ATTNLIB_CACHE_DIR"])]
    user = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return [Path(__file__).parent / "__pycache__", Path(user) / "attnlib"]


def _build(flags: list[str], target: Path) -> bool:
    """Compile the source into ``target`` (atomically: parallel processes may race)."""
    global builds
    cc = shlex.split(os.environ.get("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so.tmp")
        os.close(fd)
    except OSError:
        return False
    builds += 1
    cmd = [*cc, *flags, "-o", tmp, str(_SOURCE), "-lm"]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=300).returncode == 0
        if done:
            os.replace(tmp, target)
        return done
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class _CLoops:
    """The loops of the shared library at ``path``, called on tensors' memory."""

    def __init__(self, path: Path):
        lib = ctypes.CDLL(str(path))  # ctypes releases the GIL during the calls
        ptr, i64, q = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        self.path = path
        self.loops = {}
        for dtype, suffix in ((torch.float32, "f32"), (torch.float64, "f64")):
            fwd = getattr(lib, f"entmax_forward_{suffix}")
            bwd = getattr(lib, f"entmax_backward_{suffix}")
            fwd.argtypes = [q, ptr, ptr, ptr, ptr, ptr, i64, i64]
            bwd.argtypes = [q, ptr, ptr, ptr, ptr, i64, i64]
            fwd.restype = bwd.restype = None
            self.loops[dtype] = fwd, bwd

    def forward(self, x, top, am1, p, family):
        # The weights of the last pass are kept only where they need pow() (family 0).
        buf = torch.empty(x.shape[1] if family == 0 else 0, dtype=x.dtype)
        args = (x, top, am1, p, buf)
        self.loops[x.dtype][0](family, *(t.data_ptr() for t in args), *x.shape)

    def backward(self, p, g, am1, out, family):
        args = (p, g, am1, out)
        self.loops[p.dtype][1](family, *(t.data_ptr() for t in args), *p.shape)


@functools.cache
def _loops() -> _CLoops | None:
    """The C loops from the cache, built there first if absent (once per process);
    None if that fails."""
    flags = [*_FLAGS, *_isa_flags()]
    key = hashlib.sha256(
        _SOURCE.read_bytes()
        + " ".join([*flags, sys.platform, platform.machine()]).encode()
    ).hexdigest()[:16]
    paths = [d / f"entmax_loops-{key}.so" for d in _cache_dirs()]
    for path in paths:
        if path.exists():
            try:
                return _CLoops(path)
            except (OSError, AttributeError):
                pass  # unreadable or foreign: built anew below
    for path in paths:
        if _build(flags, path):
            try:
                return _CLoops(path)
            except (OSError, AttributeError):
                pass
    return None


def available() -> bool:
    """Whether this process has the C loops (loaded from the cache or built).

    Returns
    -------
    bool
        False where no C compiler built them: the maps then run on the torch engine.
    """
    return _loops() is not None


def _check(rows, vectors) -> None:
    """Raw pointers go to the loops: shapes, dtypes and layout are checked first."""
    shape, dtype = rows[0].shape, rows[0].dtype
    if dtype not in (torch.float32, torch.float64) or len(shape) != 2:
        raise ValueError("the compiled loops take 2-D float32 or float64 rows")
    for t in rows + vectors:
        if t.device.type != "cpu" or not t.is_contiguous():
            raise ValueError("the compiled loops take contiguous CPU tensors")
    if any(t.shape != shape or t.dtype != dtype for t in rows) or any(
        t.shape != shape[:1] for t in vectors
    ):
        raise ValueError("the rows and per-row vectors of the loops do not match")
    if vectors[-1].dtype != torch.float64:
        raise ValueError("am1 must be float64")


def forward(x, top, am1, p, family: int) -> None:
    """α-entmax of the rows of ``x`` into ``p`` (where :func:`available`).

    Parameters
    ----------
    x, p : tensor, shape (n_rows, n), float32 or float64, contiguous, on the CPU
        The scores (finite or ``-inf``; the caller rejects rows with NaN or +inf) and
        the output.
    top : tensor, shape (n_rows,), dtype of ``x``
        The row maxima (finite).
    am1 : tensor, shape (n_rows,), float64
        α - 1 of each row, in (0, 1].
    family : int
        q = 1/(α-1) where it is 1, 2 or 4 for every row (loops without ``pow``), else 0.

    Implements
    ----------
    Newton's method from below on the threshold of Eq. (7) of the sparse-continuous
    attention paper (Martins et al., 2020), Michelot's algorithm at α = 2; see
    :mod:`attnlib.normalizers`.
    """
    _check([x, p], [top, am1])
    if top.dtype != x.dtype:
        raise ValueError("top must have the dtype of x")
    _loops().forward(x, top, am1, p, family)


def backward(p, g, am1, out, family: int) -> None:
    """The vector-Jacobian product of α-entmax at its output ``p``, gradient ``g``
    (where :func:`available`).

    Parameters
    ----------
    p, g, out : tensor, shape (n_rows, n), float32 or float64, contiguous, on the CPU
        The entmax output, the gradient with respect to it, and the result: the gradient
        with respect to the scores.
    am1 : tensor, shape (n_rows,), float64
        α - 1 of each row.
    family : int
        As for :func:`forward`.

    Implements
    ----------
    ``(Diag(s) - s sᵀ / 1ᵀs) g`` with ``s = p^(2-α)``, the finite form of Eq. (14) of
    the sparse-continuous attention paper (Martins et al., 2020).
    """
    _check([p, g, out], [am1])
    _loops().backward(p, g, am1, out, family)
