"""``scaled_dot_product_attention``: PyTorch's SDPA, with attnlib's normalizers.

The same call as ``torch.nn.functional.scaled_dot_product_attention`` (positional as
torch's, the same meaning of every argument, a tensor returned), and the book's
normalizers by one keyword.
"""

from __future__ import annotations

import torch

from ..errors import AttentionInputError
from ..utils import check_on_device, check_real
from ..utils.validation import finite_on_host, traced
from ._arguments import (
    check_flag,
    check_mask,
    check_shapes,
    checked_tensors,
    repeat_heads,
    sdpa_arguments,
)
from .core import _attention
from .scores import Normalizer

__all__ = ["scaled_dot_product_attention"]

_NAMES = ("query", "key", "value", "attn_mask")


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
    normalizer: Normalizer = "softmax",
) -> torch.Tensor:
    """SDPA: ``normalizer(query keyᵀ · scale + attn_mask) @ value``, as a tensor.

    A drop-in for ``torch.nn.functional.scaled_dot_product_attention``: the same
    arguments, positional in the same order (``scale`` and ``enable_gqa`` keyword-only,
    as in PyTorch), with the same meaning, and its refusals.
    With the softmax it runs PyTorch's SDPA itself; ``normalizer="sparsemax"``,
    ``"entmax"`` (any name of ``attnlib.normalizers.NORMALIZERS``) or a map runs
    :func:`attention` without weights (the flash kernels on CUDA). Where attnlib
    differs from PyTorch, it is kinder: a query whose every key is masked gets zeros,
    a NaN in a key or value that the mask hides does not reach the output
    (pytorch#101967), and NaN or infinite output is refused, naming the input.

    Parameters
    ----------
    query : tensor, shape (..., H, L, E)
        Queries, one per row (``H`` heads, optional).
    key : tensor, shape (..., H_k, S, E)
        Keys, in the dtype and on the device of ``query``.
    value : tensor, shape (..., H_k, S, E_v)
        Values, in the dtype and on the device of ``query``.
    attn_mask : bool or float tensor, broadcastable to (..., H, L, S), optional
        True where a query may attend to a key; a float mask is added to the scores
        (``-inf`` masks a key).
    dropout_p : float in [0, 1]
        Dropout on the weights, applied whenever positive (pass 0 at evaluation).
    is_causal : bool
        Query ``i`` attends to keys ``0 … i`` (top-left aligned); not with
        ``attn_mask``, as in PyTorch.
    scale : float, optional
        The scores' multiplier; ``1 / sqrt(E)`` by default. Any finite number with the
        softmax, as PyTorch takes it; positive with another normalizer.
    enable_gqa : bool
        Grouped-query attention: ``key`` and ``value`` have ``H_k`` heads, a divisor
        of ``H``, each shared by ``H / H_k`` query heads (repeated as PyTorch does).
    normalizer : str or callable
        How a row of scores becomes weights; ``"softmax"`` is SDPA.

    Returns
    -------
    torch.Tensor, shape (..., H, L, E_v)
        The output, in ``query``'s dtype.

    Raises
    ------
    AttentionInputError
        A ``RuntimeError`` as PyTorch's and a ``ValueError``, naming the fix:
        ``attn_mask`` with ``is_causal``, head counts that do not divide with
        ``enable_gqa``, integer tensors, different dtypes or devices.
    ValueError
        Naming the argument and its shape: shapes that do not fit, a mask that does not
        broadcast (with the shape expected), a bad ``dropout_p``, NaN or infinite
        values a query sees, scores that overflow.

    Implements
    ----------
    Eq. (1) of Vaswani et al. (2017), softmax(QKᵀ/√d) V, with PyTorch's arguments.
    """
    check_flag(is_causal, "is_causal")
    check_flag(enable_gqa, "enable_gqa")
    if scale is not None:  # any real, as torch takes it (other normalizers: positive)
        scale = check_real(scale, "scale")
    if is_causal and attn_mask is not None:
        raise AttentionInputError(
            "attn_mask and is_causal=True were both given; PyTorch's SDPA refuses "
            "this too: pass one (to combine them, pass attn_mask & torch.ones(L, S, "
            "dtype=torch.bool).tril() as attn_mask)"
        )
    query, key, value = checked_tensors(query, key, value, _NAMES[:3])
    if normalizer != "softmax":
        if enable_gqa:
            key, value = repeat_heads(query, key, value, _NAMES[:3])
        mask, bias, temperature, dropout_p, _ = sdpa_arguments(
            None, attn_mask, is_causal, dropout_p, None, scale
        )
        return _attention(
            query, key, value, "scaled_dot", normalizer, mask, bias, temperature,
            is_causal, dropout_p, False, _NAMES,
        ).output  # fmt: skip
    heads = query
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3:
        repeat_heads(query[..., :0, :], key[..., :0, :], value[..., :0, :], _NAMES[:3])
        heads = query.narrow(-3, 0, key.shape[-3])  # its shape only, for the check
    batch = check_shapes(heads, key, value, "scaled_dot", _NAMES[:3])[0][:-2]
    if attn_mask is not None:
        if isinstance(attn_mask, torch.Tensor) and attn_mask.is_floating_point():
            if attn_mask.dtype != query.dtype:
                raise AttentionInputError(
                    f"a float attn_mask must have query's dtype {query.dtype}, got "
                    f"{attn_mask.dtype}: pass attn_mask.to(query.dtype)"
                )
            check_mask(attn_mask, _shape(query, key, batch), query.device,
                       "attn_mask", "query", floating=True)  # fmt: skip
        else:
            attn_mask = check_mask(
                attn_mask, _shape(query, key, batch), query.device, "attn_mask", "query"
            )
    if (
        isinstance(dropout_p, bool)
        or not isinstance(dropout_p, (int, float))
        or not (0 <= dropout_p <= 1)
    ):
        raise ValueError(f"dropout_p must be a number in [0, 1], got {dropout_p!r}")
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
        enable_gqa=enable_gqa,
    )  # fmt: skip
    if traced(out) or out.numel() == 0:
        return out
    if out.device.type != "cpu":
        check_on_device(
            ~torch.isfinite(out).all(),
            "query, key or value contains NaN or infinite values, or query keyᵀ · "
            f"scale overflows {query.dtype}",
        )
        return out
    if finite_on_host(out):
        return out
    # Found only now, once: the culprit named, or a NaN the mask hides ignored.
    if enable_gqa:
        key, value = repeat_heads(query, key, value, _NAMES[:3])
    mask, bias, temperature, dropout_p, _ = sdpa_arguments(
        None, attn_mask, is_causal, dropout_p, None, scale
    )
    if dropout_p:  # another draw would give another output: the check names it
        raise ValueError(
            "query, key or value contains NaN or infinite values, or their scores "
            f"overflow {query.dtype}"
        )
    return _attention(
        query, key, value, "scaled_dot", "softmax", mask, bias, temperature, is_causal,
        0.0, True, _NAMES,
    ).output  # fmt: skip


def _shape(query, key, batch):
    """The scores' shape, (..., H, L, S)."""
    batch = torch.broadcast_shapes(batch, query.shape[:-2])
    return (*batch, query.shape[-2], key.shape[-2])
