"""The paths that never form the weights: PyTorch's fused SDPA and the flash kernels.

Both compute what ``attnlib.functional._dense`` computes with that normalizer, from
checked arguments, and check their output once.
"""

from __future__ import annotations

import torch

from ..utils import check_on_device
from ..utils.validation import finite_on_host, traced
from . import _triton_flash as triton_flash
from ._arguments import check_mask
from ._dense import causal_mask
from .scores import FUSED_SCORES, default_temperature

__all__ = ["sdpa_once", "fused", "flashable", "flash"]


def sdpa_once(
    q, k, v, mask, bias, causal, scale, dropout_p, shape, same
) -> torch.Tensor | None:  # fmt: skip
    """Softmax attention's output by ``F.scaled_dot_product_attention``, checked once.

    For checked tensors on the CPU: the bool ``mask``, the float mask
    ``bias`` and the causal triangle become SDPA's one ``attn_mask`` (the triangle
    alone its ``is_causal``), as a caller of SDPA would pass them. Returns None where
    the output is not finite (a NaN or infinity, a masked NaN, +inf or NaN in the
    float mask, an overflow): the weights path then computes (a masked NaN ignored, the
    limit of a tiny temperature) or refuses, naming why. (PyTorch gives zeros to a
    query with no key on the CPU, as attnlib does.)
    """
    if causal and (mask is not None or bias is not None):
        tri = causal_mask(q.shape[-2], k.shape[-2], q.device)
        mask = tri if mask is None else mask & tri
        causal = False
    if bias is not None:
        bias = bias.to(q.dtype)
        mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
    if not same:
        q, k, v = (t.expand(*shape[:-2], *t.shape[-2:]) for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale, is_causal=causal
    )
    return out if finite_on_host(out) else None


def fused(
    q, k, v, score, mask, bias, temperature, dropout_p, causal=False, names=None,
    batch=None,
) -> torch.Tensor | None:  # fmt: skip
    """Softmax attention's output by ``F.scaled_dot_product_attention`` (checked input).

    The same mathematics as the weights path with the softmax: SDPA's fused kernels
    never form the weights. Masks become SDPA's one ``attn_mask``; a query with no key
    gets zeros, as in the weights path. None where the output on the CPU is not finite
    (the caller's weights path then names the culprit, or ignores what the mask hides).
    """
    names = names or ("q", "k", "v", "mask")
    scale = 1 / default_temperature(temperature, score, q.shape[-1])
    if batch is None:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    empty = None
    if mask is not None:
        shape = (*batch, q.shape[-2], k.shape[-2])
        mask = check_mask(mask, shape, q.device, names[3], names[0])
        empty = ~mask.any(-1, keepdim=True)
        if not traced(empty) and empty.device.type == "cpu" and not empty.any():
            empty = None
    if bias is not None:
        bias = bias.to(dtype=q.dtype)
        mask = bias if mask is None else torch.where(mask, bias, float("-inf"))
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2] == batch):
        q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale, is_causal=causal
    )
    if empty is not None:
        out = out.masked_fill(empty, 0.0)
    if traced(out):
        return out
    if out.device.type == "cpu":
        if finite_on_host(out):
            return out
        if not dropout_p:  # None: the weights path finds the culprit (or a masked NaN)
            return None
    check_on_device(  # NaN or inf in q, k, v reach the output, as overflow does
        ~torch.isfinite(out).all(),
        f"{names[0]}, {names[1]} or {names[2]} contains NaN or infinite values, or "
        f"{names[0]} {names[1]}^T / temperature overflows {q.dtype} (q and k too "
        "large, or temperature too small)",
    )
    return out


#: The names whose attention the flash kernels compute, and their α ("entmax" is
#: ``normalizers.entmax`` at its default, 1.5-entmax).
_FLASH_ALPHAS = {"sparsemax": 2.0, "entmax": 1.5}
_FLOAT32_MAX = torch.finfo(torch.float32).max


def flashable(
    q, k, v, score, normalizer, need_weights, bias, dropout_p, temperature
) -> bool:  # fmt: skip
    """Whether the flash entmax kernels compute this attention: sparsemax or entmax
    with a dot score, no weights asked, no additive mask or dropout, a scale
    ``1 / temperature`` that float32 holds, on CUDA tensors that the kernels take."""
    return (
        not need_weights
        and isinstance(normalizer, str)
        and normalizer in _FLASH_ALPHAS
        and score in FUSED_SCORES
        and bias is None
        and not dropout_p
        and 1 / default_temperature(temperature, score, q.shape[-1]) <= _FLOAT32_MAX
        and triton_flash.accepts(q, k, v)
    )


def flash(
    q, k, v, score, normalizer, mask, temperature, causal, mask_name="mask"
) -> torch.Tensor | None:  # fmt: skip
    """Sparsemax or 1.5-entmax attention's output by the flash kernels (checked input).

    The same mathematics as the weights path with that normalizer, without the
    weights: each query's threshold is found over blocks of keys, then the blocks of
    keys whose weights are all zero are skipped (``attnlib.functional._triton_flash``).
    As in the weights path, the row maximum is subtracted before the scores are divided
    by the temperature, and a query with no key gets zeros. None where Triton cannot
    build the kernel (the caller computes densely).
    """
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:  # checked, but passed unexpanded (its broadcast dims stay 0)
        mask = check_mask(mask, (*batch, q.shape[-2], k.shape[-2]), q.device, mask_name)
    out = triton_flash.flash_entmax_attention(
        q, k, v, alpha=_FLASH_ALPHAS[normalizer], mask=mask, causal=causal,
        scale=1 / default_temperature(temperature, score, q.shape[-1]),
    )  # fmt: skip
    if out is None:  # Triton refused the kernel: attention's dense path computes
        return None
    check_on_device(  # the kernels write NaN in a row whose q·k is NaN or +inf
        ~torch.isfinite(out).all(),
        "score(q, k) gave NaN or +inf in a row (q and k too large for float32)",
    )
    return out
