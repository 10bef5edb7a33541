"""The multiplexers: a hard choice, its straight-through and softmax relaxations.

The hard maps themselves, :func:`hardmax` and :func:`straight_through_hardmax`, are
normalisers like the others (``attnlib.normalizers.hard``), named here too.

A multiplexer reads *one* input chosen by a control signal, wherever that input sits.
Replacing the hard choice (argmax) by a softmax makes the choice differentiable, and
scoring every input by a bilinear form ``x_iᵀ KᵀQ C_j`` gives attention.
"""

from __future__ import annotations

import torch

from ..functional import AttentionResult, attend
from ..normalizers import hardmax, straight_through_hardmax
from ..utils import as_tensor

__all__ = [
    "ROUTER_NORMALIZERS",
    "hard_mux",
    "hardmax",
    "soft_mux",
    "straight_through_hardmax",
]

# ------------------------------------------------------------------------- multiplexers


def hard_mux(inputs, control) -> torch.Tensor:
    """A literal multiplexer: output ``inputs[..., control[...], :]``.

    Parameters
    ----------
    inputs : tensor, shape (..., n, d)
        The signals ``h_i``, one per row.
    control : int tensor, shape (...)
        Which input each multiplexer passes through.

    Returns
    -------
    torch.Tensor, shape (..., d)
        The selected rows.

    Implements
    ----------
    The multiplexer of the attention note: a control signal lets exactly one
    of the inputs through.
    """
    inputs = as_tensor(inputs, "inputs", min_ndim=2)
    try:
        control = torch.as_tensor(control, device=inputs.device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(
            f"control must be integer indices, got {type(control).__name__}"
        ) from err
    if control.is_floating_point() or control.dtype == torch.bool:
        raise ValueError(
            f"control must hold integer indices, got dtype {control.dtype}"
        )
    if control.shape != inputs.shape[:-2]:
        raise ValueError(
            f"control must have shape {tuple(inputs.shape[:-2])}, got "
            f"{tuple(control.shape)}"
        )
    if control.numel() and (control.min() < 0 or control.max() >= inputs.shape[-2]):
        raise ValueError(
            f"control must lie in [0, {inputs.shape[-2]}), got values outside"
        )
    index = control[..., None, None].expand(*control.shape, 1, inputs.shape[-1])
    return inputs.gather(-2, index).squeeze(-2)


#: The normalizers the routers accept, by their names in
#: :data:`attnlib.normalizers.NORMALIZERS`: the soft choice (softmax), the hard one (no
#: gradient), and the hard one with the softmax's gradient (straight-through).
ROUTER_NORMALIZERS = ("softmax", "hardmax", "straight_through")


def _normalizer(name: str) -> str:
    if name not in ROUTER_NORMALIZERS:
        raise ValueError(
            f"normalizer must be one of {sorted(ROUTER_NORMALIZERS)}, got {name!r}"
        )
    return name


def soft_mux(
    inputs, importance, *, temperature: float = 1.0, normalizer: str = "softmax"
):
    """The differentiable multiplexer: ``Σ_i softmax(a / T)_i h_i``.

    Parameters
    ----------
    inputs : tensor, shape (..., n, d)
        The signals ``h_i``, one per row.
    importance : tensor, shape (..., n)
        The importances ``a_i = a(h_i, C)`` (the control signal, scored).
    temperature : float
        Positive; as it goes to 0 the output tends to the input of largest importance.
    normalizer : {"softmax", "hardmax", "straight_through"}

    Returns
    -------
    AttentionResult
        ``output`` of shape ``(..., d)`` and ``weights`` of shape ``(..., n)``.

    Implements
    ----------
    The note's "most relevant input = ⟨softmax(a), h⟩", written as one query
    whose scores against the keys are the importances.
    """
    inputs = as_tensor(inputs, "inputs", min_ndim=2)
    importance = as_tensor(importance, "importance", device=inputs.device)
    dtype = torch.promote_types(inputs.dtype, importance.dtype)
    inputs, importance = inputs.to(dtype), importance.to(dtype)
    if temperature is None:  # attend's default: it checks any other temperature
        raise ValueError("temperature must be a finite positive number, got None")
    if importance.shape != inputs.shape[:-1]:
        raise ValueError(
            f"importance must have shape {tuple(inputs.shape[:-1])}, got "
            f"{tuple(importance.shape)}"
        )
    # One query equal to 1 against one-feature keys a_i: the "dot" score is a_i itself.
    query = torch.ones(
        *importance.shape[:-1], 1, 1, dtype=inputs.dtype, device=inputs.device
    )
    out, weights = attend(
        query,
        importance.unsqueeze(-1),
        inputs,
        score="dot",
        normalizer=_normalizer(normalizer),
        temperature=temperature,
    )
    return _squeeze_query(out, weights)


def _squeeze_query(out, weights) -> AttentionResult:
    # One query per multiplexer: drop its axis.
    return AttentionResult(out.squeeze(-2), weights.squeeze(-2))
