"""attnlib.attention against PyTorch's own attention, and its handling of bad input."""

import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnlib import MultiHeadAttention, TransformerEncoderLayer, attention

TOL = dict(rtol=0, atol=1e-10)


def qkv(*batch, n_q=5, n_k=7, d=8, d_v=3, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*batch, n, m, generator=g, dtype=dtype)
        for n, m in ((n_q, d), (n_k, d), (n_k, d_v))
    )


@pytest.mark.parametrize("batch", [(), (3,), (2, 4)])
def test_equals_torch_scaled_dot_product_attention(batch):
    q, k, v = qkv(*batch)
    out, w = attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)
    torch.testing.assert_close(
        w.sum(-1), torch.ones(*batch, 5, dtype=torch.float64), **TOL
    )


def test_mask_equals_torch_and_zeroes_weights():
    q, k, v = qkv(2)
    mask = torch.rand(5, 7, generator=torch.Generator().manual_seed(1)) > 0.5
    mask[:, 0] = True
    out, w = attention(q, k, v, mask=mask)
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **TOL
    )
    assert (w[:, ~mask] == 0).all()


def test_batch_dimensions_broadcast():
    q, _, _ = qkv(4, 3)
    _, k, v = qkv(3)  # keys shared across the leading batch dimension
    out, w = attention(q, k, v)
    assert out.shape == (4, 3, 5, 3) and w.shape == (4, 3, 5, 7)
    torch.testing.assert_close(out[2], attention(q[2], k, v).output, **TOL)


def test_scores_match_their_kernels():
    q, k, v = qkv()
    sq = torch.cdist(q, k) ** 2
    w = attention(q, k, v, score="neg_sq_dist", temperature=0.7).weights
    torch.testing.assert_close(w, torch.softmax(-sq / 1.4, -1), **TOL)
    w = attention(q, k, v, score="neg_l1", temperature=2.0).weights
    torch.testing.assert_close(w, torch.softmax(-torch.cdist(q, k, p=1) / 2, -1), **TOL)
    w = attention(q, k, v, score="dot").weights
    torch.testing.assert_close(w, torch.softmax(q @ k.T, -1), **TOL)
    w = attention(
        q, k, v, score=lambda a, b: -((a.sum(-1, keepdim=True) - b.sum(-1)) ** 2)
    ).weights
    torch.testing.assert_close(
        w, torch.softmax(-((q.sum(-1)[:, None] - k.sum(-1)[None]) ** 2), -1), **TOL
    )


def test_unit_norm_gaussian_kernel_is_dot_product_attention():
    """Eq. (7) of the self-expression paper: Gaussian kernel on the sphere is softmax.

    ``exp(-|q - k|²/(2σ²)) ∝ exp(q·k/σ²)`` when ``|q| = |k| = 1``: the factor that does
    not depend on ``k`` cancels in the normalisation.
    """
    q, k, v = qkv()
    q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    torch.testing.assert_close(
        attention(q, k, v, score="neg_sq_dist", temperature=0.3).output,
        attention(q, k, v, score="dot", temperature=0.3).output,
        **TOL,
    )


def test_none_and_callable_normalizers():
    q, k, v = qkv()
    mask = torch.ones(5, 7, dtype=torch.bool).tril()
    w = attention(q, k, v, score="dot", normalizer="none", mask=mask).weights
    torch.testing.assert_close(w, (q @ k.T) * mask, **TOL)
    relu_norm = lambda s: (
        torch.relu(s) / torch.relu(s).sum(-1, keepdim=True).clamp_min(1e-12)
    )  # noqa: E731
    w = attention(q, k, v, normalizer=relu_norm).weights
    torch.testing.assert_close(w, relu_norm(q @ k.T / math.sqrt(8)), **TOL)


def test_a_callable_normalizer_is_used():
    q, k, v = qkv()
    torch.testing.assert_close(
        attention(q, k, v, normalizer=lambda s: torch.ones_like(s) / 7).output,
        v.mean(0).expand(5, 3),
        **TOL,
    )


def test_gradients_match_torch():
    q, k, v = (t.requires_grad_() for t in qkv(2))
    mask = torch.ones(5, 7, dtype=torch.bool).tril(2)
    ours = torch.autograd.grad(
        attention(q, k, v, mask=mask).output.square().sum(), (q, k, v)
    )
    theirs = torch.autograd.grad(
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask).square().sum(),
        (q, k, v),
    )
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, **TOL)
    assert torch.autograd.gradcheck(
        lambda q, k, v: attention(q, k, v, score="neg_sq_dist").output, (q, k, v)
    )


def test_keeps_dtype_and_accepts_array_likes():
    out, w = attention(
        [[1, 1, 1], [0, 1, 0]], [[1.0, 0, 0], [0, 1, 0]], [[1, 0], [0, 1]]
    )
    assert out.dtype == torch.get_default_dtype() and w.shape == (2, 2)
    assert (
        attention(np.ones((2, 3)), np.eye(3), np.eye(3)).output.dtype == torch.float64
    )
    q, k, v = qkv(dtype=torch.float32)
    assert attention(q, k, v).output.dtype == torch.float32


@settings(max_examples=40, deadline=None)
@given(
    n_q=st.integers(1, 6),
    n_k=st.integers(1, 6),
    d=st.integers(1, 5),
    t=st.floats(0.05, 20),
    seed=st.integers(0, 999),
)
def test_rows_are_probability_vectors_and_outputs_convex(n_q, n_k, d, t, seed):
    q, k, v = qkv(n_q=n_q, n_k=n_k, d=d, d_v=2, seed=seed)
    out, w = attention(q, k, v, score="neg_sq_dist", temperature=t)
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(n_q, dtype=torch.float64))
    assert (out <= v.max(0).values + 1e-12).all() and (
        out >= v.min(0).values - 1e-12
    ).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        # shapes are what these cases are about: constant tensors, so that collecting
        # the tests draws nothing from torch's global generator
        (dict(q=torch.ones(5)), "q must have at least 2"),
        (dict(k=torch.ones(7, 4)), "q and k must have the same feature size"),
        (dict(v=torch.ones(6, 3)), "k and v must have the same number of tokens"),
        (
            dict(k=torch.ones(0, 8), v=torch.ones(0, 3)),
            "k must hold at least one key",
        ),
        (
            dict(q=torch.ones(2, 5, 8), k=torch.ones(3, 7, 8)),
            "q, k and v must have broadcastable batch",
        ),
        (dict(k=torch.full((7, 8), float("nan"))), "k contains NaN"),
        (dict(v=torch.full((7, 3), float("inf"))), "v contains NaN or infinite"),
        (dict(temperature=0.0), "temperature must be a finite positive"),
        (dict(temperature=-1.0), "temperature must be a finite positive"),
        (dict(score="cosine"), "score must be"),
        (dict(normalizer="argmax"), "normalizer must be"),
        (dict(mask=torch.ones(5, 7, dtype=torch.long)), "mask must be boolean"),
        (dict(mask=torch.full((5, 7), float("nan"))), "float mask .* NaN"),
        (
            dict(mask=torch.ones(4, 7, dtype=torch.bool)),
            "mask of shape .* does not broadcast",
        ),
        (dict(q=[["a", "b"]]), "q must hold numbers, got strings"),
        (dict(q=[[object(), 1.0]]), "q must be array-like"),
    ],
)
def test_bad_input_raises_clear_value_error(kwargs, message):
    q, k, v = qkv(dtype=torch.float32)
    args = dict(q=q, k=k, v=v) | kwargs
    with pytest.raises(ValueError, match=message):
        attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)


@pytest.mark.parametrize("normalizer", ["softmax", "sparsemax", "entmax"])
def test_fully_masked_row_gives_zeros_with_finite_gradients(normalizer):
    """Issue 38: a row with every key masked gives zero weights and zero output (SDPA
    gives zeros), the other rows are unchanged, and gradients stay finite."""
    q, k, v = (t.requires_grad_() for t in qkv())
    mask = torch.ones(5, 7, dtype=torch.bool)
    mask[3] = False
    mask[1, :3] = False
    out, w = attention(q, k, v, mask=mask, normalizer=normalizer)
    assert (w[3] == 0).all() and (out[3] == 0).all()
    keep = [0, 1, 2, 4]
    ref = attention(q[keep], k, v, mask=mask[keep], normalizer=normalizer)
    torch.testing.assert_close(out[keep], ref.output)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[3] == 0).all()
    if normalizer == "softmax":
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(out, sdpa)


def _copy_into_torch_mha(
    ours: MultiHeadAttention, theirs: nn.MultiheadAttention
) -> None:
    theirs.load_state_dict(ours.state_dict())  # torch's names, both ways


@pytest.mark.usefixtures("float64")
@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_multihead_equals_torch(num_heads):
    ours, theirs = (
        MultiHeadAttention(8, num_heads, batch_first=True),
        nn.MultiheadAttention(8, num_heads, batch_first=True),
    )
    _copy_into_torch_mha(ours, theirs)
    x, y = torch.randn(3, 5, 8), torch.randn(3, 6, 8)
    mask = torch.ones(5, 6, dtype=torch.bool).tril(1)
    out, w = ours(x, y, mask=mask, average_attn_weights=False)
    ref_out, ref_w = theirs(x, y, y, attn_mask=~mask, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(w, ref_w, **TOL)
    g_ours = torch.autograd.grad(out.sum(), ours.in_proj_weight)[0]
    g_theirs = torch.autograd.grad(ref_out.sum(), theirs.in_proj_weight)[0]
    torch.testing.assert_close(g_ours, g_theirs, **TOL)


@pytest.mark.usefixtures("float64")
def test_encoder_layer_equals_torch():
    ours = TransformerEncoderLayer(
        8, num_heads=2, dim_feedforward=16, dropout=0.0, batch_first=True
    )
    theirs = nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, batch_first=True
    )
    _copy_into_torch_mha(ours.self_attn, theirs.self_attn)
    for name in ("linear1", "linear2", "norm1", "norm2"):
        getattr(theirs, name).load_state_dict(getattr(ours, name).state_dict())
    theirs.eval()  # disables PyTorch's fast path differences; dropout is 0 anyway
    x = torch.randn(2, 6, 8)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    torch.testing.assert_close(ours(x, mask=mask), theirs(x, src_mask=~mask), **TOL)


def test_multihead_bad_input():
    with pytest.raises(ValueError, match=r"num_heads \(3\) must divide embed_dim"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim"):
        MultiHeadAttention(0, 1)
    with pytest.raises(ValueError, match="query must have 8 features"):
        MultiHeadAttention(8, 2)(torch.randn(2, 4, 6))
    with pytest.raises(ValueError, match="query contains NaN"):
        MultiHeadAttention(8, 2)(torch.full((2, 4, 8), float("nan")))


# ------------------------------------------------------ gradients in the inputs, limits
@pytest.mark.parametrize("score", ["scaled_dot", "neg_sq_dist", "neg_l1"])
@pytest.mark.parametrize("normalizer", ["softmax", "sparsemax", "entmax", "none"])
def test_attention_gradcheck_in_q_k_v(score, normalizer):
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(2, n, 3, generator=g, dtype=torch.float64, requires_grad=True)
        for n in (4, 5, 5)
    )
    mask = torch.rand(4, 5, generator=g) > 0.3
    mask[:, 0] = True

    def f(q, k, v):
        return attention(
            q, k, v, score=score, normalizer=normalizer, mask=mask, temperature=0.7
        )

    assert torch.autograd.gradcheck(f, (q, k, v))


@pytest.mark.parametrize("module", ["mha", "encoder"])
def test_modules_gradcheck_in_their_inputs(module):
    torch.manual_seed(0)
    if module == "mha":
        m = MultiHeadAttention(4, 2, kdim=3, vdim=5, batch_first=True).double()
        inputs = tuple(
            torch.randn(2, n, d, dtype=torch.float64, requires_grad=True)
            for n, d in ((3, 4), (5, 3), (5, 5))
        )
        assert torch.autograd.gradcheck(lambda *a: m(*a).output, inputs)
    else:
        m = TransformerEncoderLayer(4, 2, 8, 0.0, normalizer="sparsemax").double()
        x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(m, (x,))


def test_tiny_temperature_gives_the_arg_max_limit_and_huge_scores_raise():
    """softmax(s / t) tends to the one-hot arg-max as t -> 0; attention returns it."""
    q, k, v = qkv(dtype=torch.float32)
    for normalizer in ("softmax", "sparsemax", "entmax"):
        _, w = attention(q, k, v, normalizer=normalizer, temperature=1e-40)
        expected = torch.nn.functional.one_hot((q @ k.T).argmax(-1), k.shape[0]).float()
        torch.testing.assert_close(w, expected)
    with pytest.raises(ValueError, match="q and k too large for torch.float32"):
        attention(q * 1e20, k * 1e20, v)
    with pytest.raises(ValueError, match="temperature=1e-40 makes the scores overflow"):
        attention(q, k, v, normalizer="none", temperature=1e-40)


@pytest.mark.parametrize("dropout_p", [0.0, 0.5])
@pytest.mark.parametrize(
    "dtype, scale",
    [(torch.float32, 1e300), (torch.float32, 1e38), (torch.float64, 1e300)],
    ids=["float32 1e300", "float32 1e38", "float64 1e300"],
)
def test_a_scale_that_overflows_the_scores_gives_the_limit_with_and_without_weights(
    dtype, scale, dropout_p
):
    """Issue 52: a huge scale overflows q kᵀ · scale in float32, where SDPA gives NaN;
    with and without weights (the fused path) attention gives the arg-max limit, each
    query the value of its highest score, and with dropout the same draw on both
    paths (1e38: a temperature float32 holds, 1e300: one it does not)."""
    q, k, v = qkv(2, dtype=dtype)
    if dtype == torch.float32:
        assert F.scaled_dot_product_attention(q, k, v, scale=scale).isnan().any()
    torch.manual_seed(0)
    weighted = attention(q, k, v, scale=scale, dropout_p=dropout_p)
    torch.manual_seed(0)
    fused = attention(q, k, v, scale=scale, dropout_p=dropout_p, need_weights=False)
    torch.testing.assert_close(fused.output, weighted.output, rtol=0, atol=0)
    if not dropout_p:
        top = (q @ k.mT).argmax(-1, keepdim=True)
        peer = torch.take_along_dim(v, top, -2)  # row i: v at the key of its top score
        torch.testing.assert_close(weighted.output, peer, rtol=0, atol=0)


def test_float64_inputs_and_modules_are_never_cast():
    q, k, v = qkv(dtype=torch.float64)
    assert attention(q.numpy(), k.numpy(), v.numpy()).output.dtype == torch.float64
    # mixed dtypes are refused, as SDPA refuses them (issue 49.5), naming the fix
    with pytest.raises(ValueError, match=r"k has dtype torch.float64 but q has "
                       r"torch.float32: .*k.to\(q.dtype\)"):  # fmt: skip
        attention(q.float(), k, v.float())
    # array-likes follow q
    assert attention(q, k.tolist(), v.numpy()).output.dtype == torch.float64
    m = MultiHeadAttention(8, 2)
    with pytest.raises(
        ValueError, match="query must have the module's dtype torch.float32"
    ):
        m(q)
    assert m.double()(q).output.dtype == torch.float64
    enc = TransformerEncoderLayer(8, 2).double()
    assert enc(q).dtype == torch.float64
    with pytest.raises(ValueError, match="src must have the module's dtype"):
        enc(q.float())
    with pytest.raises(ValueError, match="src must have 8 features"):
        enc(torch.randn(3, 5, dtype=torch.float64))


def test_batch_of_zero_and_zero_queries_give_empty_outputs():
    q, k, v = qkv(dtype=torch.float32)
    out, w = attention(q[:0], k, v)
    assert out.shape == (0, v.shape[1]) and w.shape == (0, k.shape[0])
    m = MultiHeadAttention(8, 2, batch_first=True)
    out, w = m(torch.zeros(0, 5, 8), average_attn_weights=False)
    assert out.shape == (0, 5, 8) and w.shape == (0, 2, 5, 5)
    layer = TransformerEncoderLayer(8, 2, batch_first=True)
    assert layer(torch.zeros(0, 5, 8)).shape == (0, 5, 8)


def test_hyper_parameters_are_not_silently_replaced_and_extra_repr():
    for kwargs, name in (
        (dict(kdim=0), "kdim"),
        (dict(vdim=-1), "vdim"),
        (dict(normalizer="argmax"), "normalizer"),
    ):
        with pytest.raises(ValueError, match=name):
            MultiHeadAttention(8, 2, **kwargs)
    with pytest.raises(ValueError, match="dim_feedforward"):
        TransformerEncoderLayer(8, 2, 0)
    with pytest.raises(ValueError, match="d_model"):
        TransformerEncoderLayer(0)
    assert "embed_dim=8, num_heads=2" in repr(MultiHeadAttention(8, 2))
    assert "d_model=8, dim_feedforward=32" in repr(TransformerEncoderLayer(8, 2, 32))


def test_huge_temperature_with_a_mask_gives_uniform_weights_not_nan():
    """t -> inf: softmax tends to uniform over the keys a query may see.

    float32 rounds 1e60 to inf.
    """
    q, k, v = qkv(dtype=torch.float32)
    mask = torch.ones(5, 7, dtype=torch.bool).tril()
    _, w = attention(q, k, v, mask=mask, temperature=1e60)
    expected = mask.float() / mask.sum(-1, keepdim=True)
    torch.testing.assert_close(w, expected)
    _, w = attention(q, k, v, mask=mask, normalizer="none", temperature=1e60)
    assert torch.isfinite(w).all() and (w[~mask] == 0).all()


# ------------------------------------------ wiring and defaults (the mutation campaign)
@pytest.mark.usefixtures("float64")
def test_multihead_with_distinct_kdim_and_vdim_equals_torch():
    """Keys and values of different sizes: each projection is built from its size."""
    ours = MultiHeadAttention(8, 2, kdim=5, vdim=3, batch_first=True)
    theirs = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True)
    with torch.no_grad():  # non-zero biases, so that their q, k, v order shows
        ours.in_proj_bias.copy_(torch.linspace(-1, 1, 24))
    theirs.load_state_dict(ours.state_dict())
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, 8, generator=g)
    key, value = torch.randn(2, 6, 5, generator=g), torch.randn(2, 6, 3, generator=g)
    out, w = ours(x, key, value, average_attn_weights=False)
    ref_out, ref_w = theirs(x, key, value, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(w, ref_w, **TOL)


def test_encoder_feedforward_width_defaults_to_torchs_2048():
    """Vaswani et al. (2017), §3.3: d_ff = 2048; torch's default, so ours too."""
    layer = TransformerEncoderLayer(8, num_heads=2)
    assert (layer.linear1.in_features, layer.linear1.out_features) == (8, 2048)
    assert (layer.linear2.in_features, layer.linear2.out_features) == (2048, 8)


def test_attnlib_attention_is_the_function_and_its_package_has_another_name():
    """Issues 38 and 49: the function and its package no longer share a name, so
    ``attnlib.attention`` is the function however the package was imported (no
    callable module, which dynamo refuses); ``attnlib.functional`` is the package."""
    import types

    import attnlib
    import attnlib.functional as AF
    from attnlib import attention

    assert isinstance(AF, types.ModuleType) and not callable(AF)
    assert attention is attnlib.attention is AF.attention
    assert isinstance(attention, types.FunctionType)
    assert "dot" in AF.SCORES and callable(AF.resolve)
    assert "normalizer" in inspect.signature(attnlib.attention).parameters
