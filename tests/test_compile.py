"""attention, scaled_dot_product_attention and the layers under torch.compile,
torch.export and torch.func.vmap, against eager (issue 49.3).

The checks that read values (NaN, overflow) leave the traced path
(``attnlib.utils.traced``): compiled and exported graphs have no graph break from
attnlib.functional. The compiles use the ``eager`` and ``aot_eager`` backends (cheap);
one test compiles with inductor on the CPU.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo as dynamo

import attnlib
from attnlib import MultiHeadAttention, TransformerEncoderLayer, attention
from attnlib import scaled_dot_product_attention as sdpa

# While a graph is traced the normalisers take the engine that reads no values
# (attnlib/normalizers/_traced.py); each is compiled, exported and vmapped here.
NORMALIZERS = ["softmax", "sparsemax", "entmax"]
VMAP_NORMALIZERS = NORMALIZERS


def qkv(dtype=torch.float32, seed=0, n_q=5, n_k=6):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(2, 3, n_q, 8, generator=g, dtype=dtype),
        torch.randn(2, 3, n_k, 8, generator=g, dtype=dtype),
        torch.randn(2, 3, n_k, 4, generator=g, dtype=dtype),
    )


def bool_mask(n_q=5, n_k=6):
    m = torch.rand(n_q, n_k, generator=torch.Generator().manual_seed(3)) > 0.4
    m[:, 0] = True
    m[1] = False  # a query with no key: zeros, traced as eager
    return m


CALLS = {
    "sdpa": lambda n: lambda q, k, v, m: sdpa(q, k, v, m, normalizer=n),
    "sdpa causal": lambda n: (
        lambda q, k, v, m: sdpa(q, k, v, is_causal=True, normalizer=n)
    ),  # fmt: skip
    "attention weights": lambda n: (
        lambda q, k, v, m: attention(q, k, v, mask=m, normalizer=n)
    ),
    "attention no weights": lambda n: (
        lambda q, k, v, m: (
            attention(q, k, v, mask=m, normalizer=n, need_weights=False).output
        )
    ),
    "attention causal": lambda n: (
        lambda q, k, v, m: attention(q, k, v, is_causal=True, normalizer=n)
    ),
}


def _same(a, b):
    torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("normalizer", NORMALIZERS)
@pytest.mark.parametrize("call", CALLS)
def test_compiles_in_one_graph_and_agrees_with_eager(call, normalizer):
    fn = CALLS[call](normalizer)
    args = (*qkv(), bool_mask())
    dynamo.reset()
    explained = dynamo.explain(fn)(*args)
    assert explained.graph_break_count == 0, explained.break_reasons
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    _same(compiled(*args), fn(*args))


@pytest.mark.parametrize("normalizer", NORMALIZERS)
@pytest.mark.parametrize("need_weights", [False, True])
def test_exports_and_agrees_with_eager(normalizer, need_weights):
    class Attend(torch.nn.Module):
        def forward(self, q, k, v, m):
            if need_weights:
                return tuple(attention(q, k, v, mask=m, normalizer=normalizer))
            return sdpa(q, k, v, m, normalizer=normalizer)

    args = (*qkv(), bool_mask())
    program = torch.export.export(Attend(), args)
    other = (*qkv(seed=1), bool_mask())  # the graph holds no values of the first input
    for a, b in zip(
        torch.utils._pytree.tree_leaves(program.module()(*other)),
        torch.utils._pytree.tree_leaves(Attend()(*other)),
    ):
        _same(a, b)


@pytest.mark.parametrize("normalizer", VMAP_NORMALIZERS)
def test_vmap_over_a_batch_agrees_with_the_batched_call(normalizer):
    q, k, v = qkv()
    m = bool_mask()
    fns = [
        lambda q, k, v: sdpa(q, k, v, m, normalizer=normalizer),
        lambda q, k, v: attention(q, k, v, mask=m, normalizer=normalizer).output,
        lambda q, k, v: (
            attention(
                q, k, v, is_causal=True, normalizer=normalizer, need_weights=False
            ).output
        ),  # fmt: skip
    ]
    for fn in fns:
        _same(torch.func.vmap(fn)(q, k, v), fn(q, k, v))


def test_vmap_and_grad_give_per_sample_gradients():
    q, k, v = qkv(torch.float64)
    m = bool_mask()

    def loss(q, k, v):
        return attention(q, k, v, mask=m).output.square().sum()

    per_sample = torch.func.vmap(torch.func.grad(loss))(q, k, v)
    for i in range(q.shape[0]):
        qi = q[i].clone().requires_grad_()
        (want,) = torch.autograd.grad(loss(qi, k[i], v[i]), qi)
        torch.testing.assert_close(per_sample[i], want)


def test_a_traced_call_still_computes_what_eager_refuses_nothing_silently():
    """Under compile the value checks are skipped (they would break the graph); the
    shapes, dtypes and devices are still checked while tracing."""
    q, k, v = qkv()
    compiled = torch.compile(
        lambda q, k, v: sdpa(q, k, v), fullgraph=True, backend="eager"
    )
    with pytest.raises(Exception, match="value has dtype torch.float64"):
        compiled(q, k, v.double())
    with pytest.raises(Exception, match="key and value must have the same number"):
        compiled(q, k, v[..., :3, :])


def _layers():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.0, batch_first=True).eval()
    enc = TransformerEncoderLayer(
        8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True
    ).eval()
    return {
        "mha": (lambda x: mha(x, x, x, need_weights=False)[0], mha),
        "mha weights": (lambda x: mha(x, x, x, need_weights=True)[1], mha),
        "encoder": (lambda x: enc(x), enc),
    }


@pytest.mark.parametrize("name", ["mha", "mha weights", "encoder"])
def test_layers_compile_export_and_vmap(name):
    fn, module = _layers()[name]
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    dynamo.reset()
    explained = dynamo.explain(fn)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    with torch.no_grad():
        _same(torch.compile(fn, fullgraph=True, backend="aot_eager")(x), fn(x))
        _same(torch.func.vmap(fn)(x[:, None]).squeeze(1), fn(x))

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, x):
            return fn(x)

    program = torch.export.export(Wrap(), (x,))
    y = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        _same(program.module()(y), fn(y))


def test_inductor_on_the_cpu_agrees_with_eager():
    q, k, v = qkv()
    m = bool_mask()

    def fn(q, k, v):
        return attention(q, k, v, mask=m).output

    _same(torch.compile(fn, fullgraph=True)(q, k, v), fn(q, k, v))


def test_the_function_and_the_package_have_different_names():
    assert callable(attnlib.attention) and attnlib.attention is attention
    assert attnlib.scaled_dot_product_attention is sdpa
    assert not callable(attnlib.functional)


@pytest.mark.parametrize("alpha", [2.0, 1.5, 1.3, 1.0, "tensor"])
def test_the_maps_compile_and_vmap_with_their_gradients_and_masked_rows(alpha):
    """While traced, the maps run on the engine that reads no values
    (attnlib/normalizers/_traced.py): values and gradients in x (and in a tensor α)
    equal eager's, a fully masked row included."""
    from attnlib.normalizers import entmax

    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 7, dtype=torch.float64, generator=g)
    x[1] = -torch.inf
    x[2, :3] = -torch.inf
    w = torch.randn(4, 7, dtype=torch.float64, generator=g)
    a = torch.tensor([[1.2], [1.5], [1.8], [2.0]], dtype=torch.float64)

    def loss(x, a):
        return (entmax(x, a if alpha == "tensor" else alpha) * w).sum()

    def grads(f):
        xs, as_ = x.clone().requires_grad_(), a.clone().requires_grad_()
        out = f(xs, as_)
        out.backward()
        return out.detach(), xs.grad, as_.grad

    eager = grads(loss)
    compiled = grads(torch.compile(loss, fullgraph=True, backend="aot_eager"))
    for e, c in zip(eager, compiled):
        if e is not None or c is not None:
            torch.testing.assert_close(c, e, atol=1e-10, rtol=1e-10)
    assert (eager[1][1] == 0).all()
    rows = torch.func.vmap(lambda r: entmax(r, 1.5 if alpha == "tensor" else alpha))(x)
    torch.testing.assert_close(rows, entmax(x, 1.5 if alpha == "tensor" else alpha))
