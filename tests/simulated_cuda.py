"""A second device on every machine: CUDA simulated on the CPU, to catch device mixing.

Under :class:`SimulatedCuda`, a tensor created with ``device="cuda"`` or moved there
(``.to("cuda")``, ``.cuda()``, ``module.to("cuda")``) is a real CPU tensor whose storage
is tagged as living on ``cuda:0``: it computes (``.item()``, training loops, autograd),
reports ``.device == cuda:0`` and ``.is_cuda``, and every result computed from it is
tagged too (forward and backward, since the check sits below autograd, at the
dispatcher). What CUDA would refuse, it refuses with CUDA's own message:

- an operation mixing a tagged tensor with an untagged one that is not a 0-dim scalar
  (CPU 0-dim tensors may join CUDA operations; a CPU index may index a CUDA tensor);
- ``.numpy()`` of a tagged tensor (and so ``np.asarray``).

``.cpu()`` / ``.to("cpu")`` copy a tagged tensor back to an untagged one. The guard
runs in CPU-only CI (tests/test_devices.py), so a function that moves tensors behind
the caller's back, or builds a target on the CPU beside a prediction on the caller's
device, fails there as it would on a GPU.

Implementation: a ``TorchFunctionMode`` rewrites device arguments and answers
``.device``; a ``TorchDispatchMode`` propagates the tag and checks every ATen call
(backward included). The tag lives on the storage, so views and ``param.data = ...``
(how ``Module.to`` moves parameters) keep it.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["SimulatedCuda", "is_simulated_cuda", "SIMULATED"]

SIMULATED = torch.device("cuda", 0)
_CPU = torch.device("cpu")
_TAG = "_attnlib_simulated_cuda"
_MIXED = (
    "Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:0 and cpu! (simulated CUDA, in {op})"
)
# Operations that CUDA allows across devices: copies, and CPU indices into CUDA tensors.
# Inside a call with a CUDA argument, tensors that PyTorch's C++ creates from no tensor
# (one_hot's zeros, autograd's materialised gradients) are created with the CUDA
# argument's options there: they count as CUDA's here too.
_INSIDE_CUDA_CALL = [False]
_COPIES = {"copy_", "_to_copy", "copy", "_copy_from", "_copy_from_and_resize"}
_INDEXING = {"index", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index"}


def _storage(t):
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def is_simulated_cuda(t) -> bool:
    """Whether ``t`` is a tensor living on the simulated CUDA device."""
    if not isinstance(t, torch.Tensor):
        return False
    with torch._C.DisableTorchFunction():
        s = _storage(t)
    return bool(getattr(s, _TAG, False))


def _tag(t, on: bool = True):
    if isinstance(t, torch.Tensor):
        s = _storage(t)
        if s is not None:
            setattr(s, _TAG, on)
    return t


def _is_cuda(device) -> bool:
    if device is None or isinstance(device, torch.Tensor):
        return False
    if isinstance(device, int):
        return True  # an ordinal is a CUDA device in torch's factory functions
    return torch.device(device).type == "cuda"


class _Dispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunction():
            flat, _ = tree_flatten((args, kwargs))
            tensors = [t for t in flat if isinstance(t, torch.Tensor)]
            tagged = [is_simulated_cuda(t) for t in tensors]
            name = func.overloadpacket.__name__
            if any(tagged) and name not in _COPIES:
                skip = tensors[1:] if name in _INDEXING else []
                for t, on in zip(tensors, tagged):
                    if not on and t.dim() > 0 and not any(t is s for s in skip):
                        raise RuntimeError(_MIXED.format(op=name))
        out = func(*args, **kwargs)
        if not tensors and _INSIDE_CUDA_CALL[0]:
            _tag_all(out, True)
            return out
        if name in _COPIES:
            if name == "copy_":  # the destination keeps its device
                _tag(out, is_simulated_cuda(args[0]))
            elif name == "_to_copy":
                _tag_all(out, tagged[0] if tagged else False)
            return out
        if any(tagged):
            with torch._C.DisableTorchFunction():
                _tag_all(out, True)
        return out


def _tag_all(out, on):
    tree_map(lambda t: _tag(t, on), out)


def _to_target(args, kwargs):
    """Where ``Tensor.to(*args, **kwargs)`` sends a tensor: a device, or None."""
    other = args[0] if args and isinstance(args[0], torch.Tensor) else None
    other = kwargs.get("other", other)
    if other is not None:
        return SIMULATED if is_simulated_cuda(other) else _CPU
    device = kwargs.get("device")
    if device is None and args and isinstance(args[0], (str, torch.device, int)):
        device = args[0]
    return None if device is None else torch.device(device)


class _Function(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        this = args[0] if args else None
        if name == "__get__" and isinstance(this, torch.Tensor):
            attr = getattr(getattr(func, "__self__", None), "__name__", "")
            if attr == "device" and is_simulated_cuda(this):
                return SIMULATED
            if attr == "is_cuda" and is_simulated_cuda(this):
                return True
            return func(*args, **kwargs)
        if name in ("numpy", "__array__") and is_simulated_cuda(this):
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first. (simulated CUDA)"
            )
        if name == "get_device" and is_simulated_cuda(this):
            return 0
        if name == "cuda" and isinstance(this, torch.Tensor):
            return _tag(this.to(_CPU, copy=not is_simulated_cuda(this)), True)
        if name == "cpu" and is_simulated_cuda(this):
            return _tag(this.to(_CPU, copy=True), False)
        if name == "to" and isinstance(this, torch.Tensor):
            target = _to_target(args[1:], kwargs)
            if target is None or target.type not in ("cpu", "cuda"):
                return func(*args, **kwargs)  # e.g. the meta device: not simulated
            rest = [a for a in args[1:] if not isinstance(a, (str, torch.device, int))]
            rest = [a for a in rest if not isinstance(a, torch.Tensor)]
            kwargs.pop("device", None)
            other = kwargs.pop("other", None)
            if other is not None or (
                len(args) > 1 and isinstance(args[1], torch.Tensor)
            ):
                other = other if other is not None else args[1]
                kwargs.setdefault("dtype", other.dtype)
            moving = is_simulated_cuda(this) != (target.type == "cuda")
            if moving:
                kwargs["copy"] = True
            out = this.to(_CPU, *rest, **kwargs)
            if moving or out is not this:
                _tag(out, target.type == "cuda")
            return out
        device = kwargs.get("device")
        if _is_cuda(device):
            kwargs["device"] = _CPU
            out = func(*args, **kwargs)
            _tag_all(out, True)
            return out
        flat, _ = tree_flatten((args, kwargs))
        cuda_call = any(is_simulated_cuda(t) for t in flat)
        if device is not None:  # an explicit CPU (or meta) device: a real copy there
            out = func(*args, **kwargs)
            if is_simulated_cuda(out):
                out = _tag(out.clone(), False)
            return out
        saved, _INSIDE_CUDA_CALL[0] = _INSIDE_CUDA_CALL[0], cuda_call
        try:
            return func(*args, **kwargs)
        finally:
            _INSIDE_CUDA_CALL[0] = saved


class SimulatedCuda:
    """Context manager: CUDA simulated on the CPU (see the module's docstring).

    With ``available=True`` (the default) ``torch.cuda.is_available()`` answers True
    inside, as on a GPU runtime, so that code choosing CUDA when present
    (``attnlib.utils.get_device()``) chooses the simulated device.
    """

    def __init__(self, available: bool = True):
        self.available = available

    def __enter__(self):
        self._saved = torch.cuda.is_available
        if self.available:
            torch.cuda.is_available = lambda: True
        self._modes = [_Dispatch(), _Function()]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc):
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        torch.cuda.is_available = self._saved
        return False
