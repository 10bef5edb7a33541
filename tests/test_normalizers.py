"""Tests of attnlib.normalizers against entmax, PyTorch, SciPy, NumPy restatements."""

import entmax as E
import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnlib.functional import attention
from attnlib.normalizers import (
    entmax,
    exp_beta,
    fenchel_young_loss,
    log_beta,
    softmax,
    sparsemax,
    tsallis_entropy,
)

F64 = torch.float64
NEG_INF = float("-inf")


def reference(x, alpha, dim=-1):
    """The entmax package's map for index ``alpha`` (independent: sort/bisection)."""
    if alpha == 1:
        return torch.softmax(x, dim)
    if alpha == 2:
        return E.sparsemax(x, dim)
    if alpha == 1.5:
        return E.entmax15(x, dim)
    return E.entmax_bisect(x, alpha, dim, n_iter=100)


def ours(x, alpha, dim=-1):
    return sparsemax(x, dim) if alpha == 2 else entmax(x, alpha, dim)


def project_simplex(v):
    """Euclidean projection onto the simplex by sorting, in NumPy.

    The sorting algorithm of Held, Wolfe & Crowder.
    """
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1
    k = np.nonzero(u - css / np.arange(1, len(v) + 1) > 0)[0][-1]
    return np.maximum(v - css[k] / (k + 1), 0)


def adversarial_rows():
    rng = np.random.default_rng(0)
    rows = [rng.normal(size=(6, 9)) * s for s in (1e-8, 1e-3, 1, 10, 1e3, 1e6)]
    rows += [
        np.zeros((2, 5)),
        np.ones((1, 1)),
        np.array([[3.0, 3.0, 3.0, -1.0, 3.0]]),
        np.array([[1.0, 1.0, 0.5, 0.5]]),
    ]
    rows += [np.round(rng.normal(size=(4, 30)), 1)]  # many ties
    return [torch.tensor(r, dtype=F64) for r in rows]


ALPHAS = [1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0]


@pytest.mark.parametrize("alpha", ALPHAS)
def test_agrees_with_entmax_package_on_adversarial_inputs(alpha):
    for x in adversarial_rows():
        torch.testing.assert_close(
            ours(x, alpha), reference(x, alpha), atol=1e-6, rtol=0
        )


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0, 3.0])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_any_dim_agrees_with_package(alpha, dim):
    x = torch.randn(5, 6, 7, dtype=F64) * 3
    torch.testing.assert_close(
        ours(x, alpha, dim), reference(x, alpha, dim), atol=1e-6, rtol=0
    )


@pytest.mark.parametrize("alpha", [1.0, 1.5, 1.25, 2.0])
def test_masked_keys_get_zero_weight_and_the_rest_matches(alpha):
    x = torch.randn(4, 8, dtype=F64)
    keep = torch.tensor([True, False, True, True, False, True, False, True])
    p = ours(x.masked_fill(~keep, NEG_INF), alpha)
    assert (p[:, ~keep] == 0).all()
    torch.testing.assert_close(
        p[:, keep], reference(x[:, keep], alpha), atol=1e-6, rtol=0
    )


@pytest.mark.parametrize(
    "fn",
    [softmax, sparsemax, entmax, lambda x: entmax(x, 1.25), lambda x: entmax(x, 3.0)],
)
def test_fully_masked_row_gives_zeros_nan_and_inf_raise(fn):
    x = torch.randn(3, 4)
    x[1] = NEG_INF
    p = fn(x)  # zeros, as attention() gives a query with every key masked
    assert (p[1] == 0).all() and torch.allclose(p[[0, 2]].sum(-1), torch.ones(2))
    with pytest.raises(ValueError, match="x contains NaN"):
        fn(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match=r"x contains \+inf"):
        fn(torch.tensor([[0.0, float("inf")]]))


def test_bad_arguments_raise():
    x = torch.randn(3, 4)
    for fn in (softmax, sparsemax, entmax):
        with pytest.raises(ValueError, match="dim must be"):
            fn(x, dim=2)
        with pytest.raises(ValueError, match="x must have at least one dim"):
            fn(torch.tensor(1.0))
        with pytest.raises(ValueError, match="x must have at least one entry"):
            fn(torch.zeros(0))
        with pytest.raises(
            ValueError, match="x must have at least one entry along dim"
        ):
            fn(torch.zeros(3, 0))
    with pytest.raises(ValueError, match="alpha"):
        entmax(x, alpha=0.5)
    with pytest.raises(ValueError, match="alpha"):
        # size 4 along the normalised dim
        entmax(x, alpha=torch.tensor([1.5, 1.5, 1.5, 1.5]))
    with pytest.raises(ValueError, match="alpha"):
        entmax(x, alpha=torch.tensor(1.0))


def test_array_likes_are_accepted():
    np.testing.assert_allclose(sparsemax([[1.0, 0.0, 3.0]]).numpy(), [[0.0, 0.0, 1.0]])


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("alpha", [1.0, 1.25, 1.5, 2.0, 2.5])
@pytest.mark.parametrize("dim", [-1, 0])
def test_gradcheck_in_x(alpha, dim):
    x = (torch.randn(4, 5, dtype=F64) * 2).requires_grad_()
    assert torch.autograd.gradcheck(lambda x: ours(x, alpha, dim), (x,))


@pytest.mark.parametrize("alpha", [1.3, 1.5, 1.8, 2.4])
def test_gradcheck_in_alpha_scalar_and_per_row(alpha):
    x = (torch.randn(3, 6, dtype=F64) * 2).requires_grad_()
    a = torch.tensor(alpha, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, a: entmax(x, a), (x, a))
    rows = torch.tensor([[alpha], [1.2], [2.0]], dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, a: entmax(x, a), (x, rows))


def test_alpha_gradient_matches_entmax_bisect():
    x = torch.randn(4, 7, dtype=F64)
    w = torch.randn(4, 7, dtype=F64)
    a1 = torch.tensor(1.4, dtype=F64, requires_grad=True)
    a2 = torch.tensor(1.4, dtype=F64, requires_grad=True)
    (entmax(x, a1) * w).sum().backward()
    (E.entmax_bisect(x, a2, -1, n_iter=100) * w).sum().backward()
    torch.testing.assert_close(a1.grad, a2.grad, atol=1e-6, rtol=1e-6)


def test_sparsemax_jacobian_is_diag_s_minus_ssT_over_support_size():
    x = torch.tensor([1.0, 0.8, 0.1, -2.0], dtype=F64)
    J = torch.autograd.functional.jacobian(sparsemax, x)
    s = (sparsemax(x) > 0).to(F64)
    torch.testing.assert_close(J, torch.diag(s) - torch.outer(s, s) / s.sum())


# ----------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("alpha", [1.0, 1.5, 1.25, 2.0])
def test_low_precision_keeps_dtype_and_is_close(dtype, alpha):
    x64 = torch.randn(6, 20, dtype=F64)
    x = x64.to(dtype).requires_grad_()
    p = ours(x, alpha)
    assert p.dtype == dtype
    tol = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5}[dtype]
    torch.testing.assert_close(
        p.to(F64), reference(x.detach().to(F64), alpha), atol=tol, rtol=0
    )
    p.sum().backward()
    assert x.grad.dtype == dtype and torch.isfinite(x.grad).all()


# --------------------------------------------------------------------------- properties
rows = arrays(
    np.float64, st.integers(1, 12), elements=st.floats(-50, 50, allow_nan=False)
)
alphas = st.sampled_from([1.0, 1.2, 1.5, 2.0, 2.7])


@settings(max_examples=40, deadline=None)
@given(v=rows, alpha=alphas, shift=st.floats(-100, 100))
def test_simplex_and_shift_invariance(v, alpha, shift):
    x = torch.tensor(v)
    p = ours(x, alpha)
    assert (p >= 0).all()
    torch.testing.assert_close(p.sum(), torch.tensor(1.0, dtype=F64))
    torch.testing.assert_close(ours(x + shift, alpha), p, atol=1e-7, rtol=0)


@settings(max_examples=40, deadline=None)
@given(v=rows, alpha=alphas, seed=st.integers(0, 2**16))
def test_permutation_equivariance(v, alpha, seed):
    x = torch.tensor(v)
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(len(v)))
    torch.testing.assert_close(
        ours(x[perm], alpha), ours(x, alpha)[perm], atol=1e-9, rtol=0
    )


@settings(max_examples=60, deadline=None)
@given(v=rows)
def test_sparsemax_is_euclidean_projection_onto_simplex(v):
    np.testing.assert_allclose(
        sparsemax(torch.tensor(v)).numpy(), project_simplex(v), atol=1e-9
    )


def test_alpha_to_one_approaches_softmax():
    x = torch.randn(50, 10, dtype=F64, generator=torch.Generator().manual_seed(0))
    eps = (1e-1, 1e-2, 1e-3, 1e-4)
    gaps = [(entmax(x, 1 + e) - torch.softmax(x, -1)).abs().max().item() for e in eps]
    # the gap is first order in α - 1 (q = 1/(α-1) up to 10 000, handled without
    # overflow)
    assert all(5 < a / b < 20 for a, b in zip(gaps, gaps[1:])) and gaps[-1] < 2e-4


def test_larger_alpha_is_sparser():
    x = torch.randn(50, 30, dtype=F64)
    support = [(entmax(x, a) > 0).sum().item() for a in (1.1, 1.5, 2.0, 3.0)]
    assert support == sorted(support, reverse=True) and support[-1] < support[0]


# ---------------------------------------------------------------------------- attention
@pytest.mark.parametrize("name,fn", [("sparsemax", sparsemax), ("entmax", entmax)])
def test_registered_in_attention(name, fn):
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    mask = torch.tensor([True, True, False, True, True])
    out, w = attention(q, k, v, normalizer=name, mask=mask)
    expected = fn((q @ k.transpose(-2, -1) / 2).masked_fill(~mask, NEG_INF))
    torch.testing.assert_close(w, expected)
    assert (w[..., 2] == 0).all()
    torch.testing.assert_close(out, w @ v)


# ------------------------------------------------------------------- Tsallis and losses
def test_tsallis_entropy_against_scipy_and_formula():
    p = torch.tensor([[0.5, 0.25, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]], dtype=F64)
    np.testing.assert_allclose(
        tsallis_entropy(p, 1.0).numpy(), scipy.stats.entropy(p.numpy(), axis=1)
    )
    np.testing.assert_allclose(tsallis_entropy(p, 2.0).numpy(), [(1 - 0.375) / 2, 0.0])
    # α = 2 on the uniform: (1 - 1/n) / 2; continuity at α = 1.
    np.testing.assert_allclose(
        tsallis_entropy(p, 1 + 1e-6).numpy(), tsallis_entropy(p, 1.0).numpy(), atol=1e-5
    )
    with pytest.raises(ValueError, match="p must hold weights"):
        tsallis_entropy([-0.1, 1.1])
    with pytest.raises(ValueError, match="alpha"):
        tsallis_entropy(p, 0.5)


def test_exp_and_log_beta():
    u = torch.linspace(-3, 3, 61, dtype=F64)
    torch.testing.assert_close(exp_beta(u, 1.0), u.exp())
    torch.testing.assert_close(log_beta(u.exp(), 1.0), u)
    for beta in (0.0, 0.5, 0.75):
        e = exp_beta(u, beta)
        pos = e > 0
        torch.testing.assert_close(log_beta(e[pos], beta), u[pos])
        np.testing.assert_allclose(
            e.numpy(), np.maximum(1 + (1 - beta) * u.numpy(), 0) ** (1 / (1 - beta))
        )
    # β = 0: sparsemax's ReLU
    torch.testing.assert_close(exp_beta(u, 0.0), (1 + u).clamp_min(0))
    with pytest.raises(ValueError, match="u must be non-negative"):
        log_beta([-1.0], 0.5)
    with pytest.raises(ValueError, match="beta"):
        exp_beta([1.0], float("nan"))


def test_entmax_is_beta_exponential_of_shifted_scores():
    x = torch.randn(7, dtype=F64)
    p = entmax(x, 1.5)
    # Eq. (7): p = exp_{2-α}(x - A) for the scalar A that normalises; read A off the top
    # entry.
    A = x.max() - log_beta(p.max(), 0.5)
    torch.testing.assert_close(exp_beta(x - A, 0.5), p)


@pytest.mark.parametrize(
    "alpha,ref",
    [
        (1.0, None),
        (1.5, E.entmax15_loss),
        (2.0, E.sparsemax_loss),
        (1.25, lambda x, y: E.entmax_bisect_loss(x, y, 1.25, 100)),
    ],
)
def test_fenchel_young_loss_against_references(alpha, ref):
    x = torch.randn(6, 5, dtype=F64, requires_grad=True)
    y = torch.tensor([0, 3, 1, 4, 2, 2])
    loss = fenchel_young_loss(x, y, alpha, reduction="none")
    expected = (
        torch.nn.functional.cross_entropy(x, y, reduction="none")
        if ref is None
        else ref(x, y)
    )
    torch.testing.assert_close(loss, expected, atol=1e-6, rtol=1e-6)
    assert (loss >= 0).all()
    loss.sum().backward()
    torch.testing.assert_close(
        x.grad, ours(x.detach(), alpha) - torch.nn.functional.one_hot(y, 5).to(F64)
    )


def test_fenchel_young_loss_zero_at_own_prediction_and_bad_inputs():
    x = torch.randn(3, 4, dtype=F64)
    assert fenchel_young_loss(x, entmax(x, 1.5), 1.5).abs() < 1e-12
    with pytest.raises(ValueError, match="target"):
        fenchel_young_loss(x, torch.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="target"):
        fenchel_young_loss(x, torch.ones(3, 5))
    with pytest.raises(ValueError, match="reduction"):
        fenchel_young_loss(x, torch.tensor([0, 1, 1]), reduction="max")


# ------------------------------------------------------------ the fast threshold search
def hard_rows(n):
    """Rows of width ``n`` that stress the threshold search: large scores spread over
    the row, ties at the top, huge and tiny scales, and easy rows (one clear winner)
    mixed with hard ones, so that rows need very different numbers of Newton passes."""
    rng = np.random.default_rng(1)
    w = n // min(8, n // 16)
    stacked = rng.normal(size=(3, n)) * 0.1
    # large scores every w columns, not at the front
    stacked[:, ::w] += np.linspace(3, 2, len(stacked[0, ::w]))
    tied = np.round(rng.normal(size=(3, n)), 1)
    tied[:, : n // 2] = tied.max()  # half the row tied at the top
    easy = rng.normal(size=(20, n))
    easy[:, 0] += 50
    rows = [
        stacked,
        tied,
        rng.normal(size=(3, n)) * 1e-7,
        rng.normal(size=(3, n)) * 1e5,
        easy,
        rng.normal(size=(4, n)) * 3,
    ]
    return torch.tensor(np.concatenate(rows), dtype=F64)


@pytest.mark.parametrize("alpha", [1.25, 1.5, 1.75, 2.0])
@pytest.mark.parametrize("n", [32, 100, 256, 4096])
def test_newton_search_on_hard_rows(alpha, n):
    x = hard_rows(n)
    torch.testing.assert_close(ours(x, alpha), reference(x, alpha), atol=1e-6, rtol=0)
    x32 = x.float()
    torch.testing.assert_close(
        ours(x32, alpha).double(), reference(x32.double(), alpha), atol=1e-5, rtol=0
    )


@pytest.mark.parametrize("alpha", [1.25, 1.5, 1.75, 2.0])
def test_gradcheck_on_hard_rows(alpha):
    x = hard_rows(48)[::3].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: ours(x, alpha), (x,))


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0])
def test_bisection_off_the_cpu_agrees_with_the_package(alpha):
    """Off the CPU (CUDA) every α may be bisected by tensor ops; checked on the CPU."""
    from attnlib.normalizers._entmax import entmax_bisect

    x = hard_rows(100)
    torch.testing.assert_close(
        entmax_bisect(x - x.amax(-1, keepdim=True), alpha),
        reference(x, alpha),
        atol=1e-6,
        rtol=0,
    )


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0])
def test_backward_gives_zero_gradient_off_the_support(alpha):
    x = hard_rows(64)
    g = torch.randn_like(x)
    xr = x.clone().requires_grad_()
    p = ours(xr, alpha)
    p.backward(g)
    assert (xr.grad[p == 0] == 0).all()
    xe = x.clone().requires_grad_()
    reference(xe, alpha).backward(g)
    torch.testing.assert_close(xr.grad, xe.grad, atol=1e-6, rtol=0)


def test_per_row_tensor_alpha_agrees_with_bisection_in_value_and_gradient():
    x = hard_rows(64)
    w = torch.randn_like(x)
    for top in (2.0, 2.5):  # all α ≤ 2 (Newton), or one above 2 (bisection for all)
        a1 = torch.linspace(1.05, top, len(x), dtype=F64)[:, None].requires_grad_()
        a2 = a1.detach().clone().requires_grad_()
        p = entmax(x, a1)
        ref = E.entmax_bisect(x, a2, -1, n_iter=100)
        torch.testing.assert_close(p, ref, atol=1e-6, rtol=0)
        (p * w).sum().backward()
        (ref * w).sum().backward()
        torch.testing.assert_close(a1.grad, a2.grad, atol=1e-5, rtol=1e-5)


def test_tensor_alpha_per_slice_of_a_3d_input():
    x = torch.randn(2, 3, 9, dtype=F64) * 3
    # one α per row of the middle dimension
    alpha = torch.tensor([[1.2], [1.5], [2.0]], dtype=F64)
    expected = torch.stack(
        [
            torch.stack([reference(x[i, j], alpha[j].item()) for j in range(3)])
            for i in range(2)
        ]
    )
    torch.testing.assert_close(entmax(x, alpha), expected, atol=1e-6, rtol=0)


# ------------------------------------------------------------------ numerical soundness
@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0, 2.5])
@pytest.mark.parametrize(
    "dtype,offsets", [(torch.float32, [1e4, 1e7, 1e9]), (F64, [1e4, 1e9, 1e16])]
)
def test_large_offsets_are_exact_as_in_the_package(alpha, dtype, offsets):
    """A constant added to a row changes nothing: the search uses gaps to the max."""
    base = torch.randn(40, 17, dtype=F64, generator=torch.Generator().manual_seed(3))
    for offset in offsets + [-o for o in offsets]:
        x = (base + offset).to(dtype)  # the gaps the dtype can represent at this offset
        gaps = x.double() - x.double().amax(-1, keepdim=True)
        tol = 1e-6 if dtype == F64 else 2e-6
        torch.testing.assert_close(
            ours(x, alpha).double(), reference(gaps, alpha), atol=tol, rtol=0
        )


@pytest.mark.parametrize(
    "fn",
    [softmax, sparsemax, entmax, lambda x: entmax(x, 1.3), lambda x: entmax(x, 3.0)],
)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, F64])
def test_masked_fill_and_finfo_min_rows_are_uniform_like_softmax(fn, dtype):
    """Padding by ``masked_fill(-1e9)`` and ``finfo.min`` rows: softmax's answer."""
    x = torch.randn(4, 6, dtype=dtype)
    x[1] = -1e4 if dtype == torch.float16 else -1e9  # -1e9 overflows float16
    x[2] = torch.finfo(dtype).min
    x[3, 2:] = torch.finfo(dtype).min  # a padded row: two live keys, four padded
    p = fn(x)
    assert p.dtype == dtype and torch.isfinite(p).all()
    torch.testing.assert_close(
        p[1:3].double(), torch.full((2, 6), 1 / 6, dtype=F64), atol=1e-3, rtol=0
    )
    assert (p[3, 2:] == 0).all()
    torch.testing.assert_close(
        p[3, :2].double(), fn(x[3:, :2].double())[0], atol=1e-2, rtol=0
    )


@pytest.mark.parametrize("alpha", [1.0, 1.25, 1.3, 1.5, 2.0, 2.5])
def test_extreme_finite_rows_match_the_package(alpha):
    big = torch.finfo(torch.float32).max
    x = torch.tensor(
        [[big, big, -big, 0.0], [big, -big, -big, -big], [-big, -big, -big, -big * 0.5]]
    )
    p = ours(x, alpha)
    assert torch.isfinite(p).all()
    torch.testing.assert_close(p.sum(-1), torch.ones(3))
    torch.testing.assert_close(p[0], torch.tensor([0.5, 0.5, 0.0, 0.0]))
    torch.testing.assert_close(p[1], torch.tensor([1.0, 0.0, 0.0, 0.0]))
    torch.testing.assert_close(p[2], torch.tensor([0.0, 0.0, 0.0, 1.0]))


@pytest.mark.parametrize(
    "fn",
    [softmax, sparsemax, entmax, lambda x: entmax(x, 1.3), lambda x: entmax(x, 3.0)],
)
def test_empty_batch_returns_empty_like_torch_softmax(fn):
    for shape in [(0, 5), (2, 0, 5)]:
        x = torch.zeros(shape, requires_grad=True)
        p = fn(x)
        assert p.shape == torch.softmax(x, -1).shape == shape
        p.sum().backward()
        assert x.grad.shape == shape


@pytest.mark.parametrize("alpha", [1.25, 1.3, 1.5, 2.0, 2.5])
@pytest.mark.parametrize("compiled", [True, False])
def test_double_backward_is_exact(alpha, compiled, monkeypatch):
    """gradgradcheck on the compiled CPU path and the torch engine (as off the CPU, or
    on a CPU without a C compiler)."""
    import attnlib.normalizers._entmax_loops as K

    if not compiled:
        monkeypatch.setattr(K, "available", lambda: False)
    x = hard_rows(48)[::4].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: ours(x, alpha), (x,))
    # the second derivative along random directions (fast mode): the full one took
    # 12-14 s a case, most of the file's time
    assert torch.autograd.gradgradcheck(lambda x: ours(x, alpha), (x,), fast_mode=True)


def test_double_backward_of_softmax_and_tensor_alpha():
    x = torch.randn(3, 5, dtype=F64, requires_grad=True)
    assert torch.autograd.gradgradcheck(softmax, (x,))
    alpha = torch.tensor([[1.3], [1.6], [1.9]], dtype=F64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda x, a: entmax(x, a), (x, alpha))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_gradient_matches_float32(dtype):
    x = torch.randn(6, 9) * 2
    g = torch.randn(6, 9)
    xh = x.to(dtype).requires_grad_()
    x32 = xh.detach().float().requires_grad_()
    entmax(xh, 1.5).backward(g.to(dtype))
    entmax(x32, 1.5).backward(g)
    assert xh.grad.dtype == dtype
    torch.testing.assert_close(xh.grad.float(), x32.grad, atol=5e-2, rtol=5e-2)


# ----------------------------------------------------------------------- compiled loops
def _run(code, **env):
    import os
    import subprocess
    import sys

    env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.split()


def test_c_loops_are_built_once_and_loaded_by_a_new_process(tmp_path):
    """The first process compiles the C loops into the cache; the next loads them."""
    import os
    import shutil

    import attnlib.normalizers._entmax_loops as K

    if shutil.which((os.environ.get("CC") or "cc").split()[0]) is None:
        pytest.skip("no C compiler: the torch engine serves (tested below)")
    code = (  # every family (q = 1, 2, 4 and any) in both dtypes, forward and backward
        "import torch\n"
        "from attnlib.normalizers import _entmax_loops as K\n"
        "from attnlib.normalizers import entmax\n"
        "for dtype in (torch.float32, torch.float64):\n"
        "    for a in (2.0, 1.5, 1.25, 1.3):\n"
        "        x = torch.randn(4, 9, dtype=dtype, requires_grad=True)\n"
        "        entmax(x, a).sum().backward()\n"
        "print(K.available(), K.builds, K._loops().path)\n"
    )
    first = _run(code, ATTNLIB_CACHE_DIR=str(tmp_path))
    second = _run(code, ATTNLIB_CACHE_DIR=str(tmp_path))
    assert first[:2] == ["True", "1"] and second[:2] == ["True", "0"]
    assert first[2] == second[2] and os.path.dirname(second[2]) == str(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(second[2])]
    # The process running this test uses the C loops too (the suite tests them).
    assert K.available()


def test_without_a_working_compiler_the_torch_engine_serves(tmp_path):
    code = (
        "import torch\n"
        "from attnlib.normalizers import _entmax_loops as K\n"
        "from attnlib.normalizers import sparsemax\n"
        "x = torch.tensor([[1.0, 0.5, -2.0]], requires_grad=True)\n"
        "p = sparsemax(x)\n"
        "p.backward(torch.tensor([[1.0, 0.0, 0.0]]))\n"
        "print(K.available(), K.builds, *p[0].tolist(), *x.grad[0].tolist())\n"
    )
    # `false` fails like a broken compiler; the other name is no compiler at all.
    for cc, builds in (("false", "1"), ("no-such-compiler-for-attnlib", "0")):
        out = _run(code, ATTNLIB_CACHE_DIR=str(tmp_path), CC=cc)
        assert out == ["False", builds, "0.75", "0.25", "0.0", "0.5", "-0.5", "0.0"]
    assert not list(tmp_path.iterdir())  # nothing half-built is left behind


def _loop_inputs(dtype):
    """Hard rows, masked keys and offset rows, with α - 1 per row for each family."""
    x = hard_rows(64)
    x[::5, 3::4] = NEG_INF
    x[1::7] += 1e4
    x = x.to(dtype)
    yield 1, x, torch.full((len(x),), 1.0, dtype=F64)
    yield 2, x, torch.full((len(x),), 0.5, dtype=F64)
    yield 4, x, torch.full((len(x),), 0.25, dtype=F64)
    yield 0, x, torch.linspace(0.05, 1.0, len(x), dtype=F64)  # any α, one per row


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_c_loops_agree_with_the_torch_engine(dtype):
    """The C loops compute what the torch engine (their fallback, and the maps off the
    CPU) computes, every family, forward and backward."""
    import attnlib.normalizers._entmax_loops as K
    from attnlib.normalizers import _entmax as T

    if not K.available():
        pytest.skip("no C compiler: the torch engine serves")
    tol = 1e-12 if dtype == F64 else 2e-6
    g = torch.randn(hard_rows(64).shape, generator=torch.Generator().manual_seed(5))
    g = g.to(dtype)
    for family, x, am1 in _loop_inputs(dtype):
        p, grad = torch.empty_like(x), torch.empty_like(x)
        K.forward(x, x.amax(-1), am1, p, family)
        K.backward(p, g, am1, grad, family)
        alpha = (1 + am1).to(dtype)[:, None] if family == 0 else 1 + am1[0].item()
        expected = T.threshold_map(x, x.amax(-1, keepdim=True), alpha, dtype)
        assert (p[torch.isneginf(x)] == 0).all()
        torch.testing.assert_close(p.sum(-1), torch.ones(len(x), dtype=dtype))
        torch.testing.assert_close(p, expected, atol=tol, rtol=0)
        vjp = T.entmax_vjp(expected, g, alpha, differentiable=False)
        torch.testing.assert_close(grad, vjp, atol=tol, rtol=tol)


def test_loops_reject_mismatched_tensors():
    import attnlib.normalizers._entmax_loops as K

    x = torch.randn(3, 5)
    am1 = torch.full((3,), 0.5, dtype=F64)
    with pytest.raises(ValueError, match="contiguous"):
        K.forward(x.t().contiguous().t(), x.amax(-1), am1, torch.empty_like(x), 2)
    with pytest.raises(ValueError, match="top must have the dtype"):
        K.forward(x, x.amax(-1).double(), am1, torch.empty_like(x), 2)
    with pytest.raises(ValueError, match="am1 must be float64"):
        K.backward(x, x, am1.float(), torch.empty_like(x), 2)
    with pytest.raises(ValueError, match="do not match"):
        K.forward(x, x.amax(-1)[:2], am1, torch.empty_like(x), 2)


# ------------------------------------------------- masked scores (mutation campaign)
@pytest.mark.parametrize(
    "alpha,ref",
    [
        (1.0, lambda x, y: torch.nn.functional.cross_entropy(x, y, reduction="none")),
        (1.5, E.entmax15_loss),
        (2.0, E.sparsemax_loss),
    ],
)
def test_fenchel_young_loss_ignores_masked_scores(alpha, ref):
    """Keys masked with -inf take no part: the loss is the package's on the other keys
    (finite, not NaN from 0 · inf)."""
    x = torch.randn(4, 5, dtype=F64, generator=torch.Generator().manual_seed(8))
    kept = [0, 2, 4]
    masked = x.clone()
    masked[:, [1, 3]] = float("-inf")
    y = torch.tensor([0, 2, 4, 2])
    loss = fenchel_young_loss(masked, y, alpha, reduction="none")
    expected = ref(x[:, kept], torch.tensor([0, 1, 2, 1]))
    torch.testing.assert_close(loss, expected, atol=1e-10, rtol=1e-10)
