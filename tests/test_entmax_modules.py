"""attnlib's normaliser modules and losses against the ``entmax`` package (a peer).

Four kinds of check: every public name of the package, with its parameters and
defaults; values (to 1e-12 in float64) and gradients equal to the package's on the
inputs users pass (masked rows, other dims, float32, ignored targets, each reduction);
gradcheck and gradgradcheck with respect to the inputs; and refusals where the package
fails obscurely or answers silently. The package's own test files run against attnlib
in ``tests/test_entmax_own_tests.py``.
"""

from __future__ import annotations

import entmax as peer
import pytest
import torch
from torch.autograd import gradcheck, gradgradcheck

import attnlib.normalizers as A
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


# ------------------------------------------ the package's every name, side by side
PUBLIC = sorted(
    n
    for n in dir(peer)
    if not n.startswith("_") and n not in ("activations", "losses", "root_finding")
)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_of_the_package_is_here_with_its_parameters(name):
    import inspect

    import attnlib.normalizers as ours

    theirs = inspect.signature(getattr(peer, name)).parameters.values()
    mine = inspect.signature(getattr(ours, name)).parameters
    # the same parameters in the same order with the same defaults (case aside:
    # attnlib's maps name their scores x), extra ones (return_support_size) after
    for a, b in zip(theirs, mine.values()):
        assert a.name.lower() == b.name.lower(), (name, a, b)
        same = a.default == b.default or {a.default, b.default} == {
            "elementwise_mean",
            "mean",  # one reduction, two names (both accepted)
        }
        assert same, (name, a, b)
    assert len(mine) >= len(theirs)


def _pairs():
    import attnlib.normalizers as A

    x64 = dict(n_iter=100)  # the package's bisection, to float64's round-off
    return [
        ("sparsemax", A.sparsemax, peer.sparsemax, {}, {}),
        ("sparsemax k=2", lambda x, d: A.sparsemax(x, d, k=2), peer.sparsemax, {}, {}),
        ("entmax15", A.entmax15, peer.entmax15, {}, {}),
        ("sparsemax_bisect", A.sparsemax_bisect, peer.sparsemax_bisect, {}, x64),
        *[
            (f"entmax_bisect {a}", lambda x, d, a=a: A.entmax_bisect(x, a, d),
             lambda x, d, a=a, **kw: peer.entmax_bisect(x, a, d, **kw), {}, x64)
            for a in (0.5, 1.3, 1.5, 2.0, 2.5)
        ],
        *[
            (f"normmax_bisect {a}", lambda x, d, a=a: A.normmax_bisect(x, a, d),
             lambda x, d, a=a, **kw: peer.normmax_bisect(x, a, d, **kw), {}, x64)
            for a in (1.5, 2, 5)
        ],
        *[
            (f"budget_bisect {b}", lambda x, d, b=b: A.budget_bisect(x, b, d),
             lambda x, d, b=b, **kw: peer.budget_bisect(x, b, d, **kw), {}, x64)
            for b in (1, 2.5)
        ],
    ]  # fmt: skip


PAIRS = _pairs()


@pytest.mark.parametrize("pair", PAIRS, ids=[p[0] for p in PAIRS])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_functions_match_the_package_to_float64_round_off(pair, dim):
    _, ours, theirs, _, kw = pair
    x = scores(4, 6, 5, seed=3).requires_grad_()
    a, b = ours(x, dim), theirs(x, dim, **kw)
    torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    w = scores(4, 6, 5, seed=4)
    (ga,) = torch.autograd.grad((a * w).sum(), x)
    (gb,) = torch.autograd.grad((b * w).sum(), x)
    torch.testing.assert_close(ga, gb, atol=1e-9, rtol=0)


def test_entmax_bisect_with_a_tensor_alpha_matches_in_value_and_both_gradients():
    from attnlib.normalizers import entmax_bisect

    x = scores(3, 4, 5).requires_grad_()
    alpha = (0.3 + 2 * torch.rand(3, 1, 5, dtype=torch.float64)).requires_grad_()
    a = entmax_bisect(x, alpha, dim=1)
    b = peer.entmax_bisect(x, alpha, dim=1, n_iter=100)
    torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    w = scores(3, 4, 5, seed=5)
    ga = torch.autograd.grad((a * w).sum(), (x, alpha))
    gb = torch.autograd.grad((b * w).sum(), (x, alpha))
    for u, v in zip(ga, gb):
        torch.testing.assert_close(u, v, atol=1e-9, rtol=0)


def test_loss_functions_match_the_package_row_by_row():
    import attnlib.normalizers as A

    x = scores(7, 5).requires_grad_()
    y = torch.tensor([0, 4, 2, 2, 1, 3, 0])
    cases = [
        (A.sparsemax_loss, peer.sparsemax_loss, {}),
        (A.entmax15_loss, peer.entmax15_loss, {}),
        (A.sparsemax_bisect_loss, peer.sparsemax_bisect_loss, {}),
        (lambda x, y: A.entmax_bisect_loss(x, y, 1.7),
         lambda x, y: peer.entmax_bisect_loss(x, y, 1.7, 100), {}),
        (lambda x, y: A.normmax_bisect_loss(x, y, 3.0),
         lambda x, y: peer.normmax_bisect_loss(x, y, 3.0, 100), {}),
    ]  # fmt: skip
    for ours, theirs, _ in cases:
        a, b = ours(x, y), theirs(x, y)
        assert a.shape == (7,)
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
        (ga,) = torch.autograd.grad(a.sum(), x)
        (gb,) = torch.autograd.grad(b.sum(), x)
        torch.testing.assert_close(ga, gb, atol=1e-10, rtol=0)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: A.SparsemaxBisectLoss(ignore_index=2),
         lambda: peer.SparsemaxBisectLoss(ignore_index=2)),
        (lambda: A.EntmaxBisectLoss(1.2, ignore_index=2),
         lambda: peer.EntmaxBisectLoss(1.2, n_iter=100, ignore_index=2)),
        (lambda: A.NormmaxBisectLoss(2, reduction="sum"),
         lambda: peer.NormmaxBisectLoss(2, n_iter=100, reduction="sum")),
    ],
)  # fmt: skip
def test_bisect_loss_modules_match_the_package(ours, theirs):
    x = scores(6, 4).requires_grad_()
    y = torch.tensor([0, 2, 3, 2, 1, 0])
    a, b = ours()(x, y), theirs()(x, y)
    torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    (ga,) = torch.autograd.grad(a, x)
    (gb,) = torch.autograd.grad(b, x)
    torch.testing.assert_close(ga, gb, atol=1e-10, rtol=0)


def test_bisect_modules_match_the_package_and_keep_alpha_as_it_does():
    import attnlib.normalizers as A

    x = scores(3, 7)
    for ours, theirs in [
        (A.SparsemaxBisect(), peer.SparsemaxBisect()),
        (A.EntmaxBisect(1.7), peer.EntmaxBisect(1.7, n_iter=100)),
        (A.NormmaxBisect(3), peer.NormmaxBisect(3, n_iter=100)),
        (A.BudgetBisect(3), peer.BudgetBisect(3, n_iter=100)),
    ]:
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-12, rtol=0)
    alpha = torch.full((3, 1), 1.4, dtype=torch.float64)
    fixed = A.EntmaxBisect(alpha)
    assert "alpha" not in fixed.state_dict()  # not persistent, as the package's
    torch.testing.assert_close(fixed(x), peer.entmax_bisect(x, alpha, n_iter=100),
                               atol=1e-12, rtol=0)  # fmt: skip
    learned = A.EntmaxBisect(torch.nn.Parameter(alpha.clone()))
    assert [n for n, _ in learned.named_parameters()] == ["alpha"]
    learned(x)[:, 0].sum().backward()
    assert learned.alpha.grad is not None and learned.alpha.grad.abs().sum() > 0


@pytest.mark.parametrize("dim", [0, 1])
def test_support_size_and_k_as_the_package(dim):
    import attnlib.normalizers as A

    x = scores(5, 8, seed=7)
    for fn, mod in ((A.sparsemax, A.Sparsemax), (A.entmax15, A.Entmax15)):
        p, size = fn(x, dim, return_support_size=True)
        assert size.dtype == torch.int64 and size.shape[dim] == 1
        assert torch.equal(size, (p > 0).sum(dim, keepdim=True))
        for k in (1, 2, 100):  # identical whatever k
            assert torch.equal(fn(x, dim, k=k), p)
        q, s2 = mod(dim=dim, k=3, return_support_size=True)(x)
        assert torch.equal(q, p) and torch.equal(s2, size)
    tau, size = A._sparsemax_threshold_and_support(x, dim=1)
    tau_p, size_p = peer.activations._sparsemax_threshold_and_support(x, dim=1)
    torch.testing.assert_close(tau, tau_p, atol=1e-12, rtol=0)
    assert torch.equal(size, size_p)
    tau, size = A._entmax_threshold_and_support(x / 2, dim=1)
    tau_p, size_p = peer.activations._entmax_threshold_and_support(x / 2, dim=1)
    torch.testing.assert_close(tau, tau_p, atol=1e-12, rtol=0)
    assert torch.equal(size, size_p)


def _all_maps():
    import attnlib.normalizers as A

    return [
        A.softmax, A.sparsemax, A.entmax15, A.entmax, lambda x: A.entmax(x, 3.0),
        A.sparsemax_bisect, A.entmax_bisect, lambda x: A.entmax_bisect(x, 0.5),
        lambda x: A.entmax_bisect(x, torch.tensor([[1.3], [2.5], [0.7]])),
        A.normmax_bisect, A.budget_bisect, A.Sparsemax(), A.Entmax15(), A.Entmax(1.3),
        A.SparsemaxBisect(), A.EntmaxBisect(), A.NormmaxBisect(), A.BudgetBisect(),
    ]  # fmt: skip


@pytest.mark.parametrize("fn", _all_maps())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_row_with_every_entry_masked_gives_zeros_and_a_zero_gradient(fn, dtype):
    """The package raises (sort-based maps) or gives NaN (bisection) there."""
    x = scores(3, 5, dtype=dtype)
    x[1] = -torch.inf
    x[2, :2] = -torch.inf
    x.requires_grad_()
    p = fn(x)
    assert (p[1] == 0).all() and torch.isfinite(p).all()
    (g,) = torch.autograd.grad((p * scores(3, 5, dtype=dtype, seed=9)).sum(), x)
    assert torch.isfinite(g).all() and (g[1] == 0).all()
    # the other rows are as if the masked row held ordinary scores
    other = x.detach().clone()
    other[1] = 0.0
    torch.testing.assert_close(p[[0, 2]], fn(other)[[0, 2]], atol=0, rtol=0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda A, x: A.sparsemax(x, k=0), "k must be"),
        (lambda A, x: A.entmax_bisect(x, -1.0), "alpha must be"),
        (lambda A, x: A.entmax_bisect(x, torch.tensor([[1.0]])), "other than 1"),
        (lambda A, x: A.entmax_bisect(x, 1.5, n_iter=0), "n_iter must be"),
        (lambda A, x: A.normmax_bisect(x, 1.0), "greater than 1"),
        (lambda A, x: A.normmax_bisect(x, torch.tensor(2.0, requires_grad=True)),
         "no gradient in alpha"),
        (lambda A, x: A.budget_bisect(x, 9.0), "budget must be"),
        (lambda A, x: A.budget_bisect(x, torch.tensor([[9.0]])), "budget must hold"),
        (lambda A, x: A.SparsemaxBisect(n_iter=-1), "n_iter must be"),
        (lambda A, x: A.entmax15_loss(x, torch.tensor([0.0, 1.0, 2.0])), "class ind"),
    ],
)  # fmt: skip
def test_what_the_package_computes_silently_or_fails_on_is_refused(call, match):
    """The package answers k=0 and n_iter=0 with an IndexError or UnboundLocalError,
    and α = 1 for normmax, a budget above n and α ≤ 0 with a value."""
    import attnlib.normalizers as A

    with pytest.raises(ValueError, match=match):
        call(A, scores(3, 5))


@pytest.mark.parametrize("name", ["budget_bisect", "normmax_bisect", "entmax_bisect"])
def test_masked_entries_are_as_if_absent_as_in_the_package(name):
    import attnlib.normalizers as A

    x = scores(4, 7, seed=11)
    x[:, [1, 4]] = -torch.inf
    kept = [0, 2, 3, 5, 6]
    p = getattr(A, name)(x)
    assert (p[:, [1, 4]] == 0).all()
    ref = getattr(peer, name)(x[:, kept], n_iter=100)
    torch.testing.assert_close(p[:, kept], ref, atol=1e-12, rtol=0)
