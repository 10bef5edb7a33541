"""The closed-form learners of chapter 06: the floors a trained learner must beat.

Each has a ``fit(x, y)`` that solves its problem exactly, so the learning curves
(``curves``) fit them once instead of tuning them: a constant (:class:`MeanBaseline`),
one scalar (:class:`ScaledInput`), and a linear map of the flattened sequence with a
fixed penalty (:class:`RidgeBaseline`) or one chosen by leave-one-out
(:class:`RidgeCVBaseline`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...utils import as_tensor, check_int, check_positive

__all__ = [
    "MeanBaseline",
    "ScaledInput",
    "RidgeBaseline",
    "RidgeCVBaseline",
]


def _fixed_length(x: torch.Tensor, length: int, embed_dim: int) -> torch.Tensor:
    """``x``, checked to end in ``(length, embed_dim)``: one fixed-length input."""
    if x.shape[-2:] != (length, embed_dim):
        raise ValueError(
            f"x must end in shape ({length}, {embed_dim}), got {tuple(x.shape)}"
        )
    return x


class MeanBaseline(nn.Module):
    """Predict every output token as the mean training target token, whatever the input.

    Fitted in closed form by :meth:`fit`; takes sequences of any length. Its relative
    error is the floor that any learner must beat to have learned something from the
    inputs.

    Parameters
    ----------
    embed_dim : int
        Token size.
    """

    def __init__(self, embed_dim: int):
        super().__init__()
        self.mean = nn.Parameter(
            torch.zeros(check_int(embed_dim, "embed_dim")), requires_grad=False
        )

    def _tokens(self, t: torch.Tensor, name: str) -> torch.Tensor:
        """``t``, checked to hold tokens of ``embed_dim`` features."""
        if t.shape[-1] != self.mean.shape[0]:
            raise ValueError(
                f"{name} must have embed_dim = {self.mean.shape[0]} features, "
                f"got shape {tuple(t.shape)}"
            )
        return t

    def fit(self, x, y) -> MeanBaseline:
        """Set the mean from the targets.

        Parameters
        ----------
        x : tensor or array-like, any shape
            The inputs (unused: the mean ignores them).
        y : tensor or array-like, shape (n_sequences, length, embed_dim)
            The targets.

        Returns
        -------
        MeanBaseline
            ``self``, fitted (the mean in ``y``'s dtype).
        """
        y = self._tokens(as_tensor(y, "y", min_ndim=3), "y")
        # Kept in y's dtype: a float64 target's mean is not rounded to float32.
        self.mean.data = y.reshape(-1, y.shape[-1]).mean(0).to(self.mean.device)
        return self

    def forward(self, x) -> torch.Tensor:
        """The mean token, broadcast to the shape of ``x``.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, embed_dim)
            Token sequences of any length.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The mean token at every position.
        """
        x = self._tokens(as_tensor(x, "x", min_ndim=2), "x")
        dtype = torch.promote_types(x.dtype, self.mean.dtype)
        return self.mean.to(dtype).expand(x.shape)


class RidgeBaseline(nn.Module):
    """Ridge regression of the flattened target sequence on the flattened input.

    Fitted in closed form by :meth:`fit`, with penalty ``ridge`` times the number of
    training sequences: the linear counterpart of
    :class:`~attnlib.symmetry.experiments.SequenceMLP` (the same fixed length).

    Parameters
    ----------
    length : int
        The one sequence length it accepts.
    embed_dim : int
        Token size.
    ridge : float
        The penalty per training sequence.
    """

    def __init__(self, length: int, embed_dim: int, ridge: float = 1.0):
        super().__init__()
        self.length, self.embed_dim = (
            check_int(length, "length"),
            check_int(embed_dim, "embed_dim"),
        )
        self.ridge = check_positive(ridge, "ridge")
        size = self.length * self.embed_dim
        self.linear = nn.Linear(size, size).requires_grad_(False)

    def _training_pair(self, x, y) -> tuple[torch.Tensor, torch.Tensor]:
        """``x, y`` checked as ``(n, length, embed_dim)``; the map in their dtype."""
        x, y = as_tensor(x, "x", ndim=3), as_tensor(y, "y", ndim=3)
        shape = (self.length, self.embed_dim)
        for t, name in ((x, "x"), (y, "y")):
            if t.shape[1:] != shape or len(t) != len(x):
                raise ValueError(
                    f"{name} must have shape ({len(x)}, {shape[0]}, {shape[1]}), "
                    f"got {tuple(t.shape)}"
                )
        # The fit keeps the data's common dtype (float64 data gives a float64 map).
        self.linear.to(torch.promote_types(x.dtype, y.dtype))
        return x, y

    def fit(self, x, y) -> RidgeBaseline:
        """Solve the ridge problem in float64.

        Parameters
        ----------
        x, y : tensor or array-like, shape (n_sequences, length, embed_dim)
            Inputs and targets.

        Returns
        -------
        RidgeBaseline
            ``self``, fitted (the map in the data's common dtype).
        """
        x, y = self._training_pair(x, y)
        x, y = x.flatten(-2).double(), y.flatten(-2).double()
        xm, ym = x.mean(0), y.mean(0)
        xc, yc = x - xm, y - ym
        eye = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
        gram = xc.T @ xc + self.ridge * len(x) * eye
        coef = torch.linalg.solve(gram, xc.T @ yc)  # (in, out)
        self.linear.weight.data = coef.T.to(self.linear.weight)
        self.linear.bias.data = (ym - xm @ coef).to(self.linear.bias)
        return self

    def forward(self, x) -> torch.Tensor:
        """Map ``x`` to a sequence of the same shape.

        Parameters
        ----------
        x : tensor or array-like, shape (..., length, embed_dim)
            Token sequences.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The predicted sequences.
        """
        x = _fixed_length(as_tensor(x, "x", min_ndim=2), self.length, self.embed_dim)
        w, b = self.linear.weight, self.linear.bias
        dtype = torch.promote_types(x.dtype, w.dtype)
        out = nn.functional.linear(x.flatten(-2).to(dtype), w.to(dtype), b.to(dtype))
        return out.unflatten(-1, (self.length, self.embed_dim))


class ScaledInput(nn.Module):
    """Predict ``s X``: one scalar, fitted in closed form by least squares.

    The smallest map that is orthogonal equivariant and permutation equivariant and
    uses its input: every output token is its own input token, scaled. A learner that
    does not beat it has learned nothing about how tokens mix.
    """

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.zeros(()), requires_grad=False)

    def fit(self, x, y) -> ScaledInput:
        """Set ``s = <X, Y> / <X, X>``, the least-squares scalar.

        Parameters
        ----------
        x, y : tensor or array-like, shape (n_sequences, length, embed_dim)
            Inputs and targets.

        Returns
        -------
        ScaledInput
            ``self``, fitted.
        """
        x = as_tensor(x, "x", min_ndim=2)
        y = as_tensor(y, "y", min_ndim=2, device=x.device)
        if x.shape != y.shape:
            raise ValueError(
                f"y must have x's shape {tuple(x.shape)}, got {tuple(y.shape)}"
            )
        # Kept in the data's common dtype: float64 data is not rounded to float32.
        dtype = torch.promote_types(x.dtype, y.dtype)
        x, y = x.double(), y.double()
        power = (x * x).sum()
        if power == 0:
            raise ValueError("x is zero: the scale is undefined")
        self.scale.data = ((x * y).sum() / power).to(dtype)
        return self

    def forward(self, x) -> torch.Tensor:
        """``s x``.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, d)
            Token sequences of any length.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The scaled tokens.
        """
        x = as_tensor(x, "x", min_ndim=2)
        dtype = torch.promote_types(x.dtype, self.scale.dtype)
        return self.scale.to(dtype) * x.to(dtype)


#: The penalties ridge chooses from: 1e-3 to 1e4, two per decade.
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 4, 15))


class RidgeCVBaseline(RidgeBaseline):
    """:class:`RidgeBaseline`, its penalty chosen by leave-one-out on the training data.

    scikit-learn's :class:`~sklearn.linear_model.RidgeCV` picks it from ``alphas``,
    leaving one sequence out at a time (in closed form); the fitted map is copied into
    the module.

    Parameters
    ----------
    length, embed_dim : int
        The one sequence length it accepts, and the token size.
    alphas : sequence of float
        Candidate penalties (scikit-learn's ``alpha``: not scaled by the sample count).
    """

    def __init__(self, length: int, embed_dim: int, alphas=RIDGE_ALPHAS):
        super().__init__(length, embed_dim)
        self.alphas = tuple(check_positive(a, "alphas") for a in alphas)
        if not self.alphas:
            raise ValueError("alphas must hold at least one penalty")
        self.alpha_ = None

    def fit(self, x, y) -> RidgeCVBaseline:
        """Choose the penalty by leave-one-out and fit (in float64).

        Parameters
        ----------
        x, y : tensor or array-like, shape (n_sequences, length, embed_dim)
            Inputs and targets.

        Returns
        -------
        RidgeCVBaseline
            ``self``, fitted; ``alpha_`` is the chosen penalty.
        """
        from sklearn.linear_model import RidgeCV

        x, y = self._training_pair(x, y)
        xf = x.flatten(-2).double().cpu().numpy()
        yf = y.flatten(-2).double().cpu().numpy()
        fit = RidgeCV(alphas=self.alphas).fit(xf, yf)
        self.alpha_ = float(fit.alpha_)
        w = self.linear.weight
        self.linear.weight.data = torch.as_tensor(fit.coef_).to(w)
        self.linear.bias.data = torch.as_tensor(fit.intercept_).to(w)
        return self
