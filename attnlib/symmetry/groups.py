"""The groups a symmetry acts by, and a test of equivariance under them.

Rotations (Haar-random orthogonal matrices, Householder reflections) act on the
embedding, ``X -> X @ Q.T``; permutations act on the tokens, ``X -> P @ X``.
:func:`equivariance_error` measures how far a map is from commuting with either.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..functional import output_of
from ..utils import as_tensor, check_int
from ..utils.boundary import checking, public, trusted

__all__ = [
    "GROUPS",
    "random_orthogonal",
    "random_permutation",
    "householder",
    "equivariance_error",
]

#: The groups :func:`equivariance_error` tests against (``group=``).
GROUPS = ("orthogonal", "permutation")


@public
def random_orthogonal(
    d: int, generator: torch.Generator | None = None, *, dtype=None
) -> torch.Tensor:
    """A ``(d, d)`` orthogonal matrix drawn from the Haar (uniform) distribution.

    The QR factors of a Gaussian matrix, with the signs of ``R``'s diagonal moved into
    ``Q`` so that the distribution is exactly uniform (Mezzadri, 2007).

    Parameters
    ----------
    d : int
        The dimension.
    generator : torch.Generator, optional
        Source of randomness; PyTorch's global generator by default.
    dtype : torch.dtype, optional
        The result's dtype; ``torch.get_default_dtype()`` by default.

    Returns
    -------
    torch.Tensor, shape (d, d)
        ``Q`` with ``Q Qᵀ = I`` (to the dtype's rounding).

    Implements
    ----------
    The Haar sampling of Mezzadri (2007), the random group elements with which the
    symmetry paper's equivariance (Definitions 1-3) is tested.
    """
    if checking():
        d = check_int(d, "d")
        _check_generator(generator)
    dtype = dtype or torch.get_default_dtype()
    # LAPACK has no half-precision QR: factor in float32 and round the result.
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    g = torch.randn(d, d, generator=generator, dtype=work)
    q, r = torch.linalg.qr(g)
    signs = torch.sign(torch.diagonal(r))
    return (q * torch.where(signs == 0, torch.ones_like(signs), signs)).to(dtype)


def _check_generator(generator):
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(
            "generator must be a torch.Generator or None, "
            f"got {type(generator).__name__}"
        )
    return generator


@public
def random_permutation(
    n: int, generator: torch.Generator | None = None, *, dtype=None
) -> torch.Tensor:
    """A uniformly random ``(n, n)`` permutation matrix ``P``; ``P @ X`` reorders rows.

    Parameters
    ----------
    n : int
        The number of rows permuted.
    generator : torch.Generator, optional
        Source of randomness; PyTorch's global generator by default.
    dtype : torch.dtype, optional
        The result's dtype; ``torch.get_default_dtype()`` by default.

    Returns
    -------
    torch.Tensor, shape (n, n)
        A permutation matrix.

    Implements
    ----------
    No equation: a test input of the equivariance checks (Ma & Ying, 2022).
    """
    if checking():
        n = check_int(n, "n")
        _check_generator(generator)
    eye = torch.eye(n, dtype=dtype or torch.get_default_dtype())
    return eye[torch.randperm(n, generator=generator)]


def householder(u) -> torch.Tensor:
    """The reflection ``I - 2 u uᵀ / ‖u‖²`` across the hyperplane orthogonal to ``u``.

    Parameters
    ----------
    u : tensor or array-like, shape (d,)
        A non-zero vector.

    Returns
    -------
    tensor, shape (d, d)
        Symmetric and orthogonal; it maps ``u`` to ``-u`` and fixes every vector
        orthogonal to ``u``.

    Implements
    ----------
    The reflection ``Q_u`` of Appendix A of the symmetry paper.
    """
    u = as_tensor(u, "u", ndim=1)
    # The reflection depends on u's direction only: scaling by its largest entry keeps
    # ‖u‖² finite for any finite u.
    top = u.abs().max()
    if top == 0:
        raise ValueError("u must be a non-zero vector")
    u = u / top
    norm2 = u @ u
    return (
        torch.eye(u.shape[0], dtype=u.dtype, device=u.device)
        - 2 * torch.outer(u, u) / norm2
    )


def equivariance_error(
    f: Callable,
    X,
    *,
    Z=None,
    group: str = "orthogonal",
    n_trials: int = 5,
    generator: torch.Generator | None = None,
) -> float:
    """How far ``f`` is from equivariance: worst relative error over random elements.

    The elements are drawn from the group.

    For ``group="orthogonal"`` the error is ``‖f(X Qᵀ, Z Qᵀ) − f(X, Z) Qᵀ‖ / ‖f(X, Z)‖``
    for Haar-random ``Q``; for ``group="permutation"`` it is
    ``‖f(P X, Z) − P f(X, Z)‖ / ‖f(X, Z)‖`` for random token permutations ``P`` (the
    knowledge is not permuted). ``f`` is called as ``f(X)`` when ``Z`` is None and as
    ``f(X, Z)`` otherwise.

    Parameters
    ----------
    f : callable
        Maps a sequence ``(..., n, d)`` (and knowledge ``(..., k, d)``) to a sequence
        ``(..., m, d)`` (``m = n`` for the permutation group).
    X : tensor or array-like, shape (..., n, d)
        Input tokens, one per row.
    Z : tensor or array-like, shape (..., k, d), optional
        Knowledge vectors, one per row; rotated together with ``X``.
    group : {"orthogonal", "permutation"}
    n_trials : int
        Number of random group elements tried.
    generator : torch.Generator, optional
        Source of the random group elements.

    Returns
    -------
    float
        Zero for an exactly equivariant ``f``; round-off (about 1e-15 in float64) in
        practice.

    Implements
    ----------
    Definitions 1-3 of the symmetry paper (in rows: ``f(QX) = Qf(X)`` becomes
    ``f(X Qᵀ) = f(X) Qᵀ``, and ``f(XP) = f(X)P`` becomes ``f(PX) = P f(X)``).
    """
    if not callable(f):
        raise ValueError(f"f must be callable, got {type(f).__name__}")
    X = as_tensor(X, "X", min_ndim=2)
    if Z is not None:
        Z = as_tensor(Z, "Z", min_ndim=2, dtype=X.dtype, device=X.device)
        if Z.shape[-1] != X.shape[-1]:
            raise ValueError(
                f"Z must have X's feature size {X.shape[-1]}, got {Z.shape[-1]}"
            )
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    n_trials = check_int(n_trials, "n_trials")
    _check_generator(generator)
    call = (lambda x, z: f(x)) if Z is None else f
    with torch.no_grad():
        return _worst_error(call, X, Z, group, n_trials, generator)


def _worst_error(call, X, Z, group, n_trials, generator) -> float:
    reference = _finite_output(call(X, Z))
    scale = torch.linalg.norm(reference)
    if scale == 0:
        raise ValueError(
            "f(X) is zero, so the relative error is undefined; pick another X"
        )
    worst = 0.0
    for _ in range(n_trials):
        if group == "orthogonal":
            with trusted():  # not f's calls: f is the caller's code
                Q = random_orthogonal(X.shape[-1], generator, dtype=X.dtype)
            Q = Q.to(X.device)
            moved = _finite_output(call(X @ Q.T, None if Z is None else Z @ Q.T))
            expected = reference @ Q.T
        else:
            with trusted():
                P = random_permutation(X.shape[-2], generator, dtype=X.dtype)
            P = P.to(X.device)
            moved = _finite_output(call(P @ X, Z))
            expected = P @ reference
        worst = max(worst, float(torch.linalg.norm(moved - expected) / scale))
    return worst


def _finite_output(y) -> torch.Tensor:
    # A NaN output would compare as "no error": an undefined answer must not read as 0.
    y = output_of(y)
    if not torch.isfinite(y).all():
        raise ValueError(
            "f returned NaN or infinite values; its equivariance is undefined"
        )
    return y
