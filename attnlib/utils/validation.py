"""Input validation at the public boundary: array-likes to checked tensors or arrays.

Every public function of attnlib checks its inputs once with the helpers below, so that
bad input fails early with a ``ValueError`` that names the argument and says what was
expected; private functions and engines then trust what they are handed. Booleans,
strings and complex values are refused rather than converted.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from ..errors import ScoreError

#: The largest seed a public function takes: torch's generators take [0, 2^64 - 1].
SEED_MAX = 2**64 - 1

__all__ = [
    "as_tensor",
    "as_float_array",
    "check_positive",
    "check_in_range",
    "check_real",
    "check_numeric",
    "check_int",
    "host_array",
    "check_on_device",
]


def as_tensor(
    x,
    name: str,
    *,
    min_ndim: int = 1,
    ndim: int | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    allow_inf: bool = False,
    allow_empty: bool = False,
    finite: bool = True,
) -> torch.Tensor:
    """Convert an array-like to a floating tensor and check it.

    Tensors and floating NumPy arrays keep their dtype (and tensors their device);
    lists, integer data and other array-likes become ``torch.get_default_dtype()``
    (float32 unless changed).

    Parameters
    ----------
    x : tensor or array-like, any shape
        The input.
    name : str
        The argument's name, for error messages.
    min_ndim : int
        The fewest dimensions accepted.
    ndim : int, optional
        The exact number of dimensions required.
    dtype : torch.dtype, optional
        Convert to this dtype.
    device : torch.device or str, optional
        Move to this device.
    allow_inf : bool
        Accept ``±inf`` entries (``-inf`` marks masked scores).
    allow_empty : bool
        Accept zero-size inputs (e.g. a batch of 0).
    finite : bool
        Check for NaN (and infinities); False where the caller checks its result
        instead, which NaN or infinite input would reach (one pass, not one per input).

    Returns
    -------
    torch.Tensor, shape of ``x``
        A floating tensor.

    Raises
    ------
    ValueError
        Naming ``name`` when the array is not numeric, is empty, has the wrong number of
        dimensions or holds NaN (or infinities, unless ``allow_inf``).
    """
    check_numeric(x, name)
    if isinstance(x, torch.Tensor):
        t = x
    elif isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
        # torch cannot view negative strides (a reversed view): copy those.
        t = torch.from_numpy(x if min(x.strides, default=0) >= 0 else x.copy())
    else:
        try:
            # Straight to the requested dtype: a detour through float32 would cost
            # float64 callers precision.
            t = torch.as_tensor(
                np.asarray(x, dtype=np.float64),
                # an integer dtype is cast to once checked, below
                dtype=torch.float64
                if _integral(dtype)
                else dtype or torch.get_default_dtype(),
            )
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"{name} must be array-like of numbers, got {type(x).__name__}"
            ) from err
    if _integral(dtype):
        _check_integral(t, name, dtype)
    if dtype is not None or not t.is_floating_point():
        t = t.to(dtype or torch.get_default_dtype())
    if device is not None:
        t = t.to(device)
    if ndim is not None and t.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}"
        )
    if t.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions, got shape "
            f"{tuple(t.shape)}"
        )
    if t.numel() == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    if finite:
        bad = torch.isnan(t) if allow_inf else ~torch.isfinite(t)
        check_on_device(
            bad.any(),
            f"{name} contains {'NaN' if allow_inf else 'NaN or infinite'} values",
        )
    return t


def _integral(dtype) -> bool:
    """Whether ``dtype`` is an integer (or bool) torch dtype."""
    return dtype is not None and not (dtype.is_floating_point or dtype.is_complex)


def _check_integral(t: torch.Tensor, name: str, dtype: torch.dtype) -> None:
    """A ValueError naming ``name`` unless every value of ``t`` is an integer that
    ``dtype`` holds: a cast would truncate 1.5 to 1 or wrap 300 to 44 silently."""
    if dtype == torch.bool:
        raise ValueError(f"{name}: as_tensor does not convert to bool")
    if t.is_floating_point():
        bad = ~torch.isfinite(t) | (t != torch.trunc(t))
        check_on_device(
            bad.any(), f"{name} must hold integers to be converted to {dtype}"
        )
    info = torch.iinfo(dtype)
    check_on_device(
        ((t < info.min) | (t > info.max)).any(),
        f"{name} must hold integers in [{info.min}, {info.max}] for {dtype}",
    )


def check_on_device(bad: torch.Tensor, message: str) -> None:
    """Raise ``ValueError(message)`` if the 0-dim boolean tensor ``bad`` is True.

    On the CPU it is read at once. On an accelerator it is asserted on the device
    (``torch._assert_async``), so that a valid input costs no host-device
    synchronisation; a bad one fails at the next synchronisation with ``message``
    (CUDA reports it as a device-side assertion, after which the process must restart,
    as after any CUDA assertion). Under ``torch.compile``, ``torch.export`` and
    ``vmap`` (see ``traced``) nothing is checked.

    Parameters
    ----------
    bad : tensor of bool, shape ()
        True when the input is invalid.
    message : str
        The error's text, naming the argument.
    """
    if traced(bad):
        return
    if bad.device.type == "cpu":
        if bad:
            raise ValueError(message)
    else:
        torch._assert_async(~bad, message)


def finite_on_host(t: torch.Tensor) -> bool:
    """Whether every value of the CPU tensor ``t`` is finite, read at once.

    One reduction (a sum is NaN or infinite when a value is: a tenth of the cost of
    ``isfinite(t).all()`` on small tensors); the exact test only where the sum is not.

    Parameters
    ----------
    t : floating tensor, any shape, on the CPU
        The values.

    Returns
    -------
    bool
        True when no value is NaN or infinite.
    """
    # .item() and math.isfinite: a 0-dim tensor's isfinite() costs ten times the sum
    total = t.sum() if t.dtype in _WIDE else t.sum(dtype=torch.float32)
    return math.isfinite(total.item()) or bool(torch.isfinite(t).all())


_WIDE = (torch.float32, torch.float64)  # summed in their own dtype


def traced(t: torch.Tensor) -> bool:
    """Whether ``t`` has no values to read now: under ``torch.compile`` or
    ``torch.export`` (a graph is being traced) or inside ``torch.func.vmap``.

    There the checks that read values are skipped (they would break the graph or read
    a batch of values as one).

    Parameters
    ----------
    t : tensor, any shape
        A tensor of the computation.

    Returns
    -------
    bool
        True when reading its values is not possible.
    """
    if torch.compiler.is_compiling():
        return True
    functorch = torch._C._functorch
    while functorch.is_functorch_wrapped_tensor(t):  # vmap, maybe inside grad
        if functorch.is_batchedtensor(t):
            return True
        t = functorch.get_unwrapped(t)
    return False


def as_float_array(
    X, name: str = "X", *, ndim: int = 2, min_samples: int = 1
) -> np.ndarray:
    """Check a NumPy-style input and return it as float64.

    The input is ``(n_samples, n_features)`` by default.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features) by default
        The input.
    name : str
        The argument's name, for error messages.
    ndim : int
        The number of dimensions required.
    min_samples : int
        The fewest rows accepted.

    Returns
    -------
    ndarray, shape of ``X``, float64
        The checked array.

    Raises
    ------
    ValueError
        Naming ``name`` for the wrong number of dimensions, too few samples, or
        non-finite values.
    """
    check_numeric(X, name)
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be array-like of numbers") from err
    if A.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {A.shape}")
    if A.size == 0 or A.shape[0] < min_samples:
        raise ValueError(
            f"{name} must have at least {min_samples} samples, got shape {A.shape}"
        )
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return A


def check_numeric(x, name: str) -> None:
    """Refuse booleans, strings and complex values, naming ``name``.

    Booleans and strings are not numbers (NumPy would parse ``"0.5"`` into one
    silently), and a complex array cast to real would lose its imaginary part;
    everything else passes (the other checks come after).

    Parameters
    ----------
    x : object
        A tensor, an array, a sequence or a scalar.
    name : str
        The argument's name, for the error message.
    """
    if isinstance(x, torch.Tensor):
        kind = "b" if x.dtype == torch.bool else "c" if x.is_complex() else ""
    else:
        dtype = getattr(x, "dtype", None)
        if dtype is None and isinstance(x, (list, tuple, bool, complex, str, bytes)):
            try:
                dtype = np.asarray(x).dtype
            except (TypeError, ValueError):
                return
        kind = getattr(np.dtype(dtype), "kind", "") if dtype is not None else ""
    if kind == "b":
        raise ValueError(f"{name} must hold numbers, got booleans")
    if kind in ("U", "S"):
        raise ValueError(f"{name} must hold numbers, got strings")
    if kind == "c":
        raise ValueError(f"{name} must be real (Complex data not supported)")


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float if it is finite and positive, else raise ValueError.

    Parameters
    ----------
    value : float
        The number to check.
    name : str
        The argument's name, for the error message.
    allow_zero : bool
        Accept zero as well.

    Returns
    -------
    float
        ``value``.
    """
    ok = (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and np.isfinite(value)
        and (value >= 0 if allow_zero else value > 0)
    )
    if not ok:
        what = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a finite {what} number, got {value!r}")
    return float(value)


def check_in_range(value, name: str, low: float, high: float) -> float:
    """Return ``value`` as a float if ``low <= value <= high``, else raise ValueError.

    Parameters
    ----------
    value : float
        The number to check.
    name : str
        The argument's name, for the error message.
    low, high : float
        The closed interval accepted.

    Returns
    -------
    float
        ``value``.
    """
    if not (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and low <= value <= high
    ):
        raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def check_real(value, name: str) -> float:
    """Return ``value`` as a float if it is a finite real number, else raise ValueError.

    Parameters
    ----------
    value : float
        The number to check (not a boolean).
    name : str
        The argument's name, for the error message.

    Returns
    -------
    float
        ``value``.
    """
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, (bool, np.bool_))
        or not np.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def check_int(value, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer in ``[minimum, maximum]``, else ValueError.

    Parameters
    ----------
    value : int
        The number to check (``bool`` is refused).
    name : str
        The argument's name, for the error message.
    minimum : int
        The smallest value accepted.
    maximum : int, optional
        The largest value accepted.

    Returns
    -------
    int
        ``value``.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        upper = "" if maximum is None else f" and at most {maximum}"
        raise ValueError(
            f"{name} must be an integer at least {minimum}{upper}, got {value!r}"
        )
    return int(value)


def host_array(X, name: str = "X"):
    """A torch tensor (any dtype or device) as a NumPy array; anything else unchanged.

    scikit-learn's validation converts array-likes itself but not every tensor
    (bfloat16, CUDA); the estimators call this first. Booleans and complex values are
    refused here (scikit-learn would take ``True`` as 1 and drop an imaginary part).

    Parameters
    ----------
    X : tensor or array-like, any shape
        The input.
    name : str
        The argument's name, for error messages.

    Returns
    -------
    ndarray or the input
        ``X`` on the host, floating tensors as float64.
    """
    check_numeric(X, name)
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu()
        return (X.double() if X.is_floating_point() else X).numpy()
    return X


def check_type(value, name: str, kind: type, what: str) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is a ``kind`` (``what``)."""
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}")


def module_input(x, name: str, like: torch.Tensor, **kwargs) -> torch.Tensor:
    """``x`` checked by :func:`as_tensor` in the dtype and on the device of ``like``.

    ``like`` is a parameter of the module that reads ``x``. A floating tensor of another
    dtype is refused (as ``nn.Linear`` does, but naming the argument) rather than cast:
    casting float64 down would lose precision silently. Array-likes and integer tensors
    are converted.
    """
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != like.dtype:
        raise ValueError(
            f"{name} must have the module's dtype {like.dtype} (call .to() on one of "
            f"them), got {x.dtype}"
        )
    return as_tensor(x, name, dtype=like.dtype, device=like.device, **kwargs)


class names_input:
    """Re-raise an overflow that :func:`attnlib.functional.attention` reports about its
    internal queries and keys as an error about the caller's input ``name``."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if kind is not None and issubclass(kind, ScoreError):
            raise ValueError(
                f"{self.name} is too large: its scores overflow ({err}); rescale it"
            ) from err
        return False
