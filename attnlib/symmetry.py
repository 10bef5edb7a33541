"""Symmetry: why a map that ignores the choice of embedding must look like attention.

It must look like self-attention.

A sequence-to-sequence map is *orthogonal equivariant* when rotating the embedding space
rotates its output in the same way. Ma & Ying (2021) show that such a map returns, for
every token, a combination of the input tokens whose coefficients depend only on inner
products; with "knowledge" vectors ``Z`` living in the same space, the coefficients may
depend on ``Z``'s inner products with the tokens, and self-attention is the simplest
finite-parameter instance of that form.

Convention: tokens are rows, as everywhere in attnlib. A sequence is ``X`` of shape
``(n, d)``, the knowledge ``Z`` is ``(k, d)``, a rotation acts as ``X -> X @ Q.T`` and a
permutation of the tokens as ``X -> P @ X``. The paper writes tokens as columns
(``X ∈ R^{d×n}``, ``f(X) = X g(XᵀX)``); its coefficient matrix ``g`` is our
``weights.T`` and its ``ZᵀX`` is our ``X @ Z.T``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from .attention import AttentionResult, attention, output_of
from .utils import as_tensor, check_int, check_positive, names_input

__all__ = [
    "random_orthogonal",
    "random_permutation",
    "householder",
    "equivariance_error",
    "knowledge_attention",
    "KnowledgeAttention",
]

KERNELS = ("quadratic", "rbf", "higher_order")
GROUPS = ("orthogonal", "permutation")


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
    d = check_int(d, "d")
    dtype = dtype or torch.get_default_dtype()
    # LAPACK has no half-precision QR: factor in float32 and round the result.
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    g = torch.randn(d, d, generator=_check_generator(generator), dtype=work)
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
    """
    n = check_int(n, "n")
    eye = torch.eye(n, dtype=dtype or torch.get_default_dtype())
    return eye[torch.randperm(n, generator=_check_generator(generator))]


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
            Q = random_orthogonal(X.shape[-1], generator, dtype=X.dtype).to(X.device)
            moved = _finite_output(call(X @ Q.T, None if Z is None else Z @ Q.T))
            expected = reference @ Q.T
        else:
            P = random_permutation(X.shape[-2], generator, dtype=X.dtype).to(X.device)
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


def knowledge_attention(
    x,
    z,
    a=None,
    *,
    kernel: str = "quadratic",
    c=None,
    normalizer="softmax",
    temperature: float | None = None,
) -> AttentionResult:
    """One head of ``f(X, Z) = X g(ZᵀX)``, in rows: ``weights(X Zᵀ) @ X``.

    With ``Y = X Zᵀ`` (each token's inner products with the knowledge, shape ``(n, k)``)
    the scores are, for ``kernel``:

    * ``"quadratic"``: ``Y A Yᵀ`` (Remark 3 and §3.3: ``σ(YᵀWY)`` in the paper's
      columns);
    * ``"rbf"``: ``-‖(yᵢ - yⱼ) A‖² / 2`` (the RBF kernel of §3.3);
    * ``"higher_order"``: ``Y (A + M C) Yᵀ`` with ``M = YᵀY / n``, a fourth-order term
      of
      Eq. (3) whose parameters do not depend on ``n``.

    Every score depends on ``X`` only through ``Y``, which a common rotation of ``X``
    and ``Z`` leaves unchanged, so the map is orthogonal equivariant with knowledge.

    Parameters
    ----------
    x : tensor or array-like, shape (..., n, d)
        Tokens, one per row.
    z : tensor or array-like, shape (..., k, d)
        Knowledge vectors, one per row.
    a : tensor or array-like, shape (..., k, k), optional
        The quadratic form (the identity by default).
    kernel : {"quadratic", "rbf", "higher_order"}
        The score (above).
    c : tensor or array-like, shape (..., k, k)
        The fourth-order coefficients; required for ``"higher_order"``.
    normalizer : str or callable
        As in :func:`attnlib.attention.attention`.
    temperature : float, optional
        Divides the scores; ``sqrt(k)`` for the two polynomial kernels and 1 for
        ``"rbf"``.

    Returns
    -------
    AttentionResult
        ``output`` ``(..., n, d)``, in the span of the tokens, and ``weights``
        ``(..., n, n)`` indexed ``[query, key]`` (the paper's ``g`` transposed).

    Implements
    ----------
    Proposition 2 with ``g₂ = 0`` (the form ``X g(ZᵀX)``), Remark 3 and §3.3 of the
    symmetry paper.
    """
    x = as_tensor(x, "x", min_ndim=2)
    z = as_tensor(z, "z", min_ndim=2, device=x.device)
    a, c = (
        None if m is None else as_tensor(m, name, min_ndim=2, device=x.device)
        for m, name in ((a, "a"), (c, "c"))
    )
    # The common dtype of the inputs: a float64 argument is never rounded to float32.
    dtype = x.dtype
    for m in (z, a, c):
        dtype = dtype if m is None else torch.promote_types(dtype, m.dtype)
    x, z = x.to(dtype), z.to(dtype)
    if temperature is not None:
        temperature = check_positive(temperature, "temperature")
    if z.shape[-1] != x.shape[-1]:
        raise ValueError(
            f"z must have x's feature size {x.shape[-1]}, got {z.shape[-1]}"
        )
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    k = z.shape[-2]
    if a is None:
        a = torch.eye(k, dtype=x.dtype, device=x.device)
    a = _square(a, "a", k, x)
    y = x @ z.transpose(-2, -1)
    if kernel == "rbf":
        q = y @ a
        return attention(
            q,
            q,
            x,
            score="neg_sq_dist",
            normalizer=normalizer,
            temperature=temperature or 1.0,
        )
    if kernel == "higher_order":
        if c is None:
            raise ValueError('c is required for kernel="higher_order"')
        second_moment = y.transpose(-2, -1) @ y / y.shape[-2]
        a = a + second_moment @ _square(c, "c", k, x)
    return attention(
        y @ a,
        y,
        x,
        score="dot",
        normalizer=normalizer,
        temperature=temperature or math.sqrt(k),
    )


def _square(m, name: str, k: int, like: torch.Tensor) -> torch.Tensor:
    m = as_tensor(m, name, min_ndim=2, dtype=like.dtype, device=like.device)
    if m.shape[-2:] != (k, k):
        raise ValueError(
            f"{name} must be ({k}, {k}) in its last two dimensions, got "
            f"{tuple(m.shape)}"
        )
    return m


class KnowledgeAttention(nn.Module):
    """Stacked, multi-head ``X g(ZᵀX)`` layers whose knowledge ``Z`` is learned.

    Layer ``l`` maps ``h`` to ``[h +] Σᵢ h Wᵢᵀ`` weighted by head ``i``'s coefficients
    ``gᵢ(h Zᵢᵀ)`` (see :func:`knowledge_attention`). With ``value="scalar"`` each ``Wᵢ``
    is a learned multiple of the identity, and the whole stack is orthogonal equivariant
    with knowledge and permutation equivariant in the tokens. With ``value="linear"``
    each ``Wᵢ`` is a learned ``(d, d)`` matrix (the change of embedding of Eq. 4); the
    map is then equivariant only if the ``Wᵢ`` rotate too, which
    :func:`equivariance_error` detects.

    The learned tensors are ``knowledge``
    ``(num_layers, num_heads, n_knowledge, embed_dim)``, ``a``
    ``(num_layers, num_heads, n_knowledge, n_knowledge)``, ``c`` of the same shape
    (``"higher_order"`` only) and ``head_weight`` ``(num_layers, num_heads)``, with two
    more dimensions ``(embed_dim, embed_dim)`` for ``value="linear"``.

    Parameters
    ----------
    embed_dim : int
        Token size ``d``.
    n_knowledge : int
        Knowledge vectors per head ``k``.
    num_heads, num_layers : int
        Heads per layer and layers.
    kernel : {"quadratic", "rbf", "higher_order"}
        The score of every head (see :func:`knowledge_attention`).
    value : {"scalar", "linear"}
        Each head's value map: a learned multiple of the identity, or a learned matrix.
    residual : bool
        Add each layer's input to its output.
    normalizer, temperature : str or callable, float or None
        As in :func:`knowledge_attention`.

    Implements
    ----------
    Eqs. (4) and (6) and the stacked model of §5 of the symmetry paper.
    """

    def __init__(
        self,
        embed_dim: int,
        n_knowledge: int,
        *,
        num_heads: int = 1,
        num_layers: int = 1,
        kernel: str = "quadratic",
        value: str = "scalar",
        residual: bool = False,
        normalizer="softmax",
        temperature: float | None = None,
    ):
        super().__init__()
        d, k = check_int(embed_dim, "embed_dim"), check_int(n_knowledge, "n_knowledge")
        h, n_layers = (
            check_int(num_heads, "num_heads"),
            check_int(num_layers, "num_layers"),
        )
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        if value not in ("scalar", "linear"):
            raise ValueError(f"value must be 'scalar' or 'linear', got {value!r}")
        if temperature is not None:
            check_positive(temperature, "temperature")
        self.embed_dim, self.kernel, self.value, self.residual = (
            d,
            kernel,
            value,
            residual,
        )
        self.normalizer, self.temperature = normalizer, temperature
        self.knowledge = nn.Parameter(torch.randn(n_layers, h, k, d) / math.sqrt(d))
        self.a = nn.Parameter(torch.randn(n_layers, h, k, k) / math.sqrt(k))
        self.c = (
            nn.Parameter(torch.zeros(n_layers, h, k, k))
            if kernel == "higher_order"
            else None
        )
        if value == "scalar":
            self.head_weight = nn.Parameter(torch.full((n_layers, h), 1.0 / h))
        else:
            self.head_weight = nn.Parameter(torch.eye(d).repeat(n_layers, h, 1, 1) / h)

    def forward(self, x, knowledge=None) -> torch.Tensor:
        """Transform tokens ``x``, with the learned knowledge or ``knowledge``.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, embed_dim)
            Tokens, one per row.
        knowledge : tensor or array-like, shape of the ``knowledge`` parameter, optional
            Replaces the learned ``Z``, ``(num_layers, num_heads, n_knowledge,
            embed_dim)``.

        Returns
        -------
        torch.Tensor, shape (..., n, embed_dim)
            The new tokens.
        """
        h = as_tensor(x, "x", min_ndim=2)
        if h.shape[-1] != self.embed_dim:
            raise ValueError(
                f"x must have {self.embed_dim} features, got {h.shape[-1]}"
            )
        z = (
            self.knowledge
            if knowledge is None
            else as_tensor(knowledge, "knowledge", dtype=h.dtype, device=h.device)
        )
        if z.shape != self.knowledge.shape:
            raise ValueError(
                f"knowledge must have shape {tuple(self.knowledge.shape)}, got "
                f"{tuple(z.shape)}"
            )
        for layer in range(z.shape[0]):
            c = None if self.c is None else self.c[layer]
            with names_input("x"):
                heads = knowledge_attention(
                    h.unsqueeze(-3),
                    z[layer],
                    self.a[layer],
                    kernel=self.kernel,
                    c=c,
                    normalizer=self.normalizer,
                    temperature=self.temperature,
                ).output  # (..., heads, n, d)
            w = self.head_weight[layer]
            mixed = (
                (heads * w[:, None, None]).sum(-3)
                if self.value == "scalar"
                else (heads @ w.transpose(-2, -1)).sum(-3)
            )
            h = h + mixed if self.residual else mixed
        return h
