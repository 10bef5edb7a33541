"""Every public module's gradient with respect to its inputs, by finite differences.

``torch.autograd.gradcheck`` compares each module's backward pass (in float64, after
``.double()``) with central differences of its forward pass, for the floating inputs a
user passes, not only the parameters: a wrong gradient there trains whatever sits
upstream of the module on wrong numbers. Every public ``nn.Module`` of attnlib is in
:data:`CASES` or in :data:`NO_FLOAT_INPUT` with the reason; a test keeps it so.
:data:`FUNCTIONS` does the same for the differentiable functions that have no gradient
check beside their own tests (attention, sparsemax/entmax, Nadaraya-Watson, the
barycentre weights, sparse-coding attention and continuous attention have theirs).
"""

import importlib
import inspect

import pytest
import torch

from attnlib.continuous import (
    ContinuousAttention1D,
    ContinuousAttention2D,
    GaussianRBF,
)
from attnlib.continuous.experiments.digits import DigitClassifier
from attnlib.continuous.experiments.documents import DocumentClassifier
from attnlib.denoise import (
    PatchAttentionDenoiser,
    gaussian_filter_attention,
    nlm_attention,
    patch_tokens,
    pixel_nlm,
)
from attnlib.layers import (
    MultiHeadAttention,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
)
from attnlib.mux import AttentionRouter, ConvRouter, WeekdayMux
from attnlib.normalizers import exp_beta, fenchel_young_loss, log_beta, tsallis_entropy
from attnlib.subspace.sparse_coding import UnrolledISTAAttention
from attnlib.symmetry import KnowledgeAttention, knowledge_attention

F64 = torch.float64


def _x(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=F64, generator=g).requires_grad_()


def _weights(*shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(
        torch.randn(*shape, dtype=F64, generator=g), -1
    ).requires_grad_()


def _tensors(out):
    """The floating tensors of a module's output (a tensor, a named tuple, a tuple)."""
    items = out if isinstance(out, tuple) else (out,)
    return tuple(t for t in items if torch.is_tensor(t) and t.is_floating_point())


#: name -> (module factory, inputs factory); each module in float64.
CASES = {
    "MultiHeadAttention": (
        lambda: MultiHeadAttention(6, 2, kdim=4, vdim=3),
        lambda: (_x(3, 6), _x(5, 4, seed=1), _x(5, 3, seed=2)),
    ),
    "TransformerEncoderLayer": (
        lambda: TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0),
        lambda: (_x(2, 3, 4),),
    ),
    "TransformerDecoderLayer": (
        lambda: TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0),
        lambda: (_x(3, 2, 4), _x(5, 2, 4, seed=1)),
    ),
    "PatchAttentionDenoiser": (
        lambda: PatchAttentionDenoiser(patch_size=3, patch_distance=2),
        lambda: (torch.rand(6, 7, dtype=F64).requires_grad_(),),
    ),
    "UnrolledISTAAttention": (
        lambda: UnrolledISTAAttention(4, n_iter=3, lam=0.05),
        lambda: (_x(3, 4), _x(5, 4, seed=1), _x(5, 4, seed=2)),
    ),
    "KnowledgeAttention": (
        lambda: KnowledgeAttention(4, 3, num_heads=2, num_layers=2, residual=True),
        lambda: (_x(5, 4),),
    ),
    "ConvRouter": (
        lambda: ConvRouter(3, 2, kernel_size=3, depth=2, width=4),
        lambda: (_x(2, 6, 3),),
    ),
    "AttentionRouter": (
        lambda: AttentionRouter(3, 2, d_model=4, max_len=8),
        lambda: (_x(2, 6, 3),),
    ),
    "WeekdayMux": (
        lambda: WeekdayMux(7, 5, 4),
        lambda: (_x(2, 7, 12), _weights(2, 7)),
    ),
    "ContinuousAttention1D": (
        lambda: ContinuousAttention1D(GaussianRBF.linspace(6), in_features=3, alpha=1),
        lambda: (_x(2, 10, 3),),
    ),
    "ContinuousAttention2D": (
        lambda: ContinuousAttention2D(GaussianRBF.grid(3, 0.02), alpha=1, n_angles=12),
        lambda: (_x(2, 4, 4, 3), _weights(2, 16)),
    ),
    "DigitClassifier": (
        lambda: DigitClassifier("discrete", channels=4, n_side=4),
        lambda: (torch.rand(1, 1, 16, 16, dtype=F64).requires_grad_(),),
    ),
}

#: Public modules whose inputs are not floating point, and so have no input gradient.
NO_FLOAT_INPUT = {
    "DocumentClassifier": "its inputs are token ids (integers)",
}


def _image(seed=3):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(6, 7, dtype=F64, generator=g).requires_grad_()


#: name -> (function of the inputs, inputs factory).
FUNCTIONS = {
    "knowledge_attention": (
        lambda X, Z, A: knowledge_attention(X, Z, A)[0],
        lambda: (_x(5, 4), _x(3, 4, seed=1), _x(3, 3, seed=2)),
    ),
    "fenchel_young_loss": (
        lambda s: fenchel_young_loss(s, torch.tensor([0, 1, 2, 3]), 1.5),
        lambda: (_x(4, 5),),
    ),
    "tsallis_entropy": (lambda p: tsallis_entropy(p, 1.5), lambda: (_weights(3, 4),)),
    "exp_beta": (lambda u: exp_beta(u, 0.5), lambda: (_x(3, 4),)),
    "log_beta": (lambda u: log_beta(u, 0.5), lambda: (_weights(3, 4),)),
    "gaussian_filter_attention": (
        lambda im: gaussian_filter_attention(im, 1.0),
        lambda: (_image(),),
    ),
    "pixel_nlm": (lambda im: pixel_nlm(im, 0.3), lambda: (_image(),)),
    "patch_tokens": (lambda im: patch_tokens(im, 3), lambda: (_image(),)),
    "nlm_attention": (
        lambda im: nlm_attention(im, 3, 2, h=0.5),
        lambda: (_image(),),
    ),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_gradient_with_respect_to_its_inputs(name):
    fn, make_inputs = FUNCTIONS[name]
    inputs = make_inputs()
    assert torch.autograd.gradcheck(
        lambda *a: _tensors(fn(*a)), inputs, atol=1e-6, rtol=1e-4
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_gradient_with_respect_to_its_inputs(name):
    make_module, make_inputs = CASES[name]
    torch.manual_seed(0)
    module = make_module().double()
    inputs = make_inputs()
    assert all(t.requires_grad for t in inputs)
    assert torch.autograd.gradcheck(
        lambda *a: _tensors(module(*a)), inputs, atol=1e-6, rtol=1e-4
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_uses_every_parameter(name):
    """No registered parameter is left out of the forward pass (it would not train)."""
    make_module, make_inputs = CASES[name]
    torch.manual_seed(0)
    module = make_module().double()
    sum(t.sum() for t in _tensors(module(*make_inputs()))).backward()
    unused = [n for n, p in module.named_parameters() if p.grad is None]
    assert unused == []


@pytest.mark.parametrize("kind", ["discrete", "continuous", "combined"])
def test_document_classifier_uses_every_parameter(kind):
    """The module with integer inputs: every variant trains all it registers."""
    torch.manual_seed(0)
    module = DocumentClassifier(20, kind).double()
    tokens = torch.randint(0, 20, (3, 30), generator=torch.Generator().manual_seed(1))
    sum(t.sum() for t in _tensors(module(tokens))).backward()
    assert [n for n, p in module.named_parameters() if p.grad is None] == []


def test_every_public_module_is_gradchecked():
    public = set()
    for name in ("layers", "denoise", "subspace.sparse_coding", "symmetry", "mux"):
        public |= _modules(importlib.import_module(f"attnlib.{name}"))
    public |= _modules(importlib.import_module("attnlib.continuous"))
    # Chapter 07b's classifiers (experiments, a layer above the ideas).
    for name in ("continuous.experiments.digits", "continuous.experiments.documents"):
        public |= _modules(importlib.import_module(f"attnlib.{name}"))
    assert public == set(CASES) | set(NO_FLOAT_INPUT)


def _modules(mod):
    return {
        n
        for n in mod.__all__
        if inspect.isclass(getattr(mod, n))
        and issubclass(getattr(mod, n), torch.nn.Module)
    }
