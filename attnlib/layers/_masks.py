"""torch's masks of ``nn.MultiheadAttention`` as the one mask of :func:`attend`.

``key_padding_mask`` and ``attn_mask`` follow torch (a bool True marks a key that may
*not* be attended; a float mask is added to the scores); attnlib's ``mask`` follows
SDPA (True where a query may attend). They are checked against the shapes torch
expects, with messages in the caller's terms, and merged: into one bool mask when
all are bool (so that :func:`attend` keeps its fast paths), else into one float mask.
Nothing here reads the masks' values: the merge is traceable by ``torch.compile``.
"""

from __future__ import annotations

import math

import torch

__all__ = ["merge"]


def _as_mask(m, name: str, like: torch.Tensor) -> torch.Tensor:
    """``m`` as a bool or floating tensor on ``like``'s device, in ``like``'s dtype
    if floating; a tensor elsewhere or of another floating dtype is refused."""
    if isinstance(m, torch.Tensor):
        if m.device != like.device:
            raise ValueError(
                f"{name} is on {m.device} but query on {like.device}: move it there "
                f"with {name}.to(query.device)"
            )
    else:
        m = torch.as_tensor(m, device=like.device)
    if m.dtype != torch.bool and not m.is_floating_point():
        raise ValueError(
            f"{name} must be boolean or floating (added to the scores), got {m.dtype}"
        )
    if m.is_floating_point() and m.dtype != like.dtype:
        raise ValueError(
            f"a float {name} must have the query's dtype {like.dtype} (call .to()), "
            f"got {m.dtype}"
        )
    return m


def _keep(m: torch.Tensor, blocked_when: bool) -> torch.Tensor:
    """A bool mask in attnlib's polarity (True = may attend), or a float mask as is."""
    return m if m.is_floating_point() else m != blocked_when


def merge(
    key_padding_mask, attn_mask, mask, is_causal: bool, *, batch: tuple,
    heads: int, n_q: int, n_k: int, extra: int, like: torch.Tensor, layout: str,
):  # fmt: skip
    """The masks as one mask broadcastable to ``(*batch, heads, n_q, n_k + extra)``.

    Parameters
    ----------
    key_padding_mask, attn_mask : tensor or None
        torch's, for ``n_k`` keys (True marks a key that may not be attended).
    mask : tensor or None
        attnlib's, broadcastable to ``(*batch, heads, n_q, n_k)`` (True = may attend).
    is_causal : bool
        Fold the causal mask in (asked only when keys were appended).
    batch, heads, n_q, n_k : tuple, int
        The batch dimensions, heads, queries and keys of the caller's input.
    extra : int
        Keys appended after the caller's (``add_bias_kv``, ``add_zero_attn``): every
        query may attend to them, as in torch.
    like : tensor
        The query, for the device and dtype.
    layout : str
        How the caller's layout names the batch, for messages: ``"N"``.

    Returns
    -------
    tensor or None
        A bool mask (True = may attend) when every mask given is bool, else a float
        mask added to the scores (``-inf`` where a bool mask blocks).
    """
    parts = []
    if key_padding_mask is not None:
        kpm = _as_mask(key_padding_mask, "key_padding_mask", like)
        if tuple(kpm.shape) != (*batch, n_k):
            want = f"({layout}, S) = {(*batch, n_k)}" if batch else f"(S,) = ({n_k},)"
            raise ValueError(
                f"key_padding_mask must have shape {want}, one entry per key, got "
                f"{tuple(kpm.shape)}"
            )
        parts.append(_keep(kpm, True)[..., None, None, :])  # (*batch, 1, 1, n_k)
    if attn_mask is not None:
        am = _as_mask(attn_mask, "attn_mask", like)
        flat = math.prod(batch) * heads
        if am.ndim == 3 and tuple(am.shape) == (flat, n_q, n_k):
            am = am.reshape(*batch, heads, n_q, n_k)  # (N * num_heads, L, S)
        elif am.ndim != 2 or tuple(am.shape) != (n_q, n_k):
            raise ValueError(
                f"attn_mask must have shape (L, S) = ({n_q}, {n_k}) or ({layout} * "
                f"num_heads, L, S) = ({flat}, {n_q}, {n_k}), got {tuple(am.shape)}"
            )
        parts.append(_keep(am, True))
    if mask is not None:
        m = _as_mask(mask, "mask", like)
        shape = (*batch, heads, n_q, n_k)
        try:
            torch.broadcast_shapes(m.shape, shape)
        except RuntimeError as err:
            raise ValueError(
                f"mask of shape {tuple(m.shape)} does not broadcast to (..., "
                f"num_heads, L, S) = {shape}"
            ) from err
        parts.append(m)
    if is_causal:
        parts.append(torch.ones(n_q, n_k, dtype=torch.bool, device=like.device).tril())
    if not parts:
        return None
    if all(p.dtype == torch.bool for p in parts):
        total = parts[0]
        for p in parts[1:]:
            total = total & p
        fill = True
    else:
        total = torch.zeros((), dtype=like.dtype, device=like.device)
        for p in parts:
            if not p.is_floating_point():  # a bool mask: -inf where blocked
                p = torch.zeros(
                    p.shape, dtype=like.dtype, device=like.device
                ).masked_fill(~p, float("-inf"))
            total = total + p
        fill = 0.0
    if extra:  # the appended keys may always be attended
        pad = torch.full((*total.shape[:-1], extra), fill, device=like.device)
        total = torch.cat([total, pad.to(total.dtype)], -1)
    return total
