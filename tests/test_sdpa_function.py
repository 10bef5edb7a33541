"""``attnlib.scaled_dot_product_attention`` beside PyTorch's, call for call (issue 49.2,
49.5): positional arguments, masks, GQA, dropout, dtypes, refusals, and the numerics
where attnlib is meant to differ (a NaN the mask hides; float16 overflow)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from simulated_cuda import SimulatedCuda

import attnlib
from attnlib import attention, scaled_dot_product_attention
from attnlib.errors import AttentionInputError


def qkv(shape_q=(2, 4, 5, 8), shape_k=(2, 4, 7, 8), d_v=3, dtype=torch.float64,
        seed=0):  # fmt: skip
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*shape_q, generator=g, dtype=dtype),
        torch.randn(*shape_k, generator=g, dtype=dtype),
        torch.randn(*shape_k[:-1], d_v, generator=g, dtype=dtype),
    )


def bool_mask(n_q=5, n_k=7, seed=1):
    m = torch.rand(n_q, n_k, generator=torch.Generator().manual_seed(seed)) > 0.4
    m[:, 0] = True
    return m


SHAPES = {
    "2-d": ((5, 8), (7, 8)),
    "3-d": ((3, 5, 8), (3, 7, 8)),
    "4-d": ((2, 4, 5, 8), (2, 4, 7, 8)),
    "broadcast k": ((2, 4, 5, 8), (1, 4, 7, 8)),
    "one query": ((2, 1, 1, 16), (2, 1, 9, 16)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(
    "extra",
    [(), (None, 0.0, True), "scale", "bool", "float", "bool per batch"],
    ids=["plain", "causal", "scale", "bool mask", "float mask", "bool mask per batch"],
)
def test_positional_calls_equal_torchs(dtype, shape, extra):
    q, k, v = qkv(*shape, dtype=dtype)
    n_q, n_k = q.shape[-2], k.shape[-2]
    kw = {}
    if extra == "scale":
        extra, kw = (), {"scale": 0.3}
    elif extra == "bool":
        extra = (bool_mask(n_q, n_k),)
    elif extra == "float":
        keep = bool_mask(n_q, n_k)
        extra = (torch.randn(n_q, n_k, dtype=dtype).masked_fill(~keep, -torch.inf),)
    elif extra == "bool per batch":  # one mask per batch entry, broadcast over heads
        lead = (*q.shape[:-3], 1) if q.ndim == 4 else q.shape[:-2]
        extra = (torch.rand(*lead, n_q, n_k) > 0.3,)
        extra[0][..., 0] = True
    tol = {torch.bfloat16: 2e-2, torch.float32: 2e-6, torch.float64: 1e-12}[dtype]
    ours = scaled_dot_product_attention(q, k, v, *extra, **kw)
    peer = F.scaled_dot_product_attention(q, k, v, *extra, **kw)
    assert ours.dtype == peer.dtype == dtype and ours.shape == peer.shape
    torch.testing.assert_close(ours, peer, atol=tol, rtol=tol)


def test_float16_matches_torch_and_scales_before_the_product():
    """|q·k| above 65 504, q·k/√d near 11 000: SDPA is fine, and so is attnlib, in both
    of its functions (the scale is applied to q and k before the matmul)."""
    q = torch.full((1, 4, 64), 40.0, dtype=torch.float16)
    q[0, 1] = 39.0
    k = q.clone()
    v = torch.randn(1, 4, 3, dtype=torch.float16)
    assert torch.isinf(q @ k.mT).any()  # the product alone overflows float16
    peer = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v), peer)
    for normalizer in ("softmax", "sparsemax", "entmax"):
        out = attention(q, k, v, normalizer=normalizer)
        assert torch.isfinite(out.output).all() and torch.isfinite(out.weights).all()
    torch.testing.assert_close(attention(q, k, v).output, peer, atol=2e-3, rtol=2e-3)


def test_float16_overflow_names_a_remedy():
    huge = torch.full((4, 8), 300.0, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"float16.*q.float\(\)"):
        attention(huge, huge, huge, temperature=1e-3)


@pytest.mark.parametrize("heads", [(8, 2), (6, 3), (4, 4)])
def test_grouped_query_attention_repeats_heads_as_torch(heads):
    hq, hk = heads
    q, k, v = qkv((2, hq, 5, 8), (2, hk, 7, 8))
    peer = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    for normalizer in ("softmax", "sparsemax"):
        ours = scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                            normalizer=normalizer)  # fmt: skip
        assert ours.shape == peer.shape
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, None, 0.0, False, enable_gqa=True), peer
    )
    # the same as repeating by hand, for another normaliser
    r = hq // hk
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, enable_gqa=True, normalizer="entmax"),
        attention(
            q,
            k.repeat_interleave(r, -3),
            v.repeat_interleave(r, -3),
            normalizer="entmax",
        ).output,  # fmt: skip
    )


CALLS = {
    "heads do not divide": lambda q, k, v: (
        (q[:, :3], k[:, :2], v[:, :2]),
        {"enable_gqa": True},
    ),  # fmt: skip
    "mask and causal": lambda q, k, v: ((q, k, v, bool_mask()), {"is_causal": True}),
    "integers": lambda q, k, v: ((q.long(), k.long(), v.long()), {}),
    "mixed dtypes": lambda q, k, v: ((q.half(), k, v), {}),
    "values' tokens": lambda q, k, v: ((q, k, v[..., :5, :]), {}),
    "mask shape": lambda q, k, v: ((q, k, v, torch.ones(4, 7, dtype=torch.bool)), {}),
    "mask dtype": lambda q, k, v: ((q, k, v, torch.ones(5, 7, dtype=torch.long)), {}),
    "dropout_p": lambda q, k, v: ((q, k, v, None, 1.5), {}),
}


@pytest.mark.parametrize(
    "case, message",
    [
        ("heads do not divide", "heads"),
        ("mask and causal", "attn_mask and is_causal"),
        ("integers", r"query must be a floating tensor.*query.float\(\)"),
        ("mixed dtypes", r"key has dtype torch.float64 but query has torch.float16"),
        ("values' tokens",
         r"key and value must have the same number of tokens.*\(2, 4, 5, 3\)"),
        ("mask shape",
         r"attn_mask of shape \(4, 7\) does not broadcast.*\(2, 4, 5, 7\)"),
        ("mask dtype", "attn_mask must be boolean"),
        ("dropout_p", "dropout_p must be a number"),
    ],
)  # fmt: skip
def test_refuses_what_torch_refuses_naming_the_argument(case, message):
    args, kwargs = CALLS[case](*qkv())
    with pytest.raises(RuntimeError):  # torch refuses it too
        F.scaled_dot_product_attention(*args, **kwargs)
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*args, **kwargs)


@pytest.mark.parametrize("mask", ["causal", ["1", "0", "1", "1", "0", "1", "0"]])
def test_a_mask_that_is_not_numbers_is_refused_naming_it(mask):
    q, k, v = qkv()
    with pytest.raises(TypeError, match="attn_mask"):  # torch refuses it too
        F.scaled_dot_product_attention(q, k, v, mask)
    with pytest.raises(ValueError, match="attn_mask must be a boolean or floating"):
        scaled_dot_product_attention(q, k, v, mask)


def test_type_errors_are_both_value_and_runtime_errors():
    q, k, v = qkv()
    with pytest.raises(AttentionInputError) as info:
        scaled_dot_product_attention(q.float(), k, v)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
    with pytest.raises(AttentionInputError, match=r"pass q.float\(\)"):
        attention(q.long(), k, v)


def test_dropout_is_torchs_under_one_seed_and_p_one_gives_zeros():
    q, k, v = qkv()
    torch.manual_seed(3)
    ours = scaled_dot_product_attention(q, k, v, None, 0.4)
    torch.manual_seed(3)
    peer = F.scaled_dot_product_attention(q, k, v, None, 0.4)
    torch.testing.assert_close(ours, peer, atol=1e-12, rtol=0)
    for normalizer in ("softmax", "sparsemax"):
        out = scaled_dot_product_attention(q, k, v, None, 1.0, normalizer=normalizer)
        assert out.abs().max() == 0
    # another normaliser's dropout is unbiased: its mean over draws is the weights'
    draws = torch.stack([scaled_dot_product_attention(q, k, v, None, 0.5,
                         normalizer="sparsemax") for _ in range(400)])  # fmt: skip
    exact = scaled_dot_product_attention(q, k, v, normalizer="sparsemax")
    assert (draws.mean(0) - exact).abs().max() < 0.25


@pytest.mark.parametrize("where", ["key", "value", "both"])
@pytest.mark.parametrize("function", ["sdpa", "attention", "attention fused"])
def test_a_nan_that_the_mask_hides_does_not_reach_the_output(where, function):
    """pytorch#101967: torch gives NaN here; attnlib ignores what no query sees."""
    q, k, v = qkv()
    m = bool_mask()
    m[:, 6] = False
    bad_k, bad_v = k.clone(), v.clone()
    if where in ("key", "both"):
        bad_k[..., 6, :] = torch.nan
    if where in ("value", "both"):
        bad_v[..., 6, :] = torch.nan
    call = {
        "sdpa": lambda k, v: scaled_dot_product_attention(q, k, v, m),
        "attention": lambda k, v: attention(q, k, v, mask=m).output,
        "attention fused": lambda k, v: (
            attention(q, k, v, mask=m, need_weights=False).output
        ),  # fmt: skip
    }[function]
    assert torch.isnan(F.scaled_dot_product_attention(q, bad_k, bad_v, m)).any()
    torch.testing.assert_close(call(bad_k, bad_v), call(k, v))
    m[:, 6] = True  # seen: refused, naming the input
    with pytest.raises(ValueError, match="contains NaN"):
        call(bad_k, bad_v)


def test_nan_input_is_named_after_the_check_fails():
    q, k, v = qkv()
    for name, i in (("q", 0), ("k", 1), ("v", 2)):
        args = [q, k, v]
        args[i] = args[i].clone()
        args[i][0, 0, 0, 0] = torch.nan
        with pytest.raises(ValueError, match=f"^{name} contains NaN"):
            attention(*args)


def test_a_wrong_shaped_score_callable_is_named_with_the_shapes():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"score\(q, k\) must return .*\(\.\.\., 5, 7\)"
                       r".*got \(2, 4, 7, 5\)"):  # fmt: skip
        attention(q, k, v, score=lambda a, b: b @ a.mT)


def test_devices_are_never_mixed_or_moved():
    q, k, v = qkv()
    with SimulatedCuda():
        qc = q.to("cuda")
        for args, name in (((qc, k, v), "key"), ((qc, k.to("cuda"), v), "value")):
            with pytest.raises(RuntimeError, match=rf"{name} is on cpu but query is "
                               "on cuda:0"):  # fmt: skip
                scaled_dot_product_attention(*args)
        kc, vc = k.to("cuda"), v.to("cuda")
        with pytest.raises(ValueError, match="mask is on cpu but q is on cuda:0"):
            attention(qc, kc, vc, mask=bool_mask())
        with pytest.raises(ValueError, match="attn_mask is on cpu"):
            attention(qc, kc, vc, attn_mask=torch.zeros(5, 7, dtype=torch.float64))
        out = scaled_dot_product_attention(qc, kc, vc, bool_mask().to("cuda"))
        assert out.device == qc.device


def test_sdpa_takes_torchs_positional_arguments_and_no_more():
    import inspect

    ours = list(inspect.signature(scaled_dot_product_attention).parameters)
    assert ours[:8] == ["query", "key", "value", "attn_mask", "dropout_p", "is_causal",
                        "scale", "enable_gqa"]  # fmt: skip
    q, k, v = qkv()
    six = (q, k, v, None, 0.0, True)
    torch.testing.assert_close(
        scaled_dot_product_attention(*six), F.scaled_dot_product_attention(*six)
    )
    for fn in (scaled_dot_product_attention, F.scaled_dot_product_attention):
        with pytest.raises(TypeError, match="positional argument"):  # keyword-only
            fn(*six, 0.3)
    assert "scaled_dot_product_attention" in attnlib.__all__


def test_the_softmax_path_adds_its_mask_with_the_numbers_of_masking():
    """On the CPU softmax attention adds its bool mask, float mask or causal triangle
    as one bias of 0 / -inf (the cost of a bias, as the hand-written expression); the
    weights, outputs and gradients are those of masking (the weights path), and where
    they cannot be (a query with no key) the output check refuses the sum, so that the
    call is redone on the weights path."""
    from attnlib.functional._dense import additive, softmax_path, weights_path

    q, k, v = qkv((2, 4, 128, 16), (2, 4, 128, 16))
    q.requires_grad_()
    m = bool_mask(128, 128)
    names = ("q", "k", "v", "mask")
    shape, t = (2, 4, 128, 128), 4.0
    float_mask = torch.randn(128, 128, dtype=q.dtype).masked_fill(~m, float("-inf"))
    tri = torch.ones(128, 128, dtype=torch.bool).tril()
    for mask, bias, causal, as_masked in (
        (m, None, False, (m, None)),
        (None, float_mask, False, (m, float_mask.masked_fill(~m, 0))),
        (None, None, True, (tri, None)),
        (m, None, True, (m & tri, None)),
        (None, float_mask, True, (m & tri, float_mask.masked_fill(~m, 0))),
    ):
        add = additive(mask, bias, causal, shape, q.dtype, q.device)
        added = softmax_path(q, k, v, add, t, shape)
        masked = weights_path(q, k, v, "scaled_dot", "softmax", as_masked[0], t,
                              as_masked[1], 0.0, names)  # fmt: skip
        assert torch.equal(added[0], masked[0]) and torch.equal(added[1], masked[1])
        (g_added,) = torch.autograd.grad(added[0].sum(), q)
        (g_masked,) = torch.autograd.grad(masked[0].sum(), q)
        assert torch.equal(g_added, g_masked)
    m[3] = False  # a query with no key: -inf everywhere, NaN weights, refused
    add = additive(m, None, False, shape, q.dtype, q.device)
    assert softmax_path(q, k, v, add, t, shape) is None
    out, weights = attention(q, k, v, mask=m, temperature=t)
    masked = weights_path(q, k, v, "scaled_dot", "softmax", m, t, None, 0.0, names)
    assert torch.equal(out, masked[0]) and torch.equal(weights, masked[1])
    assert (weights[..., 3, :] == 0).all() and (out[..., 3, :] == 0).all()
    m[3] = True
    peer = F.scaled_dot_product_attention(q, k, v, m)
    torch.testing.assert_close(attention(q, k, v, mask=m).output, peer)
    hidden = m.clone()
    hidden[:, 7] = False
    bad = k.clone()
    bad[..., 7, :] = torch.nan
    torch.testing.assert_close(
        attention(q, bad, v, mask=hidden).output, attention(q, k, v, mask=hidden).output
    )
