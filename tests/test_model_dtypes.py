"""Every public model of attnlib keeps its dtype end to end (issue 38).

For each public ``torch.nn.Module`` subclass of attnlib (outside private modules),
a small instance (one per variant whose dtype path differs) is checked three ways:

- converted with ``.double()`` and fed float64 inputs (integer ids where the model
  reads token ids), every floating tensor of its output is float64 and holds values
  float32 cannot represent (a pass cast back from float32 would not); the same instance
  in float32 on the inputs rounded to float32 returns float32, and the two agree to
  float32's tolerance (a consistency check). A model fitted in closed form is fitted on
  data of the dtype under test, and its fitted float64 parameters are not rounded;
- the float64 model gives the same numbers whatever the default dtype (no constant in
  the forward pass is made from it);
- central differences of the float64 model, along a random direction of its parameters
  and floating inputs, match autograd's directional derivative to 1e-6, which they do
  only if no number on the way was rounded to float32.

The table is complete: walking the package must find exactly the classes it covers,
so a new model joins it (or ``EXEMPT``, with the reason).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Callable

import pytest
import torch
from torch import nn

import attnlib
from attnlib import layers
from attnlib.continuous import modules as continuous_modules
from attnlib.continuous.basis import GaussianRBF
from attnlib.continuous.experiments import alignment, digits, documents
from attnlib.denoise import learned
from attnlib.denoise.experiments import cnn as denoising
from attnlib.mux import models as mux
from attnlib.mux import tasks as mux_tasks
from attnlib.normalizers import modules as nm
from attnlib.normalizers import packaged as npk
from attnlib.subspace import experiments as se
from attnlib.subspace import sparse_coding
from attnlib.symmetry import experiments as sy
from attnlib.symmetry import heads

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64


def _randn(*shape, seed=0):
    """Standard normal numbers drawn in float64 from their own generator."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=F64)


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g, dtype=F64)


def _ids(high, *shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(high, shape, generator=g)


@dataclasses.dataclass(frozen=True)
class Case:
    """One model: how to build it (float32), its float64 inputs, a closed-form fit.

    ``inputs()`` gives float64 tensors (and integer ids); the float32 run reads them
    rounded. With ``fit``, the inputs are ``(x, y)``: ``model.fit(x, y)``, then
    ``model(x)``.
    """

    cls: str  # "module.Class", relative to attnlib
    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple]
    fit: bool = False
    variant: str = ""
    fixed: tuple = ()  # inputs that must not move (weights that sum to one)

    @property
    def id(self):
        return self.cls + (f"[{self.variant}]" if self.variant else "")


def _xy(length=4, embed_dim=3, n=12):
    x = _randn(n, length, embed_dim, seed=1)
    return x, torch.tanh(x.flip(1)) + 0.1 * _randn(n, length, embed_dim, seed=2)


def _weekday():
    task = mux_tasks.weekday_task(3, 4, 3, seed=1)
    # one-hot tokens plus noise, so that the attention weights are not all exact
    return (
        task.friends.to(F64) + 0.1 * _randn(*task.friends.shape, seed=3),
        task.day.to(F64) + 0.1 * _randn(*task.day.shape, seed=4),
    )


def _with_skip():
    model = sy.WithSkip(heads.KnowledgeAttention(3, 2))
    with torch.no_grad():
        model.skip.fill_(0.3)  # it starts at zero, where its term would vanish
    return model


def _scores_and_target():
    return _randn(4, 5), _ids(5, 4, seed=1)


CASES = [
    Case(
        "continuous.modules.ContinuousAttention1D",
        lambda: continuous_modules.ContinuousAttention1D(
            GaussianRBF(torch.linspace(0, 1, 6), 0.02), 3
        ),
        lambda: (_randn(2, 8, 3),),
        variant="encoder",
    ),
    Case(
        "continuous.modules.ContinuousAttention1D",
        lambda: continuous_modules.ContinuousAttention1D(
            GaussianRBF(torch.linspace(0, 1, 6), 0.02), alpha=2
        ),
        lambda: (_randn(2, 8, 3), torch.softmax(_randn(2, 8, seed=1), -1)),
        variant="combined, alpha 2",
        fixed=(1,),
    ),
    Case(
        "continuous.modules.ContinuousAttention2D",
        lambda: continuous_modules.ContinuousAttention2D(
            GaussianRBF.grid(3, 0.02), 3, n_angles=16
        ),
        lambda: (_randn(2, 3, 4, 3),),
        variant="encoder",
    ),
    Case(
        "continuous.modules.ContinuousAttention2D",
        lambda: continuous_modules.ContinuousAttention2D(
            GaussianRBF.grid(3, 0.02), alpha=2, n_angles=16
        ),
        lambda: (_randn(2, 3, 4, 3), torch.softmax(_randn(2, 12, seed=1), -1)),
        variant="combined, alpha 2",
        fixed=(1,),
    ),
    Case(
        "denoise.learned.PatchAttentionDenoiser",
        lambda: learned.PatchAttentionDenoiser(
            3, 0.3, 2, positional=True, patch_distance=2
        ),
        lambda: (_rand(2, 6, 7),),
    ),
    Case(
        "continuous.experiments.alignment.AlignmentModel",
        lambda: alignment.AlignmentModel(5, 6, 3, "continuous", dim=4, n_basis=4),
        lambda: (_ids(5, 2, 6),),
        variant="continuous",
    ),
    Case(
        "continuous.experiments.alignment.AlignmentModel",
        lambda: alignment.AlignmentModel(5, 6, 3, "discrete", dim=4),
        lambda: (_ids(5, 2, 6),),
        variant="discrete",
    ),
    Case(
        "denoise.experiments.cnn.SmallCNNDenoiser",
        lambda: denoising.SmallCNNDenoiser(3, 3),
        lambda: (_rand(6, 7),),
    ),
    Case(
        "continuous.experiments.digits.DigitClassifier",
        lambda: digits.DigitClassifier("continuous", n_side=3, channels=4),
        lambda: (_rand(2, 1, 12, 12),),
        variant="continuous",
    ),
    Case(
        "continuous.experiments.digits.DigitClassifier",
        lambda: digits.DigitClassifier("discrete", alpha=2, n_side=3, channels=4),
        lambda: (_rand(2, 1, 12, 12),),
        variant="discrete, alpha 2",
    ),
    *(
        Case(
            "continuous.experiments.documents.DocumentClassifier",
            lambda kind=kind: documents.DocumentClassifier(
                16, kind, n_basis=6, dim=4, span=3
            ),
            (lambda: (_ids(16, 2, 20), _ids(16, 2, seed=1)))
            if kind == "oracle"
            else (lambda: (_ids(16, 2, 20),)),
            variant=kind,
        )
        for kind in ("discrete", "continuous", "combined", "oracle")
    ),
    Case(
        "subspace.experiments.held_out.LearnedISTACodes",
        lambda: se.LearnedISTACodes(3, 0.01),
        lambda: (_randn(3, 4), _randn(5, 4, seed=1)),
    ),
    Case(
        "subspace.experiments.held_out.SelfExpressiveNet",
        lambda: se.SelfExpressiveNet(4, 6),
        lambda: (_randn(3, 4), _randn(5, 4, seed=1)),
    ),
    *(
        Case(
            "subspace.experiments.stack.AttentionStack",
            lambda kind=kind: se.AttentionStack(kind, 4, 2),
            lambda: (_randn(2, 3, 4), _randn(2, 5, 4, seed=1), _randn(2, 5, 4, seed=2)),
            variant=kind,
        )
        for kind in ("softmax", "sparsemax", "ista")
    ),
    Case(
        "symmetry.experiments.baselines.MeanBaseline",
        lambda: sy.MeanBaseline(3),
        lambda: _xy(),
        fit=True,
    ),
    Case(
        "symmetry.experiments.baselines.RidgeBaseline",
        lambda: sy.RidgeBaseline(4, 3, 0.5),
        lambda: _xy(),
        fit=True,
    ),
    Case(
        "symmetry.experiments.baselines.RidgeCVBaseline",
        lambda: sy.RidgeCVBaseline(4, 3, alphas=(0.01, 1.0, 100.0)),
        lambda: _xy(),
        fit=True,
    ),
    Case(
        "symmetry.experiments.baselines.ScaledInput",
        lambda: sy.ScaledInput(),
        lambda: _xy(),
        fit=True,
    ),
    Case(
        "symmetry.experiments.learners.SequenceMLP",
        lambda: sy.SequenceMLP(4, 3, 5),
        lambda: (_randn(2, 4, 3),),
    ),
    Case(
        "symmetry.experiments.learners.WithSkip",
        _with_skip,
        lambda: (_randn(2, 4, 3),),
    ),
    Case(
        "layers.multihead.MultiHeadAttention",
        lambda: layers.MultiHeadAttention(4, 2, kdim=3, vdim=3, batch_first=True),
        lambda: (_randn(2, 3, 4), _randn(2, 5, 3, seed=1), _randn(2, 5, 3, seed=2)),
    ),
    Case(
        "layers.multihead.MultiHeadAttention",
        lambda: layers.MultiHeadAttention(4, 2, batch_first=True, normalizer="entmax"),
        lambda: (_randn(2, 3, 4), _randn(2, 5, 4, seed=1), _randn(2, 5, 4, seed=2)),
        variant="entmax",
    ),
    Case(
        "layers.multihead.MultiHeadAttention",
        lambda: layers.MultiHeadAttention(4, 2, batch_first=True),
        # key_padding_mask and attn_mask as floats, added to the scores
        lambda: (
            *(_randn(2, 3, 4), _randn(2, 5, 4, seed=1), _randn(2, 5, 4, seed=2)),
            *(_randn(2, 5, seed=3), True, _randn(3, 5, seed=4)),
        ),
        variant="float masks",
    ),
    Case(
        "layers.encoder.TransformerEncoderLayer",
        lambda: layers.TransformerEncoderLayer(4, 2, 8),
        lambda: (_randn(2, 3, 4),),
    ),
    Case(
        "layers.encoder.TransformerEncoderLayer",
        lambda: layers.TransformerEncoderLayer(
            4, 2, 8, batch_first=True, norm_first=True, activation="gelu"
        ),
        lambda: (_randn(2, 3, 4), _randn(3, 3, seed=1), _randn(2, 3, seed=2)),
        variant="norm first, float masks",
    ),
    Case(
        "layers.decoder.TransformerDecoderLayer",
        lambda: layers.TransformerDecoderLayer(4, 2, 8, batch_first=True),
        lambda: (_randn(2, 3, 4), _randn(2, 5, 4, seed=1)),
    ),
    Case(
        "mux.models.AttentionRouter",
        lambda: mux.AttentionRouter(3, 2, 4, max_len=6),
        lambda: (_randn(2, 5, 3),),
    ),
    Case(
        "mux.models.ConvRouter",
        lambda: mux.ConvRouter(3, 2, 3, 2, 4),
        lambda: (_randn(2, 5, 3),),
    ),
    Case(
        "mux.models.WeekdayMux",
        lambda: mux.WeekdayMux(4, 3, 5),
        _weekday,
    ),
    Case(
        "normalizers.modules.Sparsemax",
        lambda: nm.Sparsemax(dim=0),
        lambda: (_randn(5, 3),),
    ),
    Case(
        "normalizers.modules.Entmax15",
        lambda: nm.Entmax15(),
        lambda: (_randn(3, 5),),
    ),
    Case(
        "normalizers.modules.Entmax",
        lambda: nm.Entmax(1.3, learn_alpha=True),
        lambda: (_randn(3, 5),),
    ),
    Case(
        "normalizers.modules.SparsemaxLoss",
        lambda: nm.SparsemaxLoss(reduction="none"),
        _scores_and_target,
    ),
    Case(
        "normalizers.modules.Entmax15Loss",
        lambda: nm.Entmax15Loss(),
        _scores_and_target,
    ),
    Case(
        "normalizers.modules.EntmaxLoss",
        lambda: nm.EntmaxLoss(1.7, reduction="sum"),
        _scores_and_target,
    ),
    Case(
        "normalizers.modules.SparsemaxBisectLoss",
        lambda: nm.SparsemaxBisectLoss(reduction="sum"),
        _scores_and_target,
    ),
    Case(
        "normalizers.modules.EntmaxBisectLoss",
        lambda: nm.EntmaxBisectLoss(1.3),
        _scores_and_target,
    ),
    Case(
        "normalizers.modules.NormmaxBisectLoss",
        lambda: nm.NormmaxBisectLoss(3.0),
        _scores_and_target,
    ),
    Case(
        "normalizers.packaged.SparsemaxBisect",
        lambda: npk.SparsemaxBisect(dim=0),
        lambda: (_randn(5, 3),),
    ),
    Case(
        "normalizers.packaged.EntmaxBisect",
        lambda: npk.EntmaxBisect(1.3),
        lambda: (_randn(3, 5),),
    ),
    Case(
        "normalizers.packaged.NormmaxBisect",
        lambda: npk.NormmaxBisect(3.0),
        lambda: (_randn(3, 5),),
    ),
    Case(
        "normalizers.packaged.BudgetBisect",
        lambda: npk.BudgetBisect(2),
        lambda: (_randn(3, 5),),
    ),
    Case(
        "subspace.sparse_coding.UnrolledISTAAttention",
        lambda: sparse_coding.UnrolledISTAAttention(3, 2, 0.1),
        lambda: (_randn(2, 5, 3),),
    ),
    Case(
        "symmetry.heads.KnowledgeAttention",
        lambda: heads.KnowledgeAttention(
            3, 2, num_heads=2, num_layers=2, kernel="higher_order", residual=True
        ),
        lambda: (_randn(2, 4, 3),),
    ),
    Case(
        "symmetry.heads.KnowledgeAttention",
        lambda: heads.KnowledgeAttention(
            3, 2, kernel="rbf", value="linear", normalizer="sparsemax"
        ),
        lambda: (_randn(2, 4, 3),),
        variant="rbf, linear, sparsemax",
    ),
]

# Public nn.Module classes that the table leaves out, with the reason. None today.
EXEMPT: dict[str, str] = {}


def _floating(out) -> list[torch.Tensor]:
    """Every floating tensor in a model's output (tensors, tuples, named tuples)."""
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _floating(item)]
    if out is None:
        return []
    raise TypeError(f"unexpected output of type {type(out).__name__}")


def _cast(inputs, dtype):
    return tuple(
        x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x
        for x in inputs
    )


def _forward(case, model, inputs):
    """The floating outputs of ``model`` on ``inputs`` (fitted on them first if the
    case says so)."""
    if case.fit:
        model.fit(*inputs)
        inputs = inputs[:1]
    with torch.no_grad():
        return _floating(model(*inputs))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_float64_model_computes_in_float64(case):
    model32 = case.build().eval()
    model64 = copy.deepcopy(model32).double()
    inputs = case.inputs()
    out32 = _forward(case, model32, _cast(inputs, torch.float32))
    out64 = _forward(case, model64, _cast(inputs, F64))
    assert out64, "the model returned no floating tensor"
    assert len(out32) == len(out64)
    for i, (a, b) in enumerate(zip(out32, out64)):
        assert a.dtype == torch.float32, f"output {i} of the float32 model: {a.dtype}"
        assert b.dtype == F64, f"output {i} of the float64 model: {b.dtype}"
        # consistency check: the same function at two precisions
        torch.testing.assert_close(b.float(), a, rtol=1e-4, atol=1e-5)
        # float64 numbers that float32 cannot hold: the pass did not end in float32
        assert (b != b.float().double()).any(), f"output {i} holds only float32 values"
    if case.fit:
        # a closed-form fit on float64 data gives a float64 model, not a rounded one
        for name, t in [*model64.named_parameters(), *model64.named_buffers()]:
            assert t.dtype == F64, f"{name} fitted as {t.dtype}"
            assert (t != t.float().double()).any(), f"{name} holds float32 values"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_float64_model_ignores_the_default_dtype(case):
    """A constant made in the forward pass from the default dtype (a ``linspace`` or
    ``zeros`` without ``dtype=``) would round a float64 model's numbers to float32
    there, silently where type promotion hides it: the float64 model must give the
    same numbers whether the default dtype is float32 or float64."""
    model = case.build().eval().double()
    inputs = case.inputs()
    first = _forward(case, model, inputs)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(F64)
    try:
        second = _forward(case, model, inputs)
    finally:
        torch.set_default_dtype(previous)
    assert len(first) == len(second)
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_float64_model_resolves_float64_steps(case):
    """Central differences with a step of 1e-6 agree with autograd's directional
    derivative to 1e-6 only if every number from the parameters and the floating
    inputs to the output is float64: a value rounded to float32 on the way (relative
    error 6e-8) would put an error of order 0.1 into the difference quotient, although
    the output's dtype, and its agreement with the float32 model, look right."""
    model = case.build().eval().double()
    inputs = case.inputs()
    if case.fit:
        model.fit(*inputs)
        inputs = inputs[:1]
    # The point (every parameter and every floating input but those that must stay a
    # distribution; an input is named by its position) and a random direction.
    point = {name: p.detach() for name, p in model.named_parameters()}
    for i, x in enumerate(inputs):
        if torch.is_tensor(x) and x.is_floating_point() and i not in case.fixed:
            point[i] = x
    g = torch.Generator().manual_seed(5)
    direction = {
        n: torch.randn(t.shape, generator=g, dtype=F64) for n, t in point.items()
    }

    def call(at):
        params = {n: t for n, t in at.items() if isinstance(n, str)}
        args = tuple(at.get(i, x) for i, x in enumerate(inputs))
        return _floating(torch.func.functional_call(model, params, args))

    leaves = {n: t.clone().requires_grad_() for n, t in point.items()}
    outputs = call(leaves)
    # outputs detached for display (an alignment's density) have no derivative
    kept = [i for i, o in enumerate(outputs) if o.requires_grad]
    assert kept, "no output depends on the parameters or the input"
    weights = [torch.randn(outputs[i].shape, generator=g, dtype=F64) for i in kept]

    def total(outs):
        return sum((w * outs[i]).sum() for w, i in zip(weights, kept))

    grads = torch.autograd.grad(
        total(outputs), list(leaves.values()), allow_unused=True
    )
    slope = sum(
        (grad * direction[n]).sum()
        for n, grad in zip(leaves, grads)
        if grad is not None
    )
    h = 1e-6
    with torch.no_grad():
        up = total(call({n: t + h * direction[n] for n, t in point.items()}))
        down = total(call({n: t - h * direction[n] for n, t in point.items()}))
    torch.testing.assert_close((up - down) / (2 * h), slope, rtol=1e-6, atol=1e-8)


def _public_modules() -> set[str]:
    """The public nn.Module subclasses defined in attnlib, outside private modules."""
    found = set()
    for info in pkgutil.walk_packages(attnlib.__path__, "attnlib."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, nn.Module)
                and obj.__module__ == info.name
                and not name.startswith("_")
            ):
                found.add(f"{info.name.removeprefix('attnlib.')}.{name}")
    return found


def test_the_table_covers_every_public_model():
    found = _public_modules()
    covered = {case.cls for case in CASES}
    assert not covered & set(EXEMPT), "a class is both covered and exempt"
    assert found == covered | set(EXEMPT), (
        f"not in the table: {sorted(found - covered - set(EXEMPT))}; "
        f"in the table but not found: {sorted((covered | set(EXEMPT)) - found)}"
    )
    # the walk sees the classes of nested packages and of a package's own modules
    assert "subspace.experiments.stack.AttentionStack" in found
    assert "layers.multihead.MultiHeadAttention" in found


@pytest.mark.parametrize("name", ["MultiHeadAttention", "TransformerEncoderLayer"])
def test_a_layer_built_in_float64_computes_in_float64(name):
    """The layers take ``dtype=`` as PyTorch's do: every parameter is float64, and with
    the float32 layer's weights loaded the outputs agree with it."""
    layer = getattr(layers, name)
    args = dict(dropout=0.0, batch_first=True)
    model32 = layer(4, 2, **args).eval()
    model64 = layer(4, 2, **args, dtype=F64).eval()
    assert {p.dtype for p in model64.parameters()} == {F64}
    model64.load_state_dict(model32.state_dict())
    x = _randn(2, 3, 4)
    with torch.no_grad():
        out32 = _floating(model32(*[x.float()] * (3 if "Multi" in name else 1)))
        out64 = _floating(model64(*[x] * (3 if "Multi" in name else 1)))
    for a, b in zip(out32, out64, strict=True):
        assert b.dtype == F64 and a.dtype == torch.float32
        torch.testing.assert_close(b.float(), a, rtol=1e-4, atol=1e-5)
        assert (b != b.float().double()).any()
