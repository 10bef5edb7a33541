"""Self-expression on the simplex: each point a convex combination of the others.

:func:`normalized_self_expression` fits free logits, one row per point with its own
entry masked, through softmax or sparsemax to the self-expression loss: the
coefficients that attention's normalisers would give if they were fitted rather than
computed from scores.
"""

from __future__ import annotations

import torch

from ...normalizers import softmax, sparsemax
from ...utils import as_float_array, check_int, check_positive
from ...utils.validation import SEED_MAX

__all__ = ["normalized_self_expression"]


def normalized_self_expression(
    X,
    normalizer: str = "softmax",
    *,
    n_steps: int = 300,
    lr: float = 0.1,
    seed: int = 0,
    device: torch.device | str | None = None,
):
    """Self-expressive coefficients on the simplex: ``C = normalizer(Z)``.

    ``Z`` is fitted to ``½‖X − C X‖²``.

    Each row of ``C`` is the softmax or sparsemax of free logits (the diagonal masked),
    so each point is written as a convex combination of the others; Adam on the logits.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        The points, one per row.
    normalizer : {"softmax", "sparsemax"}
        Maps each row of logits to the simplex.
    n_steps : int
        Adam steps.
    lr : float
        Adam's learning rate.
    seed : int
        Seeds the initial logits.
    device : str or torch.device, optional
        Where ``X``, the model and the fit live (default: the CPU).

    Returns
    -------
    C : ndarray, shape (n_samples, n_samples)
        Rows on the probability simplex, zero diagonal.
    """
    norm = {"softmax": softmax, "sparsemax": sparsemax}.get(normalizer)
    if norm is None:
        raise ValueError(
            f"normalizer must be 'softmax' or 'sparsemax', got {normalizer!r}"
        )
    X = torch.as_tensor(as_float_array(X, "X"), device=device)
    lr = check_positive(lr, "lr")
    torch.manual_seed(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    # Drawn on the CPU and moved: the same seed gives the same start on every device.
    Z = (0.01 * torch.randn(len(X), len(X), dtype=X.dtype)).to(X.device)
    Z.requires_grad_()
    mask = torch.eye(len(X), dtype=torch.bool, device=X.device)
    opt = torch.optim.Adam([Z], lr=lr)
    for _ in range(check_int(n_steps, "n_steps")):
        C = norm(Z.masked_fill(mask, -torch.inf), dim=-1)
        loss = 0.5 * ((X - C @ X) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return norm(Z.masked_fill(mask, -torch.inf), dim=-1).cpu().numpy()
