"""Nadaraya–Watson kernel regression as attention: the kernels and the estimate.

The idea and the two ways of normalising (a softmax of ``log κ`` for the exponential
kernels, a row normaliser for the compact ones and callables) are described in
:mod:`attnlib.kernel_regression`, which re-exports every public name of this module.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

from ..errors import EmptySupportError, ScoreError
from ..functional import SCORES, attend
from ..utils import as_tensor, available_memory, check_positive
from ._kernelsums import key_lanes, lane_sums

__all__ = [
    "KERNELS",
    "loo_predictions",
    "nadaraya_watson",
]

Kernel = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# Kernels that are exponentials of an attention score: their weights are a softmax of
# the score (robust as the bandwidth shrinks).
_SOFTMAX_KERNELS = {"gaussian": "neg_sq_dist", "laplace": "neg_l1"}


def _epanechnikov(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return (1 + 2 * SCORES["neg_sq_dist"](q, k)).clamp_min(0)


def _biweight(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return _epanechnikov(q, k) ** 2


def _triweight(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return _epanechnikov(q, k) ** 3


def _boxcar(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return (SCORES["neg_sq_dist"](q, k) >= -0.5).to(q.dtype)


_VALUE_KERNELS = {
    "epanechnikov": _epanechnikov,
    "biweight": _biweight,
    "triweight": _triweight,
    "boxcar": _boxcar,
}
#: The built-in kernels' names (:func:`nadaraya_watson`'s ``kernel`` gives each one's
#: formula): those computed as a score and those computed as values.
KERNELS = (*_SOFTMAX_KERNELS, *_VALUE_KERNELS)


def _normalise_rows(kernel_values: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Eq. (5): each row of kernel values over its sum; masked keys (-inf) weigh 0."""
    values = kernel_values.masked_fill(torch.isneginf(kernel_values), 0.0)
    if (values < 0).any() or not torch.isfinite(values).all():
        raise ValueError("kernel must return finite non-negative values")
    total = values.sum(-1, keepdim=True)
    empty = (total == 0).flatten()
    if empty.any():
        raise EmptySupportError(
            f"x_query row {offset + int(empty.nonzero()[0])} has no training point "
            "inside the kernel's support (all its kernel values are zero); increase "
            "bandwidth or use the gaussian kernel"
        )
    return values / total


def _check_kernel(kernel) -> Kernel:
    if not callable(kernel) and kernel not in KERNELS:
        raise ValueError(
            f"kernel must be a callable or one of {list(KERNELS)}, got {kernel!r}"
        )
    return kernel


def _check_data(x_query, x_train, y_train):
    """Tensors ``(n_q, d)``, ``(n, d)``, ``(n, d_v)`` and whether y was 1-D.

    They have the inputs' common dtype (torch's promotion: float64 anywhere gives
    float64) and x_query's device.
    """
    xq = as_tensor(x_query, "x_query")
    xt = as_tensor(x_train, "x_train", device=xq.device)
    y = as_tensor(y_train, "y_train", device=xq.device)
    dtype = torch.promote_types(torch.promote_types(xq.dtype, xt.dtype), y.dtype)
    xq, xt, y = (t.to(dtype) for t in (xq, xt, y))
    xq, xt = (t[:, None] if t.ndim == 1 else t for t in (xq, xt))
    for t, name in ((xq, "x_query"), (xt, "x_train"), (y, "y_train")):
        if t.ndim > 2:
            raise ValueError(
                f"{name} must have 1 or 2 dimensions, got shape {tuple(t.shape)}"
            )
    if xq.shape[1] != xt.shape[1]:
        raise ValueError(
            "x_query and x_train must have the same number of features, got "
            f"{xq.shape[1]} and {xt.shape[1]}"
        )
    if y.shape[0] != xt.shape[0]:
        raise ValueError(
            f"y_train must have one row per x_train row ({xt.shape[0]}), got shape "
            f"{tuple(y.shape)}"
        )
    squeeze = y.ndim == 1
    return xq, xt, (y[:, None] if squeeze else y), squeeze


def _kernel_attention(
    xq, xt, y, kernel: Kernel, bandwidth: float, mask=None, offset: int = 0
):
    """Nadaraya–Watson as one :func:`~attnlib.functional.attention` call on 2-D tensors.

    The tensors are already checked.

    For the softmax kernels each row's scores are shifted so that its largest unmasked
    score is zero before they are divided by the temperature: as the bandwidth goes to
    zero the nearest key keeps weight one (the nearest-neighbour limit) instead of every
    weight underflowing (0/0). The Gaussian's squared distances are expanded into
    products, so the points are first centred on the keys' mean (distances do not
    change; rounding does). ``offset`` is the index of ``xq``'s first row in the
    caller's queries, for error messages.
    """
    if kernel in _SOFTMAX_KERNELS:
        if kernel == "gaussian":
            centre = xt.mean(0).detach()
            xq, xt = xq - centre, xt - centre
        base = SCORES[_SOFTMAX_KERNELS[kernel]]
        # inf, not 1/0
        inverse = 1 / bandwidth / bandwidth if kernel == "gaussian" else 1 / bandwidth
        scale = min(inverse, torch.finfo(xq.dtype).max)

        def shifted(a, b):
            s = base(a, b)
            top = s if mask is None else s.masked_fill(~mask, float("-inf"))
            return (s - top.amax(-1, keepdim=True).detach()) * scale

        try:  # the scale is in the score; a callable's default temperature is 1
            return attend(xq, xt, y, score=shifted, mask=mask)
        except ScoreError as err:
            raise _overflow_error(xq.dtype) from err
    score = _VALUE_KERNELS.get(kernel, kernel)

    def checked(a, b):
        values = score(a, b)
        if not (torch.isfinite(values).all() and (values >= 0).all()):
            raise ValueError("kernel must return finite non-negative values")
        return values

    normalise = lambda values: _normalise_rows(values, offset)  # noqa: E731
    return attend(
        xq / bandwidth,
        xt / bandwidth,
        y,
        score=checked,
        normalizer=normalise,
        mask=mask,
    )


def _overflow_error(dtype) -> ValueError:
    """The error for inputs whose kernel scores overflow ``dtype``.

    E.g. values near 1e30 in float32.
    """
    return ValueError(
        f"x_query and x_train are too large for {dtype}: their distances overflow it; "
        "rescale x_query, x_train and bandwidth by the same factor (the prediction "
        "does not change)"
    )


def nadaraya_watson(
    x_query,
    x_train,
    y_train,
    *,
    kernel: Kernel = "gaussian",
    bandwidth: float = 1.0,
    return_weights: bool = False,
):
    """Nadaraya–Watson regression: a kernel-weighted average of the training targets.

    One attention call: queries ``x_query``, keys ``x_train``, values ``y_train`` and
    the score ``log κ``. Memory stays bounded whatever ``n_query × n_train``, unless
    the weights are asked for.

    Parameters
    ----------
    x_query : tensor or array-like, shape (n_query, d) or (n_query,)
        Where to predict; a 1-D array is ``n_query`` points of one feature.
    x_train : tensor or array-like, shape (n_train, d) or (n_train,)
        Training inputs (the keys).
    y_train : tensor or array-like, shape (n_train,) or (n_train, d_v)
        Training targets (the values).
    kernel : str or callable
        A name in ``attnlib.kernel_regression.KERNELS``; as functions of
        ``u = (x - x_j) / h``: ``gaussian`` ``exp(-||u||²/2)``,
        ``laplace`` ``exp(-||u||₁)``, ``epanechnikov`` ``max(0, 1 - ||u||²)``,
        ``biweight`` and ``triweight`` its square and cube, ``boxcar``
        ``1[||u|| <= 1]``. A
        callable ``kernel(q, k)`` receives the inputs divided by the bandwidth,
        ``(n_query, d)`` and ``(n_train, d)``, and returns non-negative kernel values
        ``(n_query, n_train)``.
    bandwidth : float
        Positive scale ``h`` (``σ`` of the Gaussian). As ``h → 0`` the prediction tends
        to the nearest training target (the mean of the tied nearest ones), and that
        limit is what a tiny ``h`` returns for the Gaussian and Laplace kernels, never
        NaN.
    return_weights : bool
        Also return the attention matrix. It costs ``n_query × n_train`` numbers, and
        computing it about three times that (``3 × 4`` bytes per pair in float32,
        ``3 × 8`` in float64: 24 GB for 2 000 × 10⁶ in float32); a ``ValueError`` is
        raised before anything is allocated when that exceeds the memory available.

    Returns
    -------
    prediction : tensor, shape (n_query,) or (n_query, d_v)
        Shaped like ``y_train``; device of ``x_query``, and the inputs' common
        dtype (float64 if any of them is).
    weights : tensor, shape (n_query, n_train)
        Only with ``return_weights=True``: the attention matrix; each row sums to one.

    Raises
    ------
    ValueError
        Bad shapes, empty or non-finite inputs, a non-positive bandwidth, an unknown
        kernel, a query with no training point inside a compact kernel's support, or
        weights asked for that would not fit in memory.

    Implements
    ----------
    Eq. (5) of the self-expression paper; Eq. (6) for the Gaussian kernel (softmax of
    ``-||x - x_j||² / (2σ²)``); Nadaraya (1964), Watson (1964).
    """
    kernel = _check_kernel(kernel)
    bandwidth = check_positive(bandwidth, "bandwidth")
    xq, xt, y, squeeze = _check_data(x_query, x_train, y_train)
    if return_weights:
        _check_weights_fit(xq.shape[0], xt.shape[0], xq.element_size())
        prediction, weights = _kernel_attention(xq, xt, y, kernel, bandwidth)
        return (prediction[:, 0] if squeeze else prediction), weights
    prediction = _predict(xq, xt, y, kernel, bandwidth)
    return prediction[:, 0] if squeeze else prediction


def _predict(xq, xt, y, kernel: Kernel, bandwidth: float) -> torch.Tensor:
    """Nadaraya–Watson on checked 2-D tensors, without forming the weights.

    The Gaussian and Laplace kernels on the CPU without gradients go to the fused
    engine (``_kernelsums.fused_sums``); the rest is attention on blocks of queries.
    """
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (xq, xt, y))
    fused = (
        kernel in _SOFTMAX_KERNELS
        and xq.device.type == "cpu"
        and xq.dtype in (torch.float32, torch.float64)
    )
    if fused and not grad:
        lanes = key_lanes(xt.detach().numpy(), y.detach().numpy())
        return torch.from_numpy(
            _fused_predict(xq.detach().numpy(), lanes, kernel, bandwidth)
        )
    return _blockwise(xq, xt, y, kernel, bandwidth, grad)


def _fused_predict(xq: np.ndarray, lanes, kernel: Kernel, bandwidth: float):
    """The fused engine's predictions for checked arrays (the keys and values in
    lanes, ``attnlib.kernel_regression._kernelsums.key_lanes``)."""
    out = lane_sums(xq, *lanes, bandwidth, kernel == "laplace", torch.get_num_threads())
    # The inputs are finite (checked), so a non-finite prediction is an overflow.
    if not np.isfinite(out).all():
        raise _overflow_error(torch.from_numpy(out).dtype)  # named as torch names it
    return out


def _prepare(xt: np.ndarray, y: np.ndarray, kernel: Kernel):
    """A checked training set ``(n, d)``, ``(n, d_v)``, as :func:`_predict_array` reads
    it.

    The fused engine's lanes for the Gaussian and Laplace kernels, tensors that share
    the arrays' memory for the others: a fitted estimator makes them once.
    """
    if kernel in _SOFTMAX_KERNELS:
        return key_lanes(xt, y)
    return torch.from_numpy(xt), torch.from_numpy(y)


def _predict_array(xq: np.ndarray, train, kernel: Kernel, bandwidth: float):
    """:func:`_predict` for checked float32 or float64 NumPy queries, against a
    training set made by :func:`_prepare`.

    The fused engine reads the arrays as they are; the other kernels convert the
    queries to a tensor and the prediction back, once each.
    """
    if kernel in _SOFTMAX_KERNELS:
        return _fused_predict(xq, train, kernel, bandwidth)
    q = torch.from_numpy(np.require(xq, requirements="W"))  # torch wants writable
    return _blockwise(q, *train, kernel, bandwidth, grad=False).numpy()


# Elements of the weight matrix of one block of queries in the blockwise path (16 MiB in
# float64; the scores, kernel values and weights of a block, with their temporaries,
# take ~10 times that).
_BLOCK_ELEMENTS = 2**21


def _blockwise(xq, xt, y, kernel: Kernel, bandwidth: float, grad: bool) -> torch.Tensor:
    """:func:`~attnlib.functional.attention` on blocks of queries.

    With ``grad``, each block is recomputed in backward.
    """
    step = max(1, _BLOCK_ELEMENTS // xt.shape[0])
    blocks = []
    for start in range(0, xq.shape[0], step):
        q = xq[start : start + step]
        if grad:
            out = checkpoint(
                _block_prediction,
                q,
                xt,
                y,
                kernel,
                bandwidth,
                start,
                use_reentrant=False,
            )
        else:
            out = _block_prediction(q, xt, y, kernel, bandwidth, start)
        blocks.append(out)
    return torch.cat(blocks)


def _block_prediction(
    q, xt, y, kernel: Kernel, bandwidth: float, offset: int
) -> torch.Tensor:
    return _kernel_attention(q, xt, y, kernel, bandwidth, offset=offset).output


def _check_weights_fit(n_query: int, n_train: int, itemsize: int) -> None:
    """Raise before allocating a weight matrix (and two temporaries) too large."""
    need = 3 * n_query * n_train * itemsize
    available = available_memory()
    if need > available:
        raise ValueError(
            f"return_weights=True needs the {n_query} x {n_train} weight matrix: "
            f"about {need / 2**30:.1f} GiB to compute, more than the "
            f"{available / 2**30:.1f} GiB available; call nadaraya_watson without "
            "return_weights (its memory stays bounded), or pass fewer x_query rows"
        )


def loo_predictions(
    x_train, y_train, *, kernel: Kernel = "gaussian", bandwidth: float = 1.0
) -> torch.Tensor:
    """Leave-one-out predictions: each training point predicted from all the others.

    One attention call with the diagonal masked out, instead of ``n`` refits.

    Parameters
    ----------
    x_train : tensor or array-like, shape (n_train, d) or (n_train,)
        Training inputs, at least two.
    y_train : tensor or array-like, shape (n_train,) or (n_train, d_v)
        Training targets.
    kernel, bandwidth : str or callable, float
        As in :func:`nadaraya_watson`.

    Returns
    -------
    tensor, shape like ``y_train``
        ``prediction[i]`` uses every training pair except ``(x_i, y_i)``.

    Implements
    ----------
    The leave-one-out cross-validation of the bandwidth (Silverman, 1986), as a mask.
    """
    kernel = _check_kernel(kernel)
    bandwidth = check_positive(bandwidth, "bandwidth")
    xt, _, y, squeeze = _check_data(x_train, x_train, y_train)
    if xt.shape[0] < 2:
        raise ValueError(
            f"x_train needs at least 2 samples for leave-one-out, got {xt.shape[0]}"
        )
    prediction = _loo(xt, y, kernel, bandwidth)
    return prediction[:, 0] if squeeze else prediction


def _loo(xt, y, kernel: Kernel, bandwidth: float) -> torch.Tensor:
    """:func:`loo_predictions` on checked 2-D tensors, at least two rows."""
    not_self = ~torch.eye(xt.shape[0], dtype=torch.bool, device=xt.device)
    prediction, _ = _kernel_attention(xt, xt, y, kernel, bandwidth, mask=not_self)
    return prediction
