"""The maps as ``torch.compile``, ``torch.export`` and ``vmap`` see them.

Outside a trace the maps run as ``maps._Softmax`` and ``maps._Entmax``, whose forward
passes choose an engine by reading values (the compiled row loops on the CPU through
data pointers, a fully masked row found by ``.any()``, Triton's first-use check). A
graph has no values to read, so while one is traced (``attnlib.utils.traced``) the maps
take the engine that needs none: the sort-based thresholds of ``_entmax`` (bisection
for other α), every fully masked row zeroed unconditionally, and the closed-form
backward of ``_entmax`` in an ``autograd.Function`` that ``vmap`` can batch. The
numbers are the same maps' up to the round-off of another engine.
"""

from __future__ import annotations

import torch

from . import _entmax as entmax_engine
from .common import _compute_dtype

__all__: list[str] = []


def _live(x: torch.Tensor):
    """``x`` with its entirely ``-inf`` rows set to 0, those rows, the row maxima."""
    top = x.amax(-1, keepdim=True)
    dead = torch.isneginf(top)
    return x.masked_fill(dead, 0), dead, top.masked_fill(dead, 0)


def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    """Softmax of the rows of ``x`` (last dimension), zeros on a fully masked row."""
    z, dead, _ = _live(x)
    return torch.softmax(z, -1).masked_fill(dead, 0)


class _EntmaxRows(torch.autograd.Function):
    """α-entmax of prepared rows: forward by the sort (or bisection) engine, backward
    in closed form; written in the functional style that ``vmap`` batches."""

    generate_vmap_rule = True

    @staticmethod
    def forward(z, top, alpha):
        return entmax_engine.threshold_map(z, top, alpha, _compute_dtype(z)).to(z.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]
        ctx.alpha_is_tensor = isinstance(inputs[2], torch.Tensor)
        ctx.save_for_backward(output, *([inputs[2]] if ctx.alpha_is_tensor else []))

    @staticmethod
    def backward(ctx, g):
        out, *saved = ctx.saved_tensors
        alpha = saved[0] if ctx.alpha_is_tensor else ctx.alpha
        cd = _compute_dtype(out)
        p, g = out.to(cd), g.to(cd)
        grad = entmax_engine.entmax_vjp(p, g, alpha, differentiable=True)
        grad_alpha = None
        if ctx.alpha_is_tensor and ctx.needs_input_grad[2]:
            grad_alpha = entmax_engine.entmax_alpha_vjp(p, g, alpha)
        return grad.to(out.dtype), None, grad_alpha


def entmax_rows(x: torch.Tensor, alpha) -> torch.Tensor:
    """α-entmax of the rows of ``x`` (last dimension), zeros on a fully masked row."""
    z, dead, top = _live(x)
    return _EntmaxRows.apply(z, top, alpha).masked_fill(dead, 0)
