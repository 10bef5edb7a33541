"""attnlib's layers as drop-ins for ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer`` (PyTorch is the peer), both ways.

Each test builds torch's module beside ours, moves one state dict into the other
(``strict=True``), and compares outputs, weights and gradients under torch's own
arguments, defaults and mask polarity; torch's refusals are ours too.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlib import MultiHeadAttention, TransformerEncoderLayer
from attnlib.layers import TransformerDecoderLayer

F64 = dict(dtype=torch.float64)
TOL = {torch.float32: 1e-6, torch.float64: 1e-12}

#: Configurations beyond the default, under torch's argument names.
CONFIGS = {
    "default": {},
    "kdim, vdim": {"kdim": 5, "vdim": 3},
    "bias=False": {"bias": False},
    "add_bias_kv": {"add_bias_kv": True},
    "add_zero_attn": {"add_zero_attn": True},
    "both added": {"add_bias_kv": True, "add_zero_attn": True, "kdim": 5, "vdim": 5},
}


def randn(*shape, seed=0, dtype=torch.float64):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


def trained_like(module, seed=1):
    """Every parameter random (biases included), as after training."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) / 2)
    return module


def pair(config, batch_first=False, dtype=torch.float64, direction="torch->ours"):
    kw = dict(config, batch_first=batch_first, dtype=dtype)
    theirs, ours = nn.MultiheadAttention(8, 2, **kw), MultiHeadAttention(8, 2, **kw)
    if direction == "torch->ours":
        ours.load_state_dict(trained_like(theirs).state_dict(), strict=True)
    else:
        theirs.load_state_dict(trained_like(ours).state_dict(), strict=True)
    return ours.eval(), theirs.eval()


def torch_masks(n_q=5, n_k=6, batch=3, heads=2, dtype=torch.float64):
    padding = torch.zeros(batch, n_k, dtype=torch.bool)
    padding[0, 4:] = True  # the first sequence has two padding keys
    causal = torch.ones(n_q, n_k, dtype=torch.bool).triu(1)  # True = may NOT attend
    return {
        "none": {},
        "key_padding_mask": {"key_padding_mask": padding},
        "float key_padding_mask": {
            "key_padding_mask": torch.zeros(batch, n_k, dtype=dtype).masked_fill(
                padding, -1e9
            )
        },
        "attn_mask": {"attn_mask": causal},
        "float attn_mask per head": {
            "attn_mask": randn(batch * heads, n_q, n_k, seed=9, dtype=dtype)
        },
        "both": {"key_padding_mask": padding, "attn_mask": causal},
        "float padding, bool attn_mask": {
            "key_padding_mask": torch.zeros(batch, n_k, dtype=dtype).masked_fill(
                padding, float("-inf")
            ),
            "attn_mask": causal,
        },
    }


def inputs(config, batch_first, dtype=torch.float64, batch=3):
    q = randn(batch, 5, 8, dtype=dtype)
    k = randn(batch, 6, config.get("kdim", 8), seed=1, dtype=dtype)
    v = randn(batch, 6, config.get("vdim", 8), seed=2, dtype=dtype)
    if not batch_first:
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
    return q, k, v


# ------------------------------------------------------------------ the parameters


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_the_same_seed_gives_torchs_parameters_under_torchs_names(config):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(8, 2, **config)
    after_theirs = torch.randn(3)
    torch.manual_seed(0)
    ours = MultiHeadAttention(8, 2, **config)
    assert torch.equal(torch.randn(3), after_theirs)  # the same number of draws
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    for name in b:
        assert torch.equal(a[name], b[name]), name
    for attr in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "dropout",
                 "batch_first", "add_zero_attn", "_qkv_same_embed_dim"):  # fmt: skip
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    for attr in ("in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight",
                 "v_proj_weight", "bias_k", "bias_v"):  # fmt: skip
        assert (getattr(ours, attr) is None) == (getattr(theirs, attr) is None), attr
    assert isinstance(ours.out_proj, nn.Linear)


def test_torchs_initialisers_apply_to_the_packed_weights():
    ours = MultiHeadAttention(8, 2)
    nn.init.xavier_uniform_(ours.in_proj_weight)
    nn.init.constant_(ours.in_proj_bias, 0.5)
    assert ours.in_proj_weight.shape == (24, 8) and (ours.in_proj_bias == 0.5).all()
    assert {n for n, _ in ours.named_parameters()} == {
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"
    }  # fmt: skip


@pytest.mark.parametrize("kdim", [None, 5])
def test_init_linear_draws_each_projection_as_an_nn_linear(kdim):
    """attnlib's former initialisation, which the book's experiments keep."""
    torch.manual_seed(3)
    ours = MultiHeadAttention(8, 2, kdim=kdim, vdim=kdim, init="linear")
    torch.manual_seed(3)
    linears = [nn.Linear(n, 8) for n in (8, kdim or 8, kdim or 8, 8)]
    (w_q, w_k, w_v), (b_q, b_k, b_v) = ours._projections()
    for (w, b), lin in zip([(w_q, b_q), (w_k, b_k), (w_v, b_v)], linears):
        assert torch.equal(w, lin.weight) and torch.equal(b, lin.bias)
    assert torch.equal(ours.out_proj.weight, linears[3].weight)


def test_wrong_sized_packed_weights_raise_a_size_mismatch_as_in_torch():
    bad = nn.MultiheadAttention(8, 2).state_dict()
    bad["in_proj_weight"] = torch.zeros(32, 8)  # 4E rows
    for module in (nn.MultiheadAttention(8, 2), MultiHeadAttention(8, 2)):
        with pytest.raises(RuntimeError, match="size mismatch for in_proj_weight"):
            module.load_state_dict(bad)


def test_a_separate_projection_state_dict_does_not_load_as_packed():
    theirs = nn.MultiheadAttention(8, 2, kdim=5, vdim=5)
    with pytest.raises(RuntimeError, match="q_proj_weight"):
        MultiHeadAttention(8, 2).load_state_dict(theirs.state_dict())


# ------------------------------------------------------------------ the outputs


# torch's (and our) mixed float and bool masks work; torch warns that it may stop
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("direction", ["torch->ours", "ours->torch"])
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_outputs_equal_torchs_with_every_mask_after_loading_either_way(
    direction, config, batch_first, dtype
):
    ours, theirs = pair(config, batch_first, dtype, direction)
    q, k, v = inputs(config, batch_first, dtype)
    tol = dict(atol=TOL[dtype], rtol=TOL[dtype])
    for name, masks in torch_masks(dtype=dtype).items():
        for average in (True, False):
            a_out, a_w = ours(q, k, v, **masks, average_attn_weights=average)
            b_out, b_w = theirs(q, k, v, **masks, average_attn_weights=average)
            torch.testing.assert_close(a_out, b_out, **tol, msg=name)
            torch.testing.assert_close(a_w, b_w, **tol, msg=name)
        a_out, a_w = ours(q, k, v, **masks, need_weights=False)
        b_out, _ = theirs(q, k, v, **masks, need_weights=False)
        assert a_w is None
        torch.testing.assert_close(a_out, b_out, **tol, msg=name)


def test_default_constructors_agree_on_sequence_first_input():
    """The issue's silent wrong result: (L, N, E) input, defaults left alone on both
    sides, one state dict; attnlib read it batch first before."""
    theirs = trained_like(nn.MultiheadAttention(8, 2)).eval()
    ours = MultiHeadAttention(8, 2)
    ours.load_state_dict(theirs.state_dict())
    x = randn(5, 3, 8, dtype=torch.float32)  # L = 5 tokens, N = 3 sequences
    a_out, a_w = ours.eval()(x, x, x)
    b_out, b_w = theirs(x, x, x)
    assert a_out.shape == (5, 3, 8) and a_w.shape == (3, 5, 5)  # averaged weights
    torch.testing.assert_close(a_out, b_out, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(a_w, b_w, atol=1e-6, rtol=1e-6)
    theirs_layer = trained_like(nn.TransformerEncoderLayer(8, 2)).eval()
    ours_layer = TransformerEncoderLayer(8, 2)
    ours_layer.load_state_dict(theirs_layer.state_dict())  # dim_feedforward=2048
    assert ours_layer.linear1.out_features == 2048 and ours_layer.dropout.p == 0.1
    torch.testing.assert_close(
        ours_layer.eval()(x), theirs_layer(x), atol=1e-6, rtol=1e-6
    )


def test_unbatched_input_and_its_masks_as_in_torch():
    ours, theirs = pair({})
    x = randn(5, 8)
    padding = torch.tensor([False] * 4 + [True])
    for masks in ({}, {"attn_mask": randn(2, 5, 5, seed=3)},
                  {"key_padding_mask": padding}):  # fmt: skip
        a, b = ours(x, x, x, **masks), theirs(x, x, x, **masks)
        assert a.output.shape == (5, 8) and a.weights.shape == (5, 5)
        torch.testing.assert_close(a.output, b[0], atol=1e-12, rtol=0)
        torch.testing.assert_close(a.weights, b[1], atol=1e-12, rtol=0)


def test_gradients_in_the_inputs_and_parameters_equal_torchs():
    ours, theirs = pair(CONFIGS["both added"], batch_first=True)
    q, k, v = (t.requires_grad_() for t in inputs(CONFIGS["both added"], True))
    masks = torch_masks()["both"]
    a = ours(q, k, v, **masks)[0].sum()
    b = theirs(q, k, v, **masks)[0].sum()
    ga = torch.autograd.grad(a, (q, k, v, ours.bias_k, ours.q_proj_weight))
    gb = torch.autograd.grad(b, (q, k, v, theirs.bias_k, theirs.q_proj_weight))
    for x, y in zip(ga, gb):
        torch.testing.assert_close(x, y, atol=1e-12, rtol=0)


def test_gradcheck_through_the_appended_keys():
    ours, _ = pair(CONFIGS["both added"], batch_first=True)
    q, k, v = (t[:2, :3].requires_grad_() for t in inputs(CONFIGS["both added"], True))
    assert torch.autograd.gradcheck(lambda *a: ours(*a).output, (q, k, v))


def test_is_causal_alone_applies_the_causal_mask_torch_asks_for_attn_mask():
    ours, theirs = pair({}, batch_first=True)
    x = randn(3, 5, 8)
    blocked = torch.ones(5, 5, dtype=torch.bool).triu(1)
    ref = theirs(x, x, x, attn_mask=blocked)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        theirs(x, x, x, is_causal=True)
    for out in (ours(x, x, x, is_causal=True), ours(x, x, x, mask=~blocked),
                ours(x, x, x, attn_mask=blocked, is_causal=True)):  # fmt: skip
        torch.testing.assert_close(out.output, ref[0])
        torch.testing.assert_close(out.weights, ref[1])
    ours_kv, theirs_kv = pair(CONFIGS["both added"], batch_first=True)
    q, k, v = inputs(CONFIGS["both added"], True)
    blocked = torch.ones(5, 6, dtype=torch.bool).triu(1)
    torch.testing.assert_close(  # the appended keys stay visible, as in torch
        ours_kv(q, k, v, is_causal=True).output,
        theirs_kv(q, k, v, attn_mask=blocked)[0],
    )


def test_a_query_with_every_key_masked_gets_zeros_where_torch_gives_nan():
    ours, theirs = pair({}, batch_first=True)
    x = randn(2, 4, 8)
    padding = torch.ones(2, 4, dtype=torch.bool)
    padding[1] = False  # the first sequence is all padding
    out, w = ours(x, x, x, key_padding_mask=padding)
    ref, _ = theirs(x, x, x, key_padding_mask=padding)
    assert torch.isnan(ref[0]).all() and (w[0] == 0).all()
    torch.testing.assert_close(out[0], ours.out_proj.bias.expand(4, 8))
    torch.testing.assert_close(out[1], ref[1], atol=1e-12, rtol=0)


def test_dropout_acts_in_training_only():
    ours = MultiHeadAttention(8, 2, dropout=0.5, batch_first=True, **F64)
    x = randn(2, 5, 8)
    assert torch.equal(ours.eval()(x, x, x).output, ours(x, x, x).output)
    ours.train()
    torch.manual_seed(1)
    a = ours(x, x, x, average_attn_weights=False).weights
    assert (a == 0).any() and not torch.equal(a, ours(x, x, x).weights)


# ------------------------------------------------------------------ messages, refusals


def test_a_wrong_attn_mask_names_the_shapes_torch_expects():
    ours, theirs = pair({})
    q, k, v = inputs({}, False)  # L = 5, N = 3, S = 6, 2 heads
    for bad, torchs in [
        (torch.zeros(5, 5, dtype=torch.bool), r"should be \(5, 6\)"),
        (torch.zeros(3, 5, 6, **F64), r"should be \(6, 5, 6\)"),
        (torch.zeros(1, 2, 5, 6, **F64), "found 4-D tensor"),
    ]:
        with pytest.raises((RuntimeError, AssertionError), match=torchs):
            theirs(q, k, v, attn_mask=bad)
        with pytest.raises(ValueError, match="attn_mask must have shape") as err:
            ours(q, k, v, attn_mask=bad)
        assert "(L, S) = (5, 6)" in str(err.value)
        assert "(N * num_heads, L, S) = (6, 5, 6)" in str(err.value)
        assert f"got {tuple(bad.shape)}" in str(err.value)


def test_a_mask_per_sequence_is_not_read_per_head():
    """(N, L, S) with N == num_heads must not be read as one mask per head."""
    ours, theirs = pair({}, batch_first=True)
    q, k, v = inputs({}, True, batch=2)  # N = 2 = num_heads
    per_sequence = torch.zeros(2, 5, 6, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="should be"):
        theirs(q, k, v, attn_mask=per_sequence)
    with pytest.raises(ValueError, match=r"\(N \* num_heads, L, S\) = \(4, 5, 6\)"):
        ours(q, k, v, attn_mask=per_sequence)


def test_batch_mismatches_report_the_callers_shapes():
    ours, theirs = pair({})
    q, k, v = inputs({}, False)
    for args, shapes, torchs in [  # torch's first message names no argument
        ((q, k[:, :2], v[:, :2]), "(5, 3, 8), (6, 2, 8) and (6, 2, 8)", "is invalid"),
        ((q, k, v[:4]), "(6, 3, 8) and (4, 3, 8)", "does not match value shape"),
    ]:
        with pytest.raises((RuntimeError, AssertionError), match=torchs):
            theirs(*args)
        with pytest.raises(ValueError, match="must have the same batch") as err:
            ours(*args)
        assert shapes in str(err.value) and "(L, N, E)" in str(err.value)


def _same(q, k, v):
    return q, k, v


#: Bad input that torch refuses (its message), and ours (ValueError, naming it).
@pytest.mark.parametrize(
    "make, masks, torchs, ours_",
    [
        (lambda q, k, v: (q[None], k[None], v[None]), {}, "4-D query", "query must"),
        (lambda q, k, v: (q[..., :4], k, v), {}, "embedding dimension of 8", "query"),
        (
            lambda q, k, v: (q, k[..., :4], v[..., :4]), {}, "cannot be multiplied",
            "key must have 8 features",
        ),
        (lambda q, k, v: (q, k[:, 0], v[:, 0]), {}, "to be 3-D", "all be unbatched"),
        (
            _same,
            {"key_padding_mask": torch.zeros(3, 4, dtype=torch.bool)},
            "to be 6, but got 4",
            r"key_padding_mask must have shape \(N, S\) = \(3, 6\)",
        ),
        (
            _same,
            {"attn_mask": torch.zeros(5, 6, dtype=torch.long)},
            "only bool and floating",
            "attn_mask must be boolean or floating",
        ),
        (lambda q, k, v: (q.float(), k, v), {}, "same dtype", "module's dtype"),
    ],
    ids=["4-D query", "query width", "key width", "unbatched key", "padding length",
         "integer attn_mask", "float32 query"],
)  # fmt: skip
def test_torchs_refusals_are_ours(make, masks, torchs, ours_):
    ours, theirs = pair({})
    args = make(*inputs({}, False))
    with pytest.raises((RuntimeError, AssertionError), match=torchs):
        theirs(*args, **masks)
    with pytest.raises(ValueError, match=ours_):
        ours(*args, **masks)


def test_bad_constructor_arguments_name_themselves():
    for kw, name in [({"dropout": 1.5}, "dropout"), ({"batch_first": 1}, "batch_first"),
                     ({"add_bias_kv": 1}, "add_bias_kv"), ({"init": "xavier"}, "init"),
                     ({"num_heads": 3}, "num_heads")]:  # fmt: skip
        with pytest.raises(ValueError, match=name):
            MultiHeadAttention(**{"embed_dim": 8, "num_heads": 2, **kw})
    with pytest.raises(ValueError, match="nhead"):
        TransformerEncoderLayer(8, 2, num_heads=2)
    with pytest.raises(ValueError, match="nhead"):
        TransformerEncoderLayer(8)
    with pytest.raises(ValueError, match="activation"):
        TransformerEncoderLayer(8, 2, activation="swish")
    assert TransformerEncoderLayer(8, num_heads=2).self_attn.num_heads == 2


# ------------------------------------------------------------------ the encoder layer


def layer_pair(direction="torch->ours", **kw):
    kw = dict(dim_feedforward=16, **kw, **F64)
    theirs, ours = (
        nn.TransformerEncoderLayer(8, 2, **kw),
        TransformerEncoderLayer(8, 2, **kw),
    )
    if direction == "torch->ours":
        ours.load_state_dict(trained_like(theirs).state_dict(), strict=True)
    else:
        theirs.load_state_dict(trained_like(ours).state_dict(), strict=True)
    return ours.eval(), theirs.eval()


LAYERS = {
    "post-norm": {}, "pre-norm": {"norm_first": True}, "gelu": {"activation": "gelu"},
    "callable activation": {"activation": torch.tanh}, "eps": {"layer_norm_eps": 1e-3},
    "batch first": {"batch_first": True}, "bias=False": {"bias": False},
}  # fmt: skip


@pytest.mark.parametrize("direction", ["torch->ours", "ours->torch"])
@pytest.mark.parametrize("kw", LAYERS.values(), ids=LAYERS.keys())
def test_encoder_layer_equals_torchs_after_loading_either_way(direction, kw):
    ours, theirs = layer_pair(direction, **kw)
    x = randn(6, 3, 8)
    if kw.get("batch_first"):
        x = x.transpose(0, 1)
    padding = torch.zeros(3, 6, dtype=torch.bool)
    padding[1, 5:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(6, **F64)  # float -inf
    for masks in ({}, {"src_key_padding_mask": padding}, {"src_mask": causal},
                  {"src_mask": causal, "is_causal": True}):  # fmt: skip
        torch.testing.assert_close(
            ours(x, **masks), theirs(x, **masks), atol=1e-12, rtol=0
        )


def test_encoder_layer_takes_torchs_defaults_and_its_seed():
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(8, 2)
    torch.manual_seed(0)
    ours = TransformerEncoderLayer(8, 2)
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[n], b[n]) for n in b)
    assert ours.self_attn.batch_first is False and ours.dropout1.p == 0.1


def test_hooks_on_self_attn_fire_and_capture_the_attention_maps():
    """torch's users take the maps out with a forward hook on ``self_attn``."""
    ours, theirs = layer_pair(batch_first=True)
    x = randn(3, 6, 8)
    captured = {}

    def keep(name):
        def hook(module, args, kwargs, output):
            captured[name] = output[1]

        return hook

    def ask_for_weights(module, args, kwargs):  # the usual recipe for torch's layer
        return args, {**kwargs, "need_weights": True, "average_attn_weights": False}

    for name, layer in (("ours", ours), ("theirs", theirs)):
        layer.self_attn.register_forward_pre_hook(ask_for_weights, with_kwargs=True)
        layer.self_attn.register_forward_hook(keep(name), with_kwargs=True)
        layer(x)
    assert captured["ours"].shape == (3, 2, 6, 6)
    torch.testing.assert_close(captured["ours"], captured["theirs"], atol=1e-12, rtol=0)


def test_need_weights_returns_the_layers_attention_maps():
    ours, theirs = layer_pair(batch_first=True)
    x = randn(3, 6, 8)
    out, weights = ours(x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ours(x))
    torch.testing.assert_close(
        weights, ours.self_attn(x, x, x, average_attn_weights=False)[1]
    )
    assert ours(x, need_weights=True).weights.shape == (3, 6, 6)


@pytest.mark.parametrize("mode", ["train", "eval", "eval, no_grad"])
def test_ours_works_as_self_attn_inside_torchs_encoder_layer(mode):
    """torch's fused path (eval, no grad) reads self_attn's attributes and would run
    softmax: it must step aside for ours, which then computes its own normalizer."""
    theirs = trained_like(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, **F64)
    )
    hosted = trained_like(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, **F64)
    )
    hosted.self_attn = MultiHeadAttention(8, 2, batch_first=True, **F64)
    hosted.load_state_dict(theirs.state_dict(), strict=True)
    sparse = TransformerEncoderLayer(
        8, 2, 16, 0.0, batch_first=True, normalizer="sparsemax", **F64
    )
    sparse.load_state_dict(theirs.state_dict())
    hosted_sparse = trained_like(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, **F64)
    )
    hosted_sparse.self_attn = sparse.self_attn
    hosted_sparse.load_state_dict(theirs.state_dict())
    for m in (theirs, hosted, sparse, hosted_sparse):
        m.train(mode == "train")
    x = randn(3, 6, 8)
    padding = torch.zeros(3, 6, dtype=torch.bool)
    padding[0, 4:] = True
    with torch.set_grad_enabled(mode != "eval, no_grad"):
        for masks in ({}, {"src_key_padding_mask": padding}):
            torch.testing.assert_close(
                hosted(x, **masks), theirs(x, **masks), atol=1e-12, rtol=0
            )
            torch.testing.assert_close(
                hosted_sparse(x, **masks), sparse(x, **masks), atol=1e-12, rtol=0
            )
            assert not torch.allclose(sparse(x, **masks), theirs(x, **masks))


def test_encoder_layers_stack_in_torchs_transformer_encoder():
    ours, theirs = layer_pair(batch_first=True)
    stack_ours = nn.TransformerEncoder(ours, 3, enable_nested_tensor=False)
    stack_theirs = nn.TransformerEncoder(theirs, 3, enable_nested_tensor=False)
    x = randn(2, 6, 8)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[0, 4:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(6, **F64)
    for args in (
        {},
        {"src_key_padding_mask": padding},
        {"is_causal": True, "mask": causal},
    ):
        torch.testing.assert_close(
            stack_ours.eval()(x, **args), stack_theirs.eval()(x, **args),
            atol=1e-12, rtol=0,
        )  # fmt: skip


def test_encoder_layer_refuses_what_torchs_refuses():
    ours, theirs = layer_pair()
    x = randn(6, 3, 8)
    bad = {"src_mask": torch.zeros(3, 6, 6, dtype=torch.bool)}  # (N, L, L), N != N*H
    with pytest.raises(RuntimeError, match=r"should be \(6, 6, 6\)"):
        theirs(x, **bad)
    with pytest.raises(
        ValueError, match=r"src or its masks: attn_mask must have shape"
    ):
        ours(x, **bad)
    with pytest.raises(ValueError, match="src contains NaN"):
        ours(torch.full((6, 3, 8), float("nan"), **F64))


# ------------------------------------------------------------------ compilation


@pytest.mark.parametrize("normalizer", ["softmax", "sparsemax", "entmax"])
def test_the_modules_compile_without_graph_breaks(normalizer):
    """``torch.compile(fullgraph=True)``: nothing in the modules' forward branches on
    data (this needs the functional path and the checks it calls to be traceable)."""
    mha = MultiHeadAttention(8, 2, normalizer=normalizer).eval()
    layer = TransformerEncoderLayer(8, 2, 16, normalizer=normalizer).eval()
    x = randn(5, 3, 8, dtype=torch.float32)
    padding = torch.zeros(3, 5, dtype=torch.bool)
    padding[0, 3:] = True
    for module, args in ((mha, (x, x, x)), (layer, (x,))):
        compiled = torch.compile(module, fullgraph=True, backend="eager")
        for masks in (
            {},
            {"key_padding_mask" if module is mha else "src_key_padding_mask": padding},
        ):
            ref = module(*args, **masks)
            out = compiled(*args, **masks)
            ref, out = (ref[0], out[0]) if module is mha else (ref, out)
            torch.testing.assert_close(out, ref)


def test_the_modules_own_code_traces_in_one_graph(monkeypatch):
    """With the functional path and the input checks replaced by traceable stand-ins,
    the modules' own code (layouts, masks, projections, hooks) compiles in one graph;
    the test above needs the real functional path to trace as well."""
    from attnlib.functional import AttentionResult
    from attnlib.layers import encoder, multihead

    def stand_in_attend(q, k, v, *, mask=None, is_causal=False, need_weights=True,
                       dropout_p=0.0, **_):  # fmt: skip
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = (
                scores + mask
                if mask.is_floating_point()
                else scores.masked_fill(~mask, float("-inf"))
            )
        w = scores.softmax(-1)
        return AttentionResult(w @ v, w if need_weights else None)

    monkeypatch.setattr(multihead, "attend", stand_in_attend)
    monkeypatch.setattr(multihead, "as_tensor", lambda x, name, **kw: x)
    monkeypatch.setattr(encoder, "module_input", lambda x, name, like, **kw: x)
    mha = MultiHeadAttention(8, 2, add_bias_kv=True, add_zero_attn=True).eval()
    layer = TransformerEncoderLayer(8, 2, 16).eval()
    theirs = nn.TransformerEncoderLayer(8, 2, 16).eval()
    theirs.load_state_dict(layer.state_dict())
    x = randn(5, 3, 8, dtype=torch.float32)
    padding = torch.zeros(3, 5, dtype=torch.bool)
    padding[0, 3:] = True
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    c_mha = torch.compile(mha, fullgraph=True, backend="eager")
    c_layer = torch.compile(layer, fullgraph=True, backend="eager")
    for masks in ({}, {"key_padding_mask": padding, "attn_mask": causal}):
        torch.testing.assert_close(c_mha(x, x, x, **masks)[0], mha(x, x, x, **masks)[0])
        src = {f"src_{k}" if k == "key_padding_mask" else "src_mask": m
               for k, m in masks.items()}  # fmt: skip
        torch.testing.assert_close(c_layer(x, **src), theirs(x, **src))


# ------------------------------------------------------------------ the decoder layer


@pytest.mark.parametrize("direction", ["torch->ours", "ours->torch"])
@pytest.mark.parametrize(
    "kw", [{}, {"norm_first": True}, {"batch_first": True}, {"activation": "gelu"}]
)
def test_decoder_layer_equals_torchs_after_loading_either_way(direction, kw):
    kw = dict(dim_feedforward=16, **kw, **F64)
    theirs, ours = (
        nn.TransformerDecoderLayer(8, 2, **kw),
        TransformerDecoderLayer(8, 2, **kw),
    )
    source, target = (theirs, ours) if direction == "torch->ours" else (ours, theirs)
    target.load_state_dict(trained_like(source).state_dict(), strict=True)
    tgt, memory = randn(5, 3, 8), randn(7, 3, 8, seed=1)
    if kw.get("batch_first"):
        tgt, memory = tgt.transpose(0, 1), memory.transpose(0, 1)
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[0, 5:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(5, **F64)
    for masks in ({}, {"tgt_mask": causal, "memory_key_padding_mask": padding},
                  {"tgt_mask": causal, "tgt_is_causal": True,
                   "memory_mask": randn(6, 5, 7, seed=4)}):  # fmt: skip
        torch.testing.assert_close(
            ours.eval()(tgt, memory, **masks), theirs.eval()(tgt, memory, **masks),
            atol=1e-12, rtol=0,
        )  # fmt: skip


def test_decoder_layer_takes_torchs_defaults_and_its_seed_and_fires_hooks():
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(8, 2)
    torch.manual_seed(0)
    ours = TransformerDecoderLayer(8, 2)
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[n], b[n]) for n in b)
    assert ours.dropout3.p == 0.1 and ours.linear1.out_features == 2048
    seen = []
    ours.multihead_attn.register_forward_hook(lambda m, args, out: seen.append(args))
    tgt, memory = randn(5, 3, 8, dtype=torch.float32), randn(7, 3, 8, seed=1).float()
    ours(tgt, memory)
    assert len(seen) == 1 and seen[0][1] is memory  # called as a module, on memory
    with pytest.raises(ValueError, match="memory contains NaN"):
        ours(tgt, torch.full_like(memory, float("nan")))
    with pytest.raises(ValueError, match="tgt, memory or memory's masks: query, key"):
        ours(tgt, memory[:, :2])  # two sequences of memory for three targets
