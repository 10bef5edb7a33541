"""Attention heads of the equivariant form ``X g(ZᵀX)``, with knowledge ``Z`` learned.

:func:`knowledge_attention` is one head; :class:`KnowledgeAttention` stacks several,
multi-headed, with residuals. Tokens are rows, as in :mod:`attnlib.symmetry`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..functional import AttentionResult, attend
from ..utils import as_tensor, check_int, check_positive
from ..utils.boundary import checking
from ..utils.validation import names_input

__all__ = ["HEAD_KERNELS", "knowledge_attention", "KnowledgeAttention"]

#: The kernels a knowledge-attention head scores with (``kernel=``); the smoothing
#: kernels of Nadaraya–Watson are ``attnlib.kernel_regression.KERNELS``.
HEAD_KERNELS = ("quadratic", "rbf", "higher_order")


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
        As in :func:`attnlib.functional.attention`.
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
    if temperature is not None:
        temperature = check_positive(temperature, "temperature")
    if z.shape[-1] != x.shape[-1]:
        raise ValueError(
            f"z must have x's feature size {x.shape[-1]}, got {z.shape[-1]}"
        )
    if kernel not in HEAD_KERNELS:
        raise ValueError(f"kernel must be one of {HEAD_KERNELS}, got {kernel!r}")
    k = z.shape[-2]
    _check_square(a, "a", k)
    if kernel == "higher_order":
        if c is None:
            raise ValueError('c is required for kernel="higher_order"')
        _check_square(c, "c", k)
    return _heads(x, z, a, c, kernel, normalizer, temperature)


def _check_square(m, name: str, k: int) -> None:
    if m is not None and m.shape[-2:] != (k, k):
        raise ValueError(
            f"{name} must be ({k}, {k}) in its last two dimensions, got "
            f"{tuple(m.shape)}"
        )


def _heads(x, z, a, c, kernel: str, normalizer, temperature) -> AttentionResult:
    """:func:`knowledge_attention` on checked tensors and arguments.

    Brought to one dtype (the widest: a float64 argument is never rounded to float32)
    and the device of ``x``.
    """
    dtype = x.dtype
    for m in (z, a, c):
        dtype = dtype if m is None else torch.promote_types(dtype, m.dtype)
    x = x.to(dtype)
    z, a, c = (
        None if m is None else m.to(dtype=dtype, device=x.device) for m in (z, a, c)
    )
    k = z.shape[-2]
    if a is None:
        a = torch.eye(k, dtype=x.dtype, device=x.device)
    y = x @ z.transpose(-2, -1)
    if kernel == "rbf":
        q = y @ a
        return attend(
            q, q, x, score="neg_sq_dist", normalizer=normalizer, temperature=temperature
        )
    if kernel == "higher_order":
        second_moment = y.transpose(-2, -1) @ y / y.shape[-2]
        a = a + second_moment @ c
    # y @ a has k features: the scaled dot's default temperature is sqrt(k)
    return attend(
        y @ a,
        y,
        x,
        score="scaled_dot",
        normalizer=normalizer,
        temperature=temperature,
    )


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
        if kernel not in HEAD_KERNELS:
            raise ValueError(f"kernel must be one of {HEAD_KERNELS}, got {kernel!r}")
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
        # The layer may run the caller's normalizer, so it is not public (boundary):
        # its tokens are checked unless a public function of attnlib (a run of chapter
        # 06) calls it inside trusted() with its own.
        h = x
        if checking():
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
                heads = _heads(
                    h.unsqueeze(-3),
                    z[layer],
                    self.a[layer],
                    c,
                    self.kernel,
                    self.normalizer,
                    self.temperature,
                ).output  # (..., heads, n, d)
            w = self.head_weight[layer]
            mixed = (
                (heads * w[:, None, None]).sum(-3)
                if self.value == "scalar"
                else (heads @ w.transpose(-2, -1)).sum(-3)
            )
            h = h + mixed if self.residual else mixed
        return h
