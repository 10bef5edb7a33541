"""attnlib's normaliser modules and losses against the ``entmax`` package (a peer).

Three kinds of check: values and gradients equal to the package's on the inputs users
pass (masked rows, other dims, float32, ignored targets, each reduction); gradcheck and
gradgradcheck with respect to the inputs; and the package's own test files
(``test_losses.py``, ``test_mask.py``, read from the installed package at test time)
run against attnlib through a stand-in ``entmax`` package whose names resolve to ours.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import entmax as peer
import pytest
import torch
from torch.autograd import gradcheck, gradgradcheck

from attnlib.normalizers import (
    Entmax,
    Entmax15,
    Entmax15Loss,
    EntmaxLoss,
    Sparsemax,
    SparsemaxLoss,
)


def scores(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


MAPS = [
    (lambda d: Sparsemax(dim=d), lambda d: peer.Sparsemax(dim=d)),
    (lambda d: Entmax15(dim=d, k=3), lambda d: peer.Entmax15(dim=d, k=3)),
    (lambda d: Entmax(1.3, dim=d), lambda d: peer.EntmaxBisect(1.3, dim=d, n_iter=80)),
]


@pytest.mark.parametrize("pair", MAPS, ids=["sparsemax", "entmax15", "entmax1.3"])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_maps_match_the_package_in_value_and_gradient(pair, dim):
    ours, theirs = (make(dim) for make in pair)
    x = scores(4, 6, 5).requires_grad_()
    masked = x.detach().clone()
    masked.select(dim, 0).fill_(-torch.inf)  # masked keys, as a mask gives them
    for inp in (x, masked.requires_grad_()):
        a, b = ours(inp), theirs(inp)
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
        w = scores(4, 6, 5, seed=1)
        (ga,) = torch.autograd.grad((a * w).sum(), inp)
        (gb,) = torch.autograd.grad((b * w).sum(), inp)
        torch.testing.assert_close(ga, gb, atol=1e-9, rtol=0)


def test_float32_stays_float32_and_matches():
    x = scores(8, 12, dtype=torch.float32)
    for ours, theirs in [
        (Sparsemax(), peer.Sparsemax()),
        (Entmax15(), peer.Entmax15()),
    ]:
        out = ours(x)
        assert out.dtype == torch.float32
        torch.testing.assert_close(out, theirs(x), atol=1e-6, rtol=0)


def test_learned_alpha_gets_the_packages_gradient_through_the_softplus():
    alpha0 = torch.tensor([1.2, 1.6, 1.9], dtype=torch.float64).view(3, 1, 1)
    module = Entmax(alpha0, learn_alpha=True).double()
    torch.testing.assert_close(module.alpha, alpha0)
    x, w = scores(3, 4, 7), scores(3, 4, 7, seed=2)
    (module(x) * w).sum().backward()
    a = alpha0.clone().requires_grad_()
    (peer.entmax_bisect(x, a, -1, 200) * w).sum().backward()
    # α = 1 + softplus(ρ): dα/dρ = sigmoid(ρ)
    expected = a.grad * torch.sigmoid(module.rho.detach())
    torch.testing.assert_close(module.rho.grad, expected, atol=1e-8, rtol=1e-6)
    assert [n for n, _ in module.named_parameters()] == ["rho"]


def test_a_fixed_tensor_alpha_is_a_buffer_that_moves_with_the_module():
    module = Entmax(torch.tensor([1.5, 2.0]).view(2, 1), dim=-1)
    assert "_alpha" in dict(module.named_buffers()) and not list(module.parameters())
    out = module.double()(scores(2, 5))
    torch.testing.assert_close(out[1], peer.sparsemax(scores(2, 5)[1], dim=-1))


LOSSES = [
    (SparsemaxLoss, peer.SparsemaxLoss, {}),
    (Entmax15Loss, peer.Entmax15Loss, {}),
    (EntmaxLoss, peer.EntmaxBisectLoss, {"alpha": 1.7}),
]


@pytest.mark.parametrize("ours, theirs, kw", LOSSES, ids=["sparsemax", "15", "1.7"])
@pytest.mark.parametrize("reduction", ["elementwise_mean", "sum", "none"])
def test_losses_match_the_package_with_an_ignored_class(ours, theirs, kw, reduction):
    x = scores(9, 6).requires_grad_()
    y = torch.tensor([0, 3, 3, 5, 1, 3, 2, 4, 0])
    peer_kw = dict(kw, n_iter=100) if "alpha" in kw else kw
    a = ours(**kw, ignore_index=3, reduction=reduction)(x, y)
    b = theirs(**peer_kw, ignore_index=3, reduction=reduction)(x, y)
    torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    (ga,) = torch.autograd.grad(a.sum(), x)
    (gb,) = torch.autograd.grad(b.sum(), x)
    torch.testing.assert_close(ga, gb, atol=1e-9, rtol=0)
    assert (ga[y == 3] == 0).all()


def test_minus_100_is_ignored_as_torch_does():
    """The package ignores only non-negative indices; torch's losses ignore -100."""
    x = scores(5, 4).requires_grad_()
    y = torch.tensor([1, -100, 2, -100, 0])
    kept = torch.tensor([0, 2, 4])
    loss = SparsemaxLoss()(x, y)
    ref = peer.SparsemaxLoss()(x[kept], y[kept])
    torch.testing.assert_close(loss, ref)
    # At α = 1 the loss is the cross-entropy, so torch itself is the reference.
    ce = EntmaxLoss(1.0)(x, y)
    torch.testing.assert_close(ce, torch.nn.functional.cross_entropy(x, y))
    assert torch.isnan(SparsemaxLoss()(x, torch.full((5,), -100)))  # as torch's


def test_gradcheck_and_gradgradcheck_with_respect_to_the_scores():
    x = scores(3, 5).requires_grad_()
    y = torch.tensor([4, 0, 2])
    for fn in (Sparsemax(), Entmax15(dim=0), Entmax(1.4)):
        assert gradcheck(fn, (x,))
    for fn in (SparsemaxLoss(), Entmax15Loss(reduction="sum"), EntmaxLoss(1.3)):
        assert gradcheck(lambda s, fn=fn: fn(s, y), (x,))
    assert gradgradcheck(Entmax(1.4), (x,))


@pytest.mark.parametrize(
    "make, error",
    [
        (lambda: Sparsemax(k=0), ValueError),
        (lambda: Entmax15(dim=1.0), ValueError),
        (lambda: Entmax(1.0), ValueError),
        (lambda: Entmax(torch.tensor([1.5, 0.9])), ValueError),
        (lambda: SparsemaxLoss(reduction="average"), ValueError),
        (lambda: EntmaxLoss(0.5), ValueError),
        (lambda: Entmax15Loss(ignore_index=1.5), ValueError),
    ],
)
def test_bad_arguments_are_refused_when_the_module_is_made(make, error):
    with pytest.raises(error):
        make()


def test_a_float_target_is_refused_with_a_pointer_to_the_probability_loss():
    with pytest.raises(ValueError, match="fenchel_young_loss"):
        SparsemaxLoss()(scores(2, 3), torch.tensor([0.0, 1.0]))


# The stand-in package: entmax's names, attnlib's code (the bisection variants map to
# our exact maps; the package's normmax has no attnlib counterpart and is left out).
SHIM = {
    "__init__.py": "",
    "activations.py": (
        "from attnlib.normalizers import Entmax15, Sparsemax, entmax, sparsemax\n"
        "def entmax15(X, dim=-1, k=None):\n"
        "    return entmax(X, 1.5, dim=dim)\n"
    ),
    "root_finding.py": (
        "from attnlib.normalizers import entmax, sparsemax\n"
        "def entmax_bisect(X, alpha=1.5, dim=-1, n_iter=50, ensure_sum_one=True):\n"
        "    return entmax(X, alpha, dim=dim)\n"
        "def sparsemax_bisect(X, dim=-1, n_iter=50, ensure_sum_one=True):\n"
        "    return sparsemax(X, dim=dim)\n"
    ),
    "losses.py": (
        "from attnlib.normalizers import Entmax15Loss, EntmaxLoss, SparsemaxLoss\n"
        "def SparsemaxBisectLoss(n_iter=50, ignore_index=-100, reduction='sum'):\n"
        "    return SparsemaxLoss(ignore_index=ignore_index, reduction=reduction)\n"
        "def EntmaxBisectLoss(alpha=1.5, n_iter=50, ignore_index=-100,"
        " reduction='sum'):\n"
        "    return EntmaxLoss(alpha, ignore_index=ignore_index, reduction=reduction)\n"
        "NormmaxBisectLoss = None\n"
    ),
}


def test_the_packages_own_loss_and_mask_tests_pass_on_attnlib(tmp_path):
    for name, text in SHIM.items():
        (tmp_path / "entmax").mkdir(exist_ok=True)
        (tmp_path / "entmax" / name).write_text(text)
    installed = Path(peer.__file__).parent
    for name in ("test_losses.py", "test_mask.py"):
        (tmp_path / name).write_text((installed / name).read_text())
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "no:randomly", "-k", "not None", "test_losses.py", "test_mask.py",
         # its own temporary folder: pytest's clean-up of old ones in the shared
         # folder could otherwise delete this (outer) test's tmp_path mid-run
         f"--basetemp={tmp_path / 'inner'}"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    # 58 tests, of which the 6 for normmax (ids ending in None) are deselected
    assert "52 passed, 6 deselected" in run.stdout, run.stdout[-500:]
    probe = subprocess.run(
        [sys.executable, "-c", "import entmax.losses as m; print(m.__file__)"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert str(tmp_path) in probe.stdout  # the tests ran on attnlib, not the package
