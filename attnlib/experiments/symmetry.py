"""Chapter 06's learning curves: which parameterisation learns a target with knowledge.

A *teacher* that is orthogonal equivariant with knowledge labels Gaussian token
sequences; *learners* that fix different parts of the map and learn the rest are fitted
to growing training sets, each tuned on a validation split, and scored on clean test
sequences of the training length and of lengths never seen.

Two teachers share the same symmetries (orthogonal equivariance with knowledge,
permutation equivariance); each seed draws a new teacher, new data and a new
initialisation:

* ``"quadratic"``: a random one-head :class:`~attnlib.symmetry.KnowledgeAttention`,
  scores ``Y A Yᵀ`` with ``Y = X Zᵀ``, exactly the form the ``KnowledgeAttention``
  learner fits (and, with ``W_O W_V`` a multiple of the identity, a
  ``MultiHeadAttention`` head's);
* ``"rbf"``: the same layer with the RBF score ``-‖(yᵢ - yⱼ) A‖² / 2`` (§3.3 of the
  symmetry paper), which no quadratic score reproduces (it contains ``-‖yⱼ A‖²/2``, a
  term in the key alone that softmax does not cancel).

The learners (``LEARNERS``) are named by what they learn: a constant (``"mean"``), one
scalar (``"scaled input"``, ``s X``), a linear map of the flattened sequence with its
penalty chosen by leave-one-out (``"ridge"``), an MLP on the flattened sequence, one
standard attention head (four ``d x d`` projections), and ``KnowledgeAttention`` with a
scalar or a matrix value map, and with a learned skip scalar.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from ..attention import output_of
from ..layers import MultiHeadAttention
from ..symmetry import KnowledgeAttention
from ..training import TrainingDivergedError, train
from ..utils import as_tensor, check_int, check_positive, module_input

__all__ = [
    "TEACHERS",
    "LEARNERS",
    "GRID",
    "SequenceMLP",
    "MeanBaseline",
    "ScaledInput",
    "RidgeBaseline",
    "RidgeCVBaseline",
    "WithSkip",
    "make_teacher",
    "knowledge_task",
    "relative_error",
    "fit_and_score",
    "fit_tuned",
    "sample_efficiency",
    "sequences_needed",
]

TEACHERS = ("quadratic", "rbf")


class SequenceMLP(nn.Module):
    """A plain MLP on the flattened sequence: no symmetry built in, a fixed length only.

    Parameters
    ----------
    length : int
        The one sequence length it accepts.
    embed_dim : int
        Token size.
    hidden : int
        Width of the two hidden layers.
    """

    def __init__(self, length: int, embed_dim: int, hidden: int = 128):
        super().__init__()
        self.length, self.embed_dim = (
            check_int(length, "length"),
            check_int(embed_dim, "embed_dim"),
        )
        size = self.length * self.embed_dim
        hidden = check_int(hidden, "hidden")
        self.net = nn.Sequential(
            nn.Linear(size, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, size),
        )

    def forward(self, x) -> torch.Tensor:
        """Map ``x`` to a sequence of the same shape.

        Parameters
        ----------
        x : tensor or array-like, shape (..., length, embed_dim)
            Token sequences; a tensor must have the module's dtype.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The predicted sequences.
        """
        x = module_input(x, "x", self.net[0].weight, min_ndim=2)
        if x.shape[-2:] != (self.length, self.embed_dim):
            raise ValueError(
                f"x must end in shape ({self.length}, {self.embed_dim}), got "
                f"{tuple(x.shape)}"
            )
        return self.net(x.flatten(-2)).unflatten(-1, (self.length, self.embed_dim))


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
        y = as_tensor(y, "y", min_ndim=3)
        if y.shape[-1] != self.mean.shape[0]:
            raise ValueError(
                f"y must have embed_dim = {self.mean.shape[0]} features, "
                f"got shape {tuple(y.shape)}"
            )
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
        x = as_tensor(x, "x", min_ndim=2)
        if x.shape[-1] != self.mean.shape[0]:
            raise ValueError(
                f"x must have embed_dim = {self.mean.shape[0]} features, "
                f"got shape {tuple(x.shape)}"
            )
        dtype = torch.promote_types(x.dtype, self.mean.dtype)
        return self.mean.to(dtype).expand(x.shape)


class RidgeBaseline(nn.Module):
    """Ridge regression of the flattened target sequence on the flattened input.

    The linear counterpart of :class:`~attnlib.experiments.symmetry.SequenceMLP` (same
    inputs, same fixed length), fitted in closed form by :meth:`fit` with penalty
    ``ridge`` times the number of training sequences.

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
        x = as_tensor(x, "x", min_ndim=2)
        if x.shape[-2:] != (self.length, self.embed_dim):
            raise ValueError(
                f"x must end in shape ({self.length}, {self.embed_dim}), got "
                f"{tuple(x.shape)}"
            )
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

    scikit-learn's :class:`~sklearn.linear_model.RidgeCV` (efficient leave-one-out over
    the training sequences) picks the penalty from ``alphas``; the fitted map is copied
    into the module.

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

        x, y = as_tensor(x, "x", ndim=3), as_tensor(y, "y", ndim=3)
        shape = (self.length, self.embed_dim)
        for t, name in ((x, "x"), (y, "y")):
            if t.shape[1:] != shape or len(t) != len(x):
                raise ValueError(
                    f"{name} must have shape ({len(x)}, {shape[0]}, {shape[1]}), "
                    f"got {tuple(t.shape)}"
                )
        self.linear.to(torch.promote_types(x.dtype, y.dtype))
        xf = x.flatten(-2).double().cpu().numpy()
        yf = y.flatten(-2).double().cpu().numpy()
        fit = RidgeCV(alphas=self.alphas).fit(xf, yf)
        self.alpha_ = float(fit.alpha_)
        w = self.linear.weight
        self.linear.weight.data = torch.as_tensor(fit.coef_).to(w)
        self.linear.bias.data = torch.as_tensor(fit.intercept_).to(w)
        return self


class WithSkip(nn.Module):
    """``model(x) + t x``: a model plus a learned skip scalar ``t`` (starting at 0).

    The skip term is one more equivariant map (every token keeps a multiple of
    itself), so a ``KnowledgeAttention`` with it stays equivariant with knowledge.

    Parameters
    ----------
    model : nn.Module
        Maps ``(..., n, d)`` to ``(..., n, d)``.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
        self.model = model
        self.skip = nn.Parameter(torch.zeros(()))

    def forward(self, x) -> torch.Tensor:
        """``model(x) + skip · x``.

        Parameters
        ----------
        x : tensor or array-like, shape (..., n, d)
            Token sequences.

        Returns
        -------
        torch.Tensor, shape of ``x``
            The model's output plus the skip term.
        """
        out = output_of(self.model(x))
        x = as_tensor(x, "x", min_ndim=2, dtype=out.dtype, device=out.device)
        return out + self.skip.to(out) * x


# name -> factory(length, embed_dim, n_knowledge). A module with a ``fit`` method is
# fitted in closed form; any other is trained and tuned (``GRID``).
LEARNERS: dict[str, Callable[[int, int, int], nn.Module]] = {
    "mean": lambda n, d, k: MeanBaseline(d),
    "scaled input": lambda n, d, k: ScaledInput(),
    "ridge": lambda n, d, k: RidgeCVBaseline(n, d),
    "MLP": lambda n, d, k: SequenceMLP(n, d, hidden=64),
    "MultiHeadAttention": lambda n, d, k: MultiHeadAttention(d, 1),
    "KnowledgeAttention, linear value": lambda n, d, k: KnowledgeAttention(
        d, k, value="linear"
    ),
    "KnowledgeAttention": lambda n, d, k: KnowledgeAttention(d, k),
    "KnowledgeAttention + skip": lambda n, d, k: WithSkip(KnowledgeAttention(d, k)),
}

#: The validation grid every trained learner is tuned on: Adam's learning rate, its
#: (coupled, L2) weight decay, and the number of full-batch steps.
GRID = {"lr": (1e-2, 3e-2), "weight_decay": (0.0, 1e-3), "n_steps": (100, 300)}


def make_teacher(
    embed_dim: int,
    n_knowledge: int,
    *,
    kernel: str = "quadratic",
    sharpness: float = 2.0,
    seed: int = 0,
) -> KnowledgeAttention:
    """A random one-head :class:`~attnlib.symmetry.KnowledgeAttention`, scalar values.

    With ``value="scalar"``.

    ``kernel`` is one of ``TEACHERS``: ``"quadratic"`` lies in the class of the
    ``KnowledgeAttention`` learner, ``"rbf"`` has the same symmetries but lies outside
    it. ``sharpness`` scales the knowledge vectors, hence the scores by its square:
    larger values give peakier attention and a harder task.

    Parameters
    ----------
    embed_dim, n_knowledge : int
        Token size and knowledge vectors.
    kernel : str
        One of ``TEACHERS``.
    sharpness : float
        Scales the knowledge vectors.
    seed : int
        Seeds the teacher's parameters.

    Returns
    -------
    KnowledgeAttention
        The teacher, without gradients.

    Implements
    ----------
    A target that is orthogonal equivariant with knowledge (Definition 2 of the symmetry
    paper, seed 003) and permutation equivariant; the RBF score is the kernel of its
    §3.3.
    """
    if kernel not in TEACHERS:
        raise ValueError(f"kernel must be one of {TEACHERS}, got {kernel!r}")
    check_positive(sharpness, "sharpness")
    torch.manual_seed(check_int(seed, "seed", minimum=0))
    teacher = KnowledgeAttention(embed_dim, n_knowledge, kernel=kernel)
    with torch.no_grad():
        teacher.knowledge.mul_(sharpness)
        try:  # a unit-scale probe: its scores must not overflow
            teacher(torch.randn(1, 2, embed_dim))
        except ValueError as err:
            raise ValueError(
                f"sharpness = {sharpness} makes the teacher's scores overflow; "
                "use a smaller one"
            ) from err
    return teacher.requires_grad_(False)


def knowledge_task(
    teacher: nn.Module,
    n_sequences: int,
    length: int,
    *,
    noise: float = 0.0,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian token sequences ``X`` ``(n_sequences, length, d)``, noisy targets.

    The clean targets are equivariant with the teacher's knowledge whenever the teacher
    is (a :class:`~attnlib.symmetry.KnowledgeAttention` with ``value="scalar"``);
    ``noise`` is the standard deviation of the Gaussian noise added to every target
    entry.

    Parameters
    ----------
    teacher : nn.Module
        A module with an ``embed_dim`` (:func:`make_teacher`).
    n_sequences, length : int
        Sequences and tokens per sequence.
    noise : float
        Standard deviation of the label noise.
    seed : int
        The same seed gives the same data.

    Returns
    -------
    x, y : torch.Tensor, shape (n_sequences, length, embed_dim)
        Inputs and noisy targets, in the teacher's dtype.
    """
    n_sequences, length = (
        check_int(n_sequences, "n_sequences"),
        check_int(length, "length"),
    )
    noise = check_positive(noise, "noise", allow_zero=True)
    if not (isinstance(teacher, nn.Module) and hasattr(teacher, "embed_dim")):
        raise ValueError(
            "teacher must be a module with an embed_dim, such as make_teacher's, "
            f"got {type(teacher).__name__}"
        )
    g = torch.Generator().manual_seed(check_int(seed, "seed", minimum=0))
    p = next(teacher.parameters())
    x = torch.randn(n_sequences, length, teacher.embed_dim, generator=g).to(p)
    eps = noise * torch.randn(x.shape, generator=g).to(p)
    with torch.no_grad():
        return x, teacher(x) + eps


def relative_error(model: Callable, x, y) -> float:
    """``‖model(x) − y‖² / ‖y‖²`` without gradients: 0 is perfect, 1 is predicting zero.

    Parameters
    ----------
    model : callable
        Maps ``x`` to a tensor (or an attention result) of ``y``'s shape.
    x : tensor or array-like, shape (..., n, d)
        Inputs.
    y : tensor or array-like, shape of ``model(x)``
        Targets, not all zero.

    Returns
    -------
    float
        The relative squared error, computed in float64.
    """
    if not callable(model):
        raise ValueError(f"model must be callable, got {type(model).__name__}")
    x = as_tensor(x, "x", min_ndim=2)
    y = as_tensor(y, "y", min_ndim=2, device=x.device)
    with torch.no_grad():
        pred = output_of(model(x))
        y = y.to(pred.device)  # a module computes where its parameters are
        if pred.shape != y.shape:
            raise ValueError(
                f"model(x) has shape {tuple(pred.shape)} but y has {tuple(y.shape)}"
            )
        # In float64: squared norms of float32 data under- or overflow at 1e±20.
        pred, y = pred.double(), y.double()
        scale = (y**2).sum()
        if scale == 0:
            raise ValueError("y is zero: the relative error is undefined")
        return float(((pred - y) ** 2).sum() / scale)


def fit_and_score(
    model: nn.Module,
    train_data: tuple,
    test_data: dict,
    *,
    n_steps: int = 300,
    lr: float = 1e-2,
    weight_decay: float = 0.0,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Fit ``model`` to ``train_data = (X, Y)``, then score it.

    A model with a ``fit`` method (the baselines) is fitted in closed form; any other by
    full-batch mean squared error through :func:`attnlib.training.train`. ``test_data``
    maps a name to ``(X, Y)``; the result maps ``"train"`` to the final training error
    relative to the target power and each test name to :func:`relative_error`, or NaN
    where the model cannot take that input (a fixed-length model on another sequence
    length).

    Parameters
    ----------
    model : nn.Module
        A learner (see ``LEARNERS``).
    train_data : tuple of tensor, each of shape (n_sequences, length, embed_dim)
        ``(X, Y)``.
    test_data : dict
        Name to ``(X, Y)``.
    n_steps, lr, weight_decay : int, float, float
        The training loop's (:func:`attnlib.training.train`).
    seed : int
        Seeds the training.
    progress : bool
        Show the training's progress bar.

    Returns
    -------
    dict
        ``"train"`` and each test name to a relative error.
    """
    seed = check_int(seed, "seed", minimum=0)
    x, y = train_data
    if hasattr(model, "fit"):
        model.fit(x, y)
        with torch.no_grad():
            final = float(((output_of(model(x)) - y) ** 2).mean())
    else:

        def loss(m, batch):
            return ((output_of(m(batch[0])) - batch[1]) ** 2).mean()

        history = train(
            model,
            loss,
            [(x, y)],
            n_steps=n_steps,
            lr=lr,
            weight_decay=weight_decay,
            seed=seed,
            progress=progress,
        )
        final = history[-1]
    scores = {"train": final / float((y**2).mean())}
    for name, (xt, yt) in test_data.items():
        try:
            scores[name] = relative_error(model, xt, yt)
        except ValueError:
            scores[name] = float("nan")
    return scores


def _mse(model, x, y) -> float:
    with torch.no_grad():
        return float(((output_of(model(x)) - y) ** 2).mean())


def fit_tuned(
    make: Callable[[], nn.Module],
    train_data: tuple,
    *,
    grid: dict | None = None,
    val_fraction: float = 0.25,
    seed: int = 0,
) -> tuple[nn.Module, dict]:
    """Tune a trained learner on a validation split, then refit it on all the data.

    The last ``ceil(val_fraction · n)`` sequences (at least one) are held out. For each
    learning rate and weight decay of ``grid`` a fresh model (``make()`` after seeding
    with ``seed``) is trained on the rest for ``max(grid["n_steps"])`` full-batch Adam
    steps, and its validation error is read after each number of steps in
    ``grid["n_steps"]``. The setting with the lowest validation error is then trained
    from the same initialisation on every sequence.

    Parameters
    ----------
    make : callable
        Builds an untrained model.
    train_data : tuple of tensor, each of shape (n_sequences, length, embed_dim)
        ``(X, Y)``, at least two sequences.
    grid : dict, optional
        ``"lr"``, ``"weight_decay"`` and ``"n_steps"`` to sequences of values; ``GRID``
        by default.
    val_fraction : float
        The share held out, in (0, 1).
    seed : int
        Seeds every initialisation and training run.

    Returns
    -------
    model : nn.Module
        Trained on every sequence with the chosen setting.
    chosen : dict
        ``lr``, ``weight_decay``, ``n_steps`` and ``val`` (the validation mean squared
        error relative to the held-out targets' power).
    """
    grid = GRID if grid is None else grid
    if set(grid) != {"lr", "weight_decay", "n_steps"} or not all(grid.values()):
        raise ValueError(
            "grid must map lr, weight_decay and n_steps to non-empty sequences, "
            f"got {grid!r}"
        )
    checkpoints = sorted({check_int(n, "n_steps") for n in grid["n_steps"]})
    seed = check_int(seed, "seed", minimum=0)
    x, y = train_data
    val_fraction = check_positive(val_fraction, "val_fraction")
    if not val_fraction < 1 or len(x) < 2:
        raise ValueError(
            "val_fraction must be below 1 and train_data must hold at least two "
            f"sequences, got {val_fraction} and {len(x)}"
        )
    n_val = max(1, math.ceil(val_fraction * len(x)))
    fit, held = (x[:-n_val], y[:-n_val]), (x[-n_val:], y[-n_val:])
    power = float((held[1] ** 2).mean())

    def loss(m, batch):
        return ((output_of(m(batch[0])) - batch[1]) ** 2).mean()

    best = {"val": math.inf}
    for lr in grid["lr"]:
        for weight_decay in grid["weight_decay"]:
            torch.manual_seed(seed)
            model = make()
            seen = {}

            def batches(step, model=model, seen=seen):
                if step in checkpoints:  # the model after `step` updates
                    seen[step] = _mse(model, *held) / power
                return fit

            try:
                train(
                    model,
                    loss,
                    batches,
                    n_steps=checkpoints[-1],
                    lr=lr,
                    weight_decay=weight_decay,
                    seed=seed,
                    device=x.device,
                    progress=False,
                )
            except TrainingDivergedError:
                continue
            seen[checkpoints[-1]] = _mse(model, *held) / power
            for n_steps, val in seen.items():
                if val < best["val"]:
                    best = dict(
                        lr=lr, weight_decay=weight_decay, n_steps=n_steps, val=val
                    )
    if not math.isfinite(best["val"]):
        raise TrainingDivergedError("every setting of the grid diverged; lower lr")
    torch.manual_seed(seed)
    model = make()
    train(
        model,
        loss,
        [(x, y)],
        n_steps=best["n_steps"],
        lr=best["lr"],
        weight_decay=best["weight_decay"],
        seed=seed,
        device=x.device,
        progress=False,
    )
    return model, best


def sample_efficiency(
    sizes,
    seeds,
    *,
    teacher: str = "quadratic",
    learners=("MLP", "MultiHeadAttention", "KnowledgeAttention"),
    embed_dim: int = 8,
    length: int = 6,
    n_knowledge: int = 4,
    noise: float = 0.1,
    test_lengths=(3, 6, 12, 24),
    n_test: int = 256,
    grid: dict | None = None,
    progress: bool = True,
    device: torch.device | str | None = None,
) -> list[dict]:
    """Learning curves of several learners on a task that is equivariant with knowledge.

    For each seed a random teacher (:func:`make_teacher` with ``kernel=teacher`` and
    that seed) labels Gaussian sequences of ``length`` tokens, with label noise
    ``noise``; the seed also draws the training data and every initialisation. For each
    training-set size in ``sizes``, every learner named in ``learners`` (keys of
    ``LEARNERS``) is fitted (in closed form, or by :func:`fit_tuned` on ``grid``) and
    scored on clean test sequences of every length in ``test_lengths``.

    Parameters
    ----------
    sizes, seeds : sequence of int
        Training-set sizes (at least two sequences each) and seeds.
    teacher : str
        The teacher's kernel (one of ``TEACHERS``).
    learners : sequence of str
        Keys of ``LEARNERS``.
    embed_dim, length, n_knowledge : int
        Token size, training sequence length and the teacher's knowledge vectors.
    noise : float
        Label noise of the training targets.
    test_lengths : sequence of int
        Lengths of the clean test sequences.
    n_test : int
        Test sequences per length.
    grid : dict, optional
        The validation grid of the trained learners (``GRID`` by default).
    progress : bool
        Show a progress bar over the fits.
    device : str or torch.device, optional
        Where the teacher, the data, the learners and the scores live (default: the
        CPU). Draws are made on the CPU and moved, so a seed gives the same data on
        every device.

    Returns
    -------
    list of dict
        One row per fit: ``teacher``, ``model``, ``n_train``, ``seed``, ``n_params``
        (fitted numbers), ``seconds``, ``train`` (final training loss relative to the
        target power), ``lr``, ``weight_decay``, ``n_steps`` and ``val`` (the chosen
        setting; None for closed-form learners, whose ``alpha`` is ridge's penalty) and
        ``test_n{L}`` (the :func:`relative_error` at length ``L``; NaN where the model
        cannot take it).

    Implements
    ----------
    This book's test of whether the form of seed 003 makes learning cheaper; the paper
    itself has no experiment.
    """
    sizes = [check_int(s, "sizes", minimum=2) for s in sizes]
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    unknown = [name for name in learners if name not in LEARNERS]
    if unknown or not learners:
        raise ValueError(
            f"learners must be names from {tuple(LEARNERS)}, got {list(learners)}"
        )
    test_lengths = [check_int(n, "test_lengths") for n in test_lengths]
    where = torch.device("cpu") if device is None else torch.device(device)
    rows = []
    jobs = [(seed, size, name) for seed in seeds for size in sizes for name in learners]
    # These models are so small that extra threads only add synchronisation overhead.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    labellers = {}
    try:
        for seed, size, name in tqdm(
            jobs, desc="learning curves", disable=not progress, mininterval=0.5
        ):
            if seed not in labellers:
                labeller = make_teacher(
                    embed_dim, n_knowledge, kernel=teacher, seed=seed
                ).to(where)
                tests = {
                    f"test_n{n}": knowledge_task(
                        labeller, n_test, n, seed=10_000 + 100 * seed + n
                    )
                    for n in test_lengths
                }
                labellers = {seed: (labeller, tests)}
            labeller, tests = labellers[seed]
            x, y = knowledge_task(labeller, size, length, noise=noise, seed=seed)
            make = LEARNERS[name]
            torch.manual_seed(seed)
            model = make(length, embed_dim, n_knowledge).to(where)
            start = time.perf_counter()
            chosen = dict(lr=None, weight_decay=None, n_steps=None, val=None)
            if hasattr(model, "fit"):
                model.fit(x, y)
            else:
                model, chosen = fit_tuned(
                    lambda make=make: make(length, embed_dim, n_knowledge).to(where),
                    (x, y),
                    grid=grid,
                    seed=seed,
                )
            scores = {"train": _mse(model, x, y) / float((y**2).mean())}
            for test, (xt, yt) in tests.items():
                try:
                    scores[test] = relative_error(model, xt, yt)
                except ValueError:
                    scores[test] = float("nan")
            rows.append(
                {
                    "teacher": teacher,
                    "model": name,
                    "n_train": size,
                    "seed": seed,
                    "n_params": sum(p.numel() for p in model.parameters()),
                    "seconds": time.perf_counter() - start,
                    "alpha": getattr(model, "alpha_", None),
                    **chosen,
                    **scores,
                }
            )
    finally:
        torch.set_num_threads(threads)
    return rows


def sequences_needed(sizes, errors, target: float) -> float:
    """Training-set size at which a learning curve reaches ``target``.

    By log-log interpolation.

    Parameters
    ----------
    sizes : array-like, shape (m,)
        Training-set sizes, increasing.
    errors : array-like, shape (m,)
        The (median) error at each size, decreasing.
    target : float
        The error to reach.

    Returns
    -------
    float
        The interpolated size; NaN if the curve never reaches ``target`` (or starts
        below it).
    """
    sizes, errors = np.asarray(sizes, dtype=float), np.asarray(errors, dtype=float)
    if sizes.ndim != 1 or sizes.shape != errors.shape or len(sizes) < 2:
        raise ValueError("sizes and errors must be 1-D of the same length >= 2")
    for values, name in ((sizes, "sizes"), (errors, "errors")):
        if not (np.all(np.isfinite(values)) and np.all(values > 0)):
            raise ValueError(f"{name} must be finite and positive (a log-log curve)")
    if np.any(np.diff(errors) >= 0):
        raise ValueError("errors must decrease with the size")
    target = check_positive(target, "target")
    if not errors[-1] <= target <= errors[0]:
        return float("nan")
    return float(
        np.exp(np.interp(np.log(target), np.log(errors[::-1]), np.log(sizes[::-1])))
    )
