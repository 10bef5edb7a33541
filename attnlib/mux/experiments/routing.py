"""Chapter 08's controls: a pointer task pooling cannot solve, a non-local operator.

The routing task of :mod:`attnlib.mux` has one answer per sequence: every position must
name the value of the one marked token, so a model that pools the whole sequence once
and copies the result everywhere solves it. In the *pointer* task of this module every
position asks for a different token: token ``i`` carries a label, a value and a pointer
(the label of the token it must read), and output ``i`` is the value of the token whose
label its pointer names. Reading by content, wherever the token is, is what one
attention layer does; a convolution stack can only read inside its receptive field.

The second experiment makes concrete the attention note's remark that inverting a
differential operator is non-local: the discrete Laplacian is a three-tap convolution,
but its inverse (the discrete Green's function) is dense, and no single convolution,
however wide, comes close to it. A *stack* of zero-padded convolutions is not one
convolution: the padding cuts each layer's band at the borders, so the product of the
layers' matrices is not Toeplitz there, and a deep enough stack learns the borders and
approaches the inverse (:func:`fit_linear_stack`).

The losses and accuracies that train and read the models on either task are in
``attnlib.mux.experiments.scores``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from ...training import to_device
from ...utils import as_float_array, check_int
from ...utils.boundary import checking, public
from ...utils.validation import SEED_MAX

__all__ = [
    "PointerTask",
    "pointer_task",
    "layers_to_see_everything",
    "dirichlet_laplacian",
    "green_function",
    "best_convolution",
    "fit_linear_stack",
]


class PointerTask(NamedTuple):
    """Sequences where every position must output the value of the token it points at.

    ``x[b, i]`` is the one-hot label of token i, then the one-hot label it points at,
    then its one-hot value; ``source[b, i]`` is the position of the token that i points
    at and ``target[b, i]`` that token's value, the answer at position i.
    """

    x: torch.Tensor  # (n, length, 2 * n_labels + n_values)
    target: torch.Tensor  # (n, length)
    source: torch.Tensor  # (n, length)


@public
def pointer_task(
    n: int,
    length: int = 24,
    n_values: int = 6,
    *,
    n_labels: int | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> PointerTask:
    """Draw ``n`` pointer sequences: distinct labels, random values, random pointers.

    One random pointer per token.

    Parameters
    ----------
    n : int
        Number of sequences.
    length : int
        Tokens per sequence.
    n_values : int
        Size of the value vocabulary (chance accuracy is ``1 / n_values``).
    n_labels : int, optional
        Size of the label vocabulary, at least ``length`` (default ``length``); the
        labels of one sequence are distinct, so a pointer names exactly one token.
    seed : int
        The same seed gives the same task.
    device : str or torch.device, optional
        Where the tensors go (default: the CPU). They are drawn on the CPU and moved,
        so a seed gives the same data on every device.

    Returns
    -------
    PointerTask
        ``x`` of shape ``(n, length, 2 n_labels + n_values)``, ``target`` and ``source``
        of shape ``(n, length)``.

    Implements
    ----------
    A control for the routing task of the attention note: each output needs a
    different input, chosen by content, so no single pooled summary answers every
    position.
    """
    if checking():
        n, length = check_int(n, "n"), check_int(length, "length", minimum=2)
        n_values = check_int(n_values, "n_values", minimum=2)
        if n_labels is not None:
            n_labels = check_int(n_labels, "n_labels")
            if n_labels < length:
                raise ValueError(
                    f"n_labels must be at least length = {length}, got {n_labels}"
                )
        seed = check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    n_labels = length if n_labels is None else n_labels
    g = torch.Generator().manual_seed(seed)
    labels = torch.argsort(torch.rand(n, n_labels, generator=g), dim=1)[:, :length]
    values = torch.randint(n_values, (n, length), generator=g)
    source = torch.randint(length, (n, length), generator=g)
    pointer = labels.gather(1, source)
    x = torch.cat(
        [
            F.one_hot(labels, n_labels),
            F.one_hot(pointer, n_labels),
            F.one_hot(values, n_values),
        ],
        -1,
    )
    task = PointerTask(
        x.to(torch.get_default_dtype()), values.gather(1, source), source
    )
    return to_device(task, device)


def layers_to_see_everything(length: int, kernel_size: int) -> int:
    """Fewest stacked convolutions of odd width ``kernel_size`` for a global view.

    After that many, every output sees every input.

    Computed directly: a one-hot at position 0 is spread through the band of one
    convolution, layer after layer, until it reaches position ``length - 1`` (the
    farthest pair). The closed form is ``ceil(2 (length - 1) / (kernel_size - 1))``.

    Parameters
    ----------
    length : int
        Tokens per sequence, at least 2.
    kernel_size : int
        Odd width of every convolution, at least 3.

    Returns
    -------
    int
        The number of layers.

    Implements
    ----------
    The receptive field ``1 + L (k - 1)`` of stacked convolutions (Luo et al. 2016),
    asked to span a whole sequence.
    """
    length, kernel_size = (
        check_int(length, "length", minimum=2),
        check_int(kernel_size, "kernel_size"),
    )
    if kernel_size % 2 == 0 or kernel_size < 3:
        raise ValueError(f"kernel_size must be odd and at least 3, got {kernel_size}")
    half = kernel_size // 2
    band = np.abs(np.subtract.outer(np.arange(length), np.arange(length))) <= half
    seen, layers = np.eye(length, dtype=bool)[0], 0
    while not seen.all():
        seen = band[seen].any(0)
        layers += 1
    return layers


def dirichlet_laplacian(n: int) -> np.ndarray:
    """The ``(n, n)`` negative second difference with zero boundary values.

    Parameters
    ----------
    n : int
        Interior grid points, at least 2.

    Returns
    -------
    ndarray, shape (n, n)
        2 on the diagonal, -1 beside it: the three-tap convolution ``[-1, 2, -1]``.
    """
    n = check_int(n, "n", minimum=2)
    return 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)


def green_function(n: int) -> np.ndarray:
    """The inverse of :func:`dirichlet_laplacian` in closed form.

    ``min(i, j)(n + 1 - max(i, j)) / (n + 1)``.

    Indices are 1-based in the formula. Every entry is positive: each output of the
    inverse depends on every input.

    Parameters
    ----------
    n : int
        Interior grid points, at least 2.

    Returns
    -------
    ndarray, shape (n, n)
        The discrete Green's function, dense.

    Implements
    ----------
    The attention note's remark that inverting a differential operator is a
    non-local operation, for the 1-D Dirichlet Laplacian.
    """
    n = check_int(n, "n", minimum=2)
    i = np.arange(1, n + 1)
    return np.minimum.outer(i, i) * (n + 1 - np.maximum.outer(i, i)) / (n + 1)


def best_convolution(target, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The zero-padded convolution of odd ``width`` nearest ``target`` (Frobenius norm).

    Parameters
    ----------
    target : array-like, shape (n, n)
        The linear map to approximate.
    width : int
        Odd kernel width. (A stack of ``L`` zero-padded linear convolutions of width
        ``k`` is *not* in general one convolution of width ``1 + L (k - 1)``: the
        padding cuts the bands at the borders; see :func:`fit_linear_stack`.)

    Returns
    -------
    kernel : ndarray, shape (width,)
    matrix : ndarray, shape (n, n)
        The banded Toeplitz matrix of the kernel
        (``matrix[j, j + o] = kernel[o + width // 2]``).

    Implements
    ----------
    The single-convolution half of the test of the note's suggestion that a
    few convolution layers come close to the inverse of a differential operator.
    """
    target = as_float_array(target, "target")
    if target.shape[0] != target.shape[1]:
        raise ValueError(f"target must be a square matrix, got shape {target.shape}")
    width = check_int(width, "width")
    if width % 2 == 0:
        raise ValueError(f"width must be odd, got {width}")
    n, half = len(target), width // 2
    shifts = [np.eye(n, k=o) for o in range(-half, half + 1)]
    design = np.stack([s.ravel() for s in shifts], 1)
    kernel = np.linalg.lstsq(design, target.ravel(), rcond=None)[0]
    return kernel, sum(w * s for w, s in zip(kernel, shifts))


def fit_linear_stack(
    target, depth: int, kernel_size: int = 5, *, seeds=(0, 1, 2), max_iter: int = 1000
) -> tuple[list[np.ndarray], np.ndarray]:
    """A stack of ``depth`` zero-padded 1-channel linear convolutions fit to ``target``.

    The stack's matrix is ``M_depth @ ... @ M_1`` with ``M_l`` the
    :func:`attnlib.mux.conv_matrix` of layer l's kernel; it is fitted by L-BFGS on the
    squared Frobenius error from each seed, and the best fit is returned. The error is
    an upper bound on that of the best stack (the problem is not convex).

    Parameters
    ----------
    target : array-like, shape (n, n)
        The linear map to approximate.
    depth : int
        Number of stacked convolutions.
    kernel_size : int
        Odd width of every kernel.
    seeds : sequence of int
        Seeds of the random starting kernels.
    max_iter : int
        L-BFGS iterations per start.

    Returns
    -------
    kernels : list of ndarray, each of shape (kernel_size,)
        The fitted kernels, first layer first.
    matrix : ndarray, shape (n, n)
        The stack's matrix (what it does to a length-n input, zero-padded at every
        layer).

    Implements
    ----------
    The stacked half of the test of the note's suggestion that "two or three"
    convolution layers come close to the inverse of a differential operator. Departs
    from a trained CNN in being linear, single-channel and fitted to the matrix
    directly.
    """
    target = torch.as_tensor(as_float_array(target, "target"))
    max_iter = check_int(max_iter, "max_iter")
    if target.ndim != 2 or target.shape[0] != target.shape[1]:
        raise ValueError(
            f"target must be a square matrix, got shape {tuple(target.shape)}"
        )
    depth = check_int(depth, "depth")
    kernel_size = check_int(kernel_size, "kernel_size")
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {kernel_size}")
    # column k: the response to e_k
    basis = torch.eye(len(target), dtype=torch.float64)[:, None, :]
    best, best_error = None, float("inf")
    for seed in seeds:
        seed = check_int(seed, "seeds", minimum=0, maximum=SEED_MAX)
        kernels, error = _lbfgs_stack(seed, target, basis, depth, kernel_size, max_iter)
        if error < best_error:
            best, best_error = [w.detach().clone() for w in kernels], error
    with torch.no_grad():
        stacked = _stack_matrix(best, basis).numpy()
    return [w.numpy() for w in best], stacked


def _stack_matrix(kernels, basis: torch.Tensor) -> torch.Tensor:
    """The matrix of zero-padded convolutions by ``kernels``, first kernel first."""
    x = basis  # (n, 1, n): row k is e_k
    for w in kernels:
        x = F.conv1d(x, w.view(1, 1, -1), padding=len(w) // 2)
    return x[:, 0, :].T


def _lbfgs_stack(seed: int, target, basis, depth: int, kernel_size: int, max_iter):
    """L-BFGS from ``seed``'s random kernels: the kernels and their Frobenius error."""
    g = torch.Generator().manual_seed(seed)
    kernels = [
        (
            0.5 * torch.randn(kernel_size, generator=g, dtype=torch.float64)
        ).requires_grad_()
        for _ in range(depth)
    ]
    opt = torch.optim.LBFGS(
        kernels,
        max_iter=max_iter,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        history_size=50,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = (_stack_matrix(kernels, basis) - target).pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return kernels, float((_stack_matrix(kernels, basis) - target).norm())
