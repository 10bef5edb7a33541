"""The Triton kernels of attnlib.normalizers._triton_entmax, run without a GPU.

Where no CUDA device is present, the kernels run in Triton's interpreter
(``TRITON_INTERPRET=1``) on CPU tensors, small shapes; on a GPU machine the same tests
run the compiled kernels on CUDA tensors. References: the torch engine (attnlib on the
CPU, float64) and the ``entmax`` package.
"""

import contextlib
import os
import warnings

import pytest
import torch

REAL_CUDA = torch.cuda.device_count() > 0
if not REAL_CUDA:  # conftest.py sets it first; Triton reads it on its first import
    os.environ.setdefault("TRITON_INTERPRET", "1")
triton = pytest.importorskip("triton")

from simulated_cuda import SimulatedCuda  # noqa: E402

from attnlib.normalizers import _triton_entmax as te  # noqa: E402
from attnlib.normalizers import entmax, sparsemax  # noqa: E402
from attnlib.utils import kernels  # noqa: E402

# "cuda" tensors: on the simulated device without a GPU (the kernels run in the
# interpreter), on the real one under `make test-gpu`
ON_CUDA = contextlib.nullcontext if REAL_CUDA else SimulatedCuda

if not REAL_CUDA and type(te._entmax_fwd_kernel).__name__ != "InterpretedFunction":
    pytest.skip("Triton was imported before TRITON_INTERPRET=1 was set",
                allow_module_level=True)  # fmt: skip
DEV = torch.device("cuda" if REAL_CUDA else "cpu")


@pytest.fixture(autouse=True)
def _flash_probe_stubbed(monkeypatch, request):
    """The flash kernels' first-use check costs about 12 s per key in the interpreter:
    tests that are not about it take it as passed (the probe tests run it)."""
    if "probe" not in request.node.name:
        monkeypatch.setattr(kernels, "probe_flash", lambda *args, **kw: None)


ALPHAS = [2.0, 1.5, 1.25, 3.0, "tensor"]
TOL = {torch.float32: 2e-6, torch.bfloat16: 1.6e-2, torch.float16: 2e-3}


def _alpha(a, rows):
    if a == "tensor":  # one α per row, on both sides of 2
        return torch.linspace(1.1, 2.6, rows, dtype=torch.float64).unsqueeze(-1)
    return a


def _scores(rows=6, n=23, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(rows, n, generator=g, dtype=torch.float64)
    x[1, 5:] = float("-inf")  # a masked row keeps 5 keys
    x[2, ::3] = float("-inf")
    x[3, :4] = x[3].max() + 1  # a four-way tie at the top
    return x


def _reference(x, a):
    """The float64 rows ``x`` (with grad) and their α-entmax by the torch engine."""
    xr = x.clone().requires_grad_(True)
    if isinstance(a, float) and a == 2.0:
        return xr, sparsemax(xr)
    return xr, entmax(xr, alpha=a)


def _kernel_alpha(a, rows):
    al = _alpha(a, rows)
    return al.to(DEV) if isinstance(al, torch.Tensor) else al


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("a", ALPHAS)
def test_values_and_gradients_match_the_torch_engine(a, dtype):
    x = _scores()
    al = _alpha(a, len(x))
    g = torch.randn(
        x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    xd = x.to(dtype)  # the kernel sees the rounded scores: so does this reference
    xr, p_ref = _reference(xd.double(), al)
    (grad_ref,) = torch.autograd.grad(p_ref, xr, g)
    p = te.entmax_forward(xd.to(DEV), _kernel_alpha(a, len(x)))
    assert p.dtype == dtype and p.device.type == DEV.type
    tol = TOL[dtype]
    torch.testing.assert_close(p.double().cpu(), p_ref.detach(), atol=tol, rtol=0)
    assert (p.double().cpu()[torch.isinf(x)] == 0).all()
    gx = te.entmax_backward(p, g.to(dtype).to(DEV), _kernel_alpha(a, len(x)))
    assert gx.dtype == dtype
    # the gradient is evaluated at the kernel's p: compare it with the formula there
    ref_at_p = _vjp64(p.double().cpu(), g.to(dtype).double(), al)
    torch.testing.assert_close(gx.double().cpu(), ref_at_p, atol=4 * tol, rtol=4 * tol)
    if dtype == torch.float32:
        torch.testing.assert_close(gx.double().cpu(), grad_ref, atol=1e-4, rtol=1e-4)


def _vjp64(p, g, a):
    from attnlib.normalizers._entmax import entmax_vjp

    return entmax_vjp(p, g, a, differentiable=True)


@pytest.mark.parametrize("a", [2.0, 1.5, 1.25])
def test_values_match_the_entmax_package(a):
    import entmax as peer

    x = _scores(rows=4, n=40, seed=2).float()
    x = x[[0, 3]]  # the package takes no -inf: finite rows only (ties included)
    if a == 2.0:
        ref = peer.sparsemax(x, dim=-1)
    elif a == 1.5:
        ref = peer.entmax15(x, dim=-1)
    else:
        ref = peer.entmax_bisect(x, alpha=a, dim=-1, n_iter=60)
    p = te.entmax_forward(x.to(DEV), a).cpu()
    torch.testing.assert_close(p, ref, atol=2e-6, rtol=0)


def test_ties_share_their_weight_equally():
    x = torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]], device=DEV)
    for a in (2.0, 1.5, 3.0):
        p = te.entmax_forward(x, a).cpu()
        torch.testing.assert_close(p[0, :3], torch.full((3,), p[0, 0].item()))
        torch.testing.assert_close(p[1], torch.full((4,), 0.25))
        torch.testing.assert_close(p.sum(-1), torch.ones(2))


@pytest.mark.parametrize("dtype", list(TOL))
def test_fully_masked_rows_give_zero_output_and_zero_gradient(dtype):
    x = torch.full((3, 9), float("-inf"), dtype=dtype, device=DEV)
    x[1, 2] = 0.0  # one key left: all the weight on it
    for a in (2.0, 1.5, 1.7, torch.tensor([[1.2], [2.0], [3.0]], device=DEV)):
        p = te.entmax_forward(x, a)
        assert torch.isfinite(p).all()
        expected = torch.zeros(3, 9)
        expected[1, 2] = 1
        torch.testing.assert_close(p.float().cpu(), expected)
        gx = te.entmax_backward(p, torch.randn(3, 9).to(dtype).to(DEV), a)
        assert torch.isfinite(gx).all() and (gx.float().cpu() == 0).all()


def _count(monkeypatch, module, *names):
    """Let ``module``'s kernels run as if a CUDA device could launch them (on the
    simulated device of tests/simulated_cuda.py, in the interpreter), recording each
    call of the functions ``names``."""
    calls = []

    def recorded(name):
        real = getattr(module, name)

        def call(*args, **kwargs):
            calls.append(kwargs.get("alpha", name))
            return real(*args, **kwargs)

        return call

    if not REAL_CUDA:
        monkeypatch.setattr(kernels, "runnable", lambda: True)
    monkeypatch.setenv(kernels.ENV, "1")  # no kernel is verified on hardware yet
    for name in names:
        monkeypatch.setattr(module, name, recorded(name))
    return calls


ROW_MAPS = {
    "sparsemax": sparsemax,
    "entmax15": entmax,
    "entmax13": lambda t: entmax(t, 1.3),
    "per-row-alpha": lambda t: entmax(t, torch.linspace(1.2, 2.5, 4).unsqueeze(-1)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(ROW_MAPS))
def test_cuda_rows_reach_the_kernels(name, dtype, monkeypatch):
    """sparsemax / entmax of CUDA rows run the kernels forward and backward, and give
    the CPU's torch engine's values and gradients (a consistency check: the kernels'
    own references are the tests above)."""
    calls = _count(monkeypatch, te, "entmax_forward", "entmax_backward")
    fn = ROW_MAPS[name]
    x = _scores(rows=4, n=11, seed=7).to(dtype)
    w = torch.randn(4, 11, generator=torch.Generator().manual_seed(8)).to(dtype)
    xr = x.clone().requires_grad_(True)
    (fn(xr) * w).sum().backward()
    assert calls == []  # the CPU keeps its compiled loops
    with ON_CUDA():
        xc = x.to("cuda").requires_grad_(True)
        p = fn(xc)
        (p * w.to("cuda")).sum().backward()
        assert p.is_cuda and p.dtype == dtype and xc.grad.is_cuda
        p, grad = p.detach().cpu(), xc.grad.cpu()
    assert calls == ["entmax_forward", "entmax_backward"]
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(p, fn(x).detach(), atol=tol, rtol=tol)
    torch.testing.assert_close(grad, xr.grad, atol=tol, rtol=tol)


def test_cuda_rows_the_kernels_do_not_take_stay_with_the_torch_engine(monkeypatch):
    """float64 rows, and a backward that builds a graph (double backward), use the
    differentiable torch engine."""
    calls = _count(monkeypatch, te, "entmax_forward", "entmax_backward")
    x = _scores(rows=4, n=11, seed=7)[[0, 3]]
    with ON_CUDA():
        entmax(x.to("cuda"))
        assert calls == []
        xc = x.float().to("cuda").requires_grad_(True)
        (g,) = torch.autograd.grad(entmax(xc)[:, 0].sum(), xc, create_graph=True)
        assert calls == ["entmax_forward"]  # forward fused, backward differentiable
        g.sum().backward()
        assert torch.isfinite(xc.grad.cpu()).all()


# ------------------------------------------------------------- flash entmax attention
from attnlib.functional import _triton_flash as tf  # noqa: E402


def _dense(q, k, v, alpha, mask, causal):
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    if causal:
        upper = torch.ones(s.shape[-2:], dtype=torch.bool).triu(1)
        s = s.masked_fill(upper, float("-inf"))
    if isinstance(alpha, float) and alpha == 2.0:
        return sparsemax(s) @ v
    return entmax(s, alpha) @ v


def _qkv(n_q, n_k, dtype=torch.float32, seed=0, heads=2):
    g = torch.Generator().manual_seed(seed)
    shapes = ((heads, n_q, 8), (heads, n_k, 8), (heads, n_k, 5))
    return [2 * torch.randn(s, generator=g).to(dtype) for s in shapes]


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(tf, "BLOCK_M", 16)
    monkeypatch.setattr(tf, "BLOCK_N", 16)


CASES = {  # alpha, masked, causal, dtype
    "sparsemax-mask": (2.0, True, False, torch.float32),
    "entmax15-causal": (1.5, False, True, torch.float32),
    "per-head-alpha": ("tensor", False, False, torch.float32),
    "entmax15-mask-bf16": (1.5, True, False, torch.bfloat16),
    "entmax13-mask-fp16": (1.3, True, False, torch.float16),
}


@pytest.mark.parametrize("case", list(CASES))
def test_flash_attention_matches_the_dense_one(case, small_blocks):
    a, masked, causal, dtype = CASES[case]
    n_q, n_k = (20, 20) if causal else (20, 37)
    q, k, v = _qkv(n_q, n_k, dtype)
    mask = None
    if masked:
        mask = torch.rand(2, n_q, n_k, generator=torch.Generator().manual_seed(3)) > 0.4
        mask[..., 0] = True
    alpha = torch.tensor([[[1.25]], [[2.5]]]) if a == "tensor" else a
    g = torch.randn(2, n_q, 5, generator=torch.Generator().manual_seed(4))
    dev = [t.to(DEV).requires_grad_(True) for t in (q, k, v)]
    out = tf.flash_entmax_attention(
        *dev, alpha=alpha.to(DEV) if a == "tensor" else alpha,
        mask=None if mask is None else mask.to(DEV), causal=causal,
    )  # fmt: skip
    assert out.dtype == dtype
    grads = torch.autograd.grad(out, dev, g.to(dtype).to(DEV))
    ref_in = [t.double().requires_grad_(True) for t in (q, k, v)]
    ref = _dense(*ref_in, alpha if a != "tensor" else alpha.double(), mask, causal)
    ref_grads = torch.autograd.grad(ref, ref_in, g.to(dtype).double())
    tol = 1e-5 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(out.double().cpu(), ref.detach(), atol=tol, rtol=tol)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got.double().cpu(), want, atol=tol, rtol=tol)


def test_flash_attention_gives_zero_for_a_query_with_no_key(small_blocks):
    q, k, v = _qkv(18, 21, heads=1)
    mask = torch.rand(1, 18, 21, generator=torch.Generator().manual_seed(5)) > 0.5
    mask[..., 1] = True
    mask[0, 7] = False  # query 7 attends no key
    g = torch.randn(1, 18, 5, generator=torch.Generator().manual_seed(6))
    dev = [t.to(DEV).requires_grad_(True) for t in (q, k, v)]
    out = tf.flash_entmax_attention(*dev, alpha=1.5, mask=mask.to(DEV))
    grads = torch.autograd.grad(out, dev, g.to(DEV))
    assert (out[0, 7] == 0).all() and (grads[0][0, 7] == 0).all()
    # the reference: query 7 sees every key, but its output carries no gradient
    full, g0 = mask.clone(), g.clone()
    full[0, 7], g0[0, 7] = True, 0
    ref_in = [t.double().requires_grad_(True) for t in (q, k, v)]
    ref = _dense(*ref_in, 1.5, full, False)
    ref_grads = torch.autograd.grad(ref, ref_in, g0.double())
    keep = torch.arange(18) != 7
    torch.testing.assert_close(
        out[0, keep].double().cpu(), ref[0, keep].detach(), atol=1e-5, rtol=1e-5
    )
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got.double().cpu(), want, atol=1e-5, rtol=1e-5)


def _masks(n_q, n_k, seed=10):
    g = torch.Generator().manual_seed(seed)
    return {  # keep key 0 or the diagonal, so that most queries see a key
        shape: (torch.rand(shape, generator=g) > 0.3) | (torch.arange(n_k) == 0)
        for shape in ((2, 1, 1, n_k), (2, 1, n_q, n_k), (1, 2, n_q, n_k))
    }


FLASH_CASES = {  # what is tested: attention's arguments (masks by shape, from _masks)
    "sparsemax, key padding (B, 1, 1, n_k)": dict(
        normalizer="sparsemax", mask=(2, 1, 1, 37)
    ),
    "entmax, causal and a per-batch mask (B, 1, n_q, n_k)": dict(
        normalizer="entmax", is_causal=True, mask=(2, 1, 17, 37)
    ),
    "entmax, dot score, temperature 0.7, a per-head mask, k and v broadcast": dict(
        normalizer="entmax", score="dot", temperature=0.7, mask=(1, 2, 17, 37), kv=1
    ),
    "sparsemax, scale 0.9, q a transposed view": dict(
        normalizer="sparsemax", scale=0.9, q_view=True
    ),
}


@pytest.mark.parametrize("case", list(FLASH_CASES))
def test_cuda_attention_without_weights_runs_flash(case, small_blocks, monkeypatch):
    """attention(..., need_weights=False) on CUDA: sparsemax and entmax run the flash
    kernels, with the dense attention's output and gradients (float64 on the CPU)."""
    from attnlib import attention

    calls = _count(monkeypatch, tf, "flash_entmax_attention")
    kw = dict(FLASH_CASES[case])
    g = torch.Generator().manual_seed(9)
    q = torch.randn(2, 2, 17, 8, generator=g)
    k, v = (torch.randn(kw.pop("kv", 2), 2, 37, 8, generator=g) for _ in "kv")
    if kw.pop("q_view", False):  # strides (.., 1, 17): not contiguous
        q = torch.randn(2, 2, 8, 17, generator=g).transpose(-1, -2)
    if "mask" in kw:
        kw["mask"] = _masks(17, 37)[kw["mask"]]
    ref_in = [t.double().requires_grad_(True) for t in (q, k, v)]
    ref = attention(*ref_in, **kw).output
    ref.sum().backward()
    with ON_CUDA():
        dev = [t.to("cuda").requires_grad_(True) for t in (q, k, v)]
        if "mask" in kw:
            kw["mask"] = kw["mask"].to("cuda")
        out = attention(*dev, **kw, need_weights=False)
        out.output.sum().backward()
        assert out.weights is None and out.output.is_cuda
        got = [out.output.detach().cpu()] + [t.grad.cpu() for t in dev]
    assert calls == [{"sparsemax": 2.0, "entmax": 1.5}[kw["normalizer"]]]
    for a, b in zip(got, [ref.detach()] + [t.grad for t in ref_in]):
        torch.testing.assert_close(a.double(), b, atol=1e-5, rtol=1e-5)


def test_flash_reaches_the_limit_of_a_tiny_temperature(monkeypatch):
    """The row maximum is subtracted before the scale: at temperature 1e-37 sparsemax
    attention is the limit (all weight on the top key), as on the dense path."""
    from attnlib import attention

    calls = _count(monkeypatch, tf, "flash_entmax_attention")
    q, k, v = _qkv(5, 7)
    ref = attention(q, k, v, normalizer="sparsemax", temperature=1e-37).output
    with ON_CUDA():
        dev = [t.to("cuda") for t in (q, k, v)]
        out = attention(*dev, normalizer="sparsemax", temperature=1e-37,
                        need_weights=False).output.cpu()  # fmt: skip
    assert calls == [2.0]
    top = (q @ k.transpose(-1, -2)).argmax(-1)  # the limit, restated
    torch.testing.assert_close(
        ref, torch.gather(v, 1, top[..., None].expand(-1, -1, 5))
    )
    torch.testing.assert_close(out, ref)


def test_flash_flags_scores_that_float32_cannot_hold(monkeypatch):
    """A NaN score beside finite ones, or a row whose kept keys all score -inf (q·k
    overflowing float32): the kernel writes NaN in that query's row, rather than drop
    the key or give zeros, so attention raises as the dense path does. (On a real GPU
    the raise is a device-side assertion, which ends the CUDA context: there the kernel
    alone is run.)"""
    from attnlib import attention

    _count(monkeypatch, tf, "flash_entmax_attention")
    q, k, v = _qkv(5, 7)
    k[0, 3, 0] = float("nan")  # batch 0: every query has a NaN score (key 3)
    q[1, 2] = 1e20  # batch 1, query 2: q·k overflows to -inf on every key
    k[1] = -(k[1].abs() + 1) * 1e19
    with ON_CUDA():
        dev = [t.to("cuda") for t in (q, k, v)]
        out = tf.flash_entmax_attention(*dev, alpha=1.5, scale=1.0).cpu()
    flagged = torch.zeros(2, 5, dtype=torch.bool)
    flagged[0], flagged[1, 2] = True, True
    assert torch.isnan(out[flagged]).all() and torch.isfinite(out[~flagged]).all()
    q, k, v = _qkv(5, 7)
    q[0, 1] *= 1e20  # through attention: +inf and NaN scores, refused by both paths
    k *= 1e19
    with pytest.raises(ValueError, match=r"score\(q, k\) gave NaN"):
        attention(q, k, v, normalizer="entmax", score="dot")
    if not REAL_CUDA:
        refused = pytest.raises((ValueError, RuntimeError), match=r"gave NaN or \+inf")
        with ON_CUDA(), refused:
            dev = [t.to("cuda") for t in (q, k, v)]
            attention(*dev, normalizer="entmax", score="dot", need_weights=False)


DENSE_ONLY = {  # attention's arguments that the flash kernels do not compute
    "weights asked": dict(normalizer="sparsemax"),
    "softmax (SDPA's)": dict(normalizer="softmax", need_weights=False),
    "a callable normalizer": dict(normalizer=sparsemax, need_weights=False),
    "another score": dict(normalizer="entmax", score="neg_sq_dist", need_weights=False),
    "dropout": dict(normalizer="entmax", dropout_p=0.1, need_weights=False),
    "a float mask": dict(
        normalizer="entmax", mask=torch.zeros(6, 9), need_weights=False
    ),
    "float64": dict(normalizer="entmax", need_weights=False, dtype=torch.float64),
}


@pytest.mark.parametrize("case", list(DENSE_ONLY))
def test_cuda_attention_the_flash_kernels_do_not_take_is_dense(case, monkeypatch):
    from attnlib import attention

    calls = _count(monkeypatch, tf, "flash_entmax_attention")
    kw = dict(DENSE_ONLY[case])
    q, k, v = _qkv(6, 9, kw.pop("dtype", torch.float32))
    with ON_CUDA():
        dev = [t.to("cuda") for t in (q, k, v)]
        if isinstance(kw.get("mask"), torch.Tensor):
            kw["mask"] = kw["mask"].to("cuda")
        out = attention(*dev, **kw).output
        assert out.is_cuda and torch.isfinite(out.cpu()).all()
    assert calls == []


def test_flash_dots_are_exact_for_float32_unless_torch_allows_tf32():
    """tl.dot rounds float32 tiles to TF32 by default on a GPU (the interpreter does
    not): float32 attention asks for IEEE products, as PyTorch's matmuls do by default;
    half-precision inputs, exact in TF32, keep its speed."""
    q, matmul = torch.zeros(1, 1, 16), torch.backends.cuda.matmul
    before = matmul.allow_tf32
    try:
        matmul.allow_tf32 = False
        assert tf._precision(q) == "ieee"
        assert tf._precision(q.to(torch.bfloat16)) == tf._precision(q.half()) == "tf32"
        matmul.allow_tf32 = True
        assert tf._precision(q) == "tf32"
    finally:
        matmul.allow_tf32 = before


class _Refused:
    """A kernel that Triton will not build: its launch raises OutOfResources."""

    def __init__(self, name):
        self.__name__, self.tries = name, 0

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.tries += 1
            raise triton.OutOfResources(300_000, 232_448, "shared memory")

        return launch


def test_a_kernel_triton_refuses_leaves_the_torch_engine_to_answer(monkeypatch):
    """Where Triton cannot build or fit a kernel (a GPU or release the kernels were not
    compiled for), the call warns and the torch engine (row maps) or the dense path
    (attention) answers; a refused configuration is not tried again, and the kernels
    Triton builds still run."""
    from attnlib import attention

    monkeypatch.setattr(kernels, "_refused", {})
    monkeypatch.setattr(kernels, "probed", lambda key, probe: True)  # not the point
    calls = _count(monkeypatch, te, "entmax_forward")
    fwd, bwd = _Refused("flash_fwd"), _Refused("rows_bwd")
    monkeypatch.setattr(tf, "_fwd_kernel", fwd)
    monkeypatch.setattr(te, "_entmax_bwd_kernel", bwd)
    x = _scores(rows=4, n=11, seed=7)[[0, 3]].float()
    q, k, v = _qkv(6, 9)
    ref = [t.double().requires_grad_(True) for t in (q, k, v)]
    ref_out = attention(*ref, normalizer="entmax").output
    ref_out.sum().backward()
    xr = x.double().requires_grad_(True)
    sparsemax(xr)[:, 0].sum().backward()
    with ON_CUDA(), pytest.warns(RuntimeWarning, match="torch engine") as warned:
        dev = [t.to("cuda").requires_grad_(True) for t in (q, k, v)]
        xc = x.to("cuda").requires_grad_(True)
        for _ in range(2):
            out = attention(*dev, normalizer="entmax", need_weights=False).output
            out.sum().backward()
            p = sparsemax(xc)
            p[:, 0].sum().backward()
        got = [out.detach().cpu(), *(t.grad.cpu() / 2 for t in dev)]
        p, grad = p.detach().cpu(), xc.grad.cpu() / 2
    # the flash forward once; the row backward once per configuration (1.5-entmax in
    # attention's dense path, sparsemax): nothing more on the second round, while the
    # row forward kernel ran all four times
    assert (fwd.tries, bwd.tries, len(warned), len(calls)) == (1, 2, 3, 4)
    for a, b in zip(got, [ref_out.detach(), *(t.grad for t in ref)]):
        torch.testing.assert_close(a.double(), b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(p.double(), sparsemax(xr).detach(), atol=1e-6, rtol=0)
    torch.testing.assert_close(grad.double(), xr.grad, atol=1e-6, rtol=0)


def test_a_refused_flash_backward_says_how_to_differentiate(monkeypatch):
    from attnlib import attention

    monkeypatch.setattr(kernels, "_refused", {})
    _count(monkeypatch, tf, "flash_entmax_attention")
    monkeypatch.setattr(tf, "_bwd_q_kernel", _Refused("flash_bwd"))
    with ON_CUDA():
        dev = [t.to("cuda").requires_grad_(True) for t in _qkv(6, 9)]
        out = attention(*dev, normalizer="sparsemax", need_weights=False).output
        with (
            pytest.warns(RuntimeWarning, match="flash_bwd"),
            pytest.raises(RuntimeError, match=r"need_weights=True"),
        ):
            out.sum().backward()


# --------------------------------------- opt-in kernels and their first-use check
def test_cuda_rows_go_to_the_kernels_only_when_asked(monkeypatch):
    """No kernel is verified on hardware yet: CUDA rows stay with the torch engine
    unless ATTNLIB_TRITON=1; ATTNLIB_TRITON=0 turns even a verified kernel off."""
    calls = _count(monkeypatch, te, "entmax_forward")
    x = _scores(rows=4, n=11, seed=7).float()
    with ON_CUDA():
        xc = x.to("cuda")
        monkeypatch.delenv(kernels.ENV)
        sparsemax(xc)
        assert calls == [] and kernels.VERIFIED == frozenset()
        monkeypatch.setenv(kernels.ENV, "1")
        sparsemax(xc)
        assert calls == ["entmax_forward"]
        monkeypatch.setattr(kernels, "VERIFIED", frozenset({"rows", "flash"}))
        monkeypatch.setenv(kernels.ENV, "0")
        sparsemax(xc)
        assert len(calls) == 1
        monkeypatch.delenv(kernels.ENV)
        sparsemax(xc)  # verified: on by default
        assert len(calls) == 2


class _Planted:
    """A wrong kernel: the real one, then ``corrupt(args)`` on its output."""

    def __init__(self, real, corrupt):
        self.real, self.corrupt, self.__name__ = real, corrupt, real.__name__

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.real[grid](*args, **kwargs)
            self.corrupt(args)

        return launch


def _long_rows_off(args):  # p (args[1]) off by 0.1 % on rows longer than a block
    if args[3] > 1024:
        args[1].mul_(1.001)


def _grad_sign(args):  # the gradient (args[2]) with the wrong sign
    args[2].neg_()


def _probes(monkeypatch):
    """A fresh record of first-use checks, and the list of the row probes run."""
    monkeypatch.setattr(kernels, "_probed", {})
    runs, real = [], te._probe
    monkeypatch.setattr(te, "_probe", lambda *a: runs.append(a[:2]) or real(*a))
    return runs


@pytest.mark.parametrize(
    "kernel, corrupt, where",
    [("_entmax_fwd_kernel", _long_rows_off, "forward, rows of 2500"),
     ("_entmax_bwd_kernel", _grad_sign, "backward, rows of 7")],
)  # fmt: skip
def test_the_probe_catches_a_wrong_rows_kernel_once(
    kernel, corrupt, where, monkeypatch
):
    """A planted wrong kernel (forward off by 0.1 % on long rows only, or the gradient's
    sign flipped): the first use warns once, the torch engine answers, then and after;
    the check is not run again for that key."""
    runs = _probes(monkeypatch)
    calls = _count(monkeypatch, te, "entmax_forward")
    monkeypatch.setattr(te, kernel, _Planted(getattr(te, kernel), corrupt))
    x = _scores(rows=4, n=11, seed=7).float()
    xr = x.double().requires_grad_(True)
    ref = entmax(xr)
    (ref_g,) = torch.autograd.grad(ref[:, 0].sum(), xr)
    with ON_CUDA():
        xc = x.to("cuda").requires_grad_(True)
        with pytest.warns(RuntimeWarning, match="disagrees with the torch engine") as w:
            p = entmax(xc)
        assert len(w) == 1 and where in str(w[0].message)
        (g,) = torch.autograd.grad(p[:, 0].sum(), xc)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once: not again
            p2 = entmax(xc)
        p, g, p2 = p.detach().cpu(), g.cpu(), p2.detach().cpu()
    assert runs == [(2, torch.float32)] and len(calls) == 2
    assert kernels._probed == {("entmax_rows", 2, torch.float32, "cuda:0"): False}
    torch.testing.assert_close(p.double(), ref.detach(), atol=1e-6, rtol=0)
    torch.testing.assert_close(p2, p, atol=0, rtol=0)
    torch.testing.assert_close(g.double(), ref_g, atol=1e-6, rtol=0)


def test_correct_row_kernels_pass_the_probe_once_per_key(monkeypatch):
    runs = _probes(monkeypatch)
    _count(monkeypatch, te, "entmax_forward")
    x = _scores(rows=4, n=11, seed=7)
    with ON_CUDA(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            sparsemax(x.float().to("cuda"))
            entmax(x.bfloat16().to("cuda"), torch.tensor([[1.2], [1.7], [2.4], [3.0]]))
    assert runs == [(1, torch.float32), (0, torch.bfloat16)]
    assert set(kernels._probed.values()) == {True}


def _flash_off(args):  # the output (args[3]) off by 1 %
    args[3].mul_(1.01)


@pytest.mark.parametrize("planted", [False, True], ids=["correct", "planted-wrong"])
def test_the_flash_probe_passes_a_correct_kernel_and_catches_a_wrong_one(
    planted, small_blocks, monkeypatch
):
    from attnlib import attention

    monkeypatch.setattr(kernels, "_probed", {})
    calls = _count(monkeypatch, tf, "flash_entmax_attention")
    if planted:
        monkeypatch.setattr(tf, "_fwd_kernel", _Planted(tf._fwd_kernel, _flash_off))
    q, k, v = _qkv(6, 9)
    ref = attention(q.double(), k.double(), v.double(), normalizer="sparsemax").output
    with ON_CUDA(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dev = [t.to("cuda") for t in (q, k, v)]
        for _ in range(2):
            out = attention(*dev, normalizer="sparsemax", need_weights=False).output
        out = out.cpu()
    disagreed = [x for x in w if "disagrees" in str(x.message)]
    assert len(disagreed) == (1 if planted else 0)
    flash = {k: ok for k, ok in kernels._probed.items() if k[0].startswith("flash")}
    assert flash == {
        ("flash_entmax_attention", 1, torch.float32, "cuda:0"): not planted
    }
    # the two calls, and the probe's own: a masked and a causal one, or only the first
    # where it disagrees (the probe's calls go to the kernel unchecked)
    assert calls == [2.0] * (3 if planted else 4)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)
