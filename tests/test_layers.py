"""attnlib's layers as drop-ins for ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer`` (PyTorch is the peer).

Each test builds torch's module, loads its state dict into ours, and compares outputs
(and gradients in the inputs) under torch's own arguments and mask polarity.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlib import MultiHeadAttention, TransformerEncoderLayer

F64 = dict(dtype=torch.float64)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), **F64)


def pair_mha(batch_first, kdim=None, bias=True, dropout=0.0):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(
        8, 2, dropout=dropout, bias=bias, kdim=kdim, vdim=kdim,
        batch_first=batch_first, **F64,
    )  # fmt: skip
    ours = MultiHeadAttention(
        8, 2, dropout, bias, kdim=kdim, vdim=kdim, batch_first=batch_first, **F64
    )
    ours.load_state_dict(theirs.state_dict())
    return ours.eval(), theirs.eval()


def torch_masks(n_q=5, n_k=6):
    padding = torch.zeros(3, n_k, dtype=torch.bool)
    padding[0, 4:] = True  # the first sequence has two padding keys
    causal = torch.ones(n_q, n_k, dtype=torch.bool).triu(1)  # True = may NOT attend
    bias = randn(3 * 2, n_q, n_k, seed=9)  # one float mask per (sequence, head)
    return {
        "none": {},
        "key_padding_mask": {"key_padding_mask": padding},
        "float key_padding_mask": {
            "key_padding_mask": torch.zeros(3, n_k, **F64).masked_fill(padding, -1e9)
        },
        "attn_mask": {"attn_mask": causal},
        "float attn_mask per head": {"attn_mask": bias},
        "both": {"key_padding_mask": padding, "attn_mask": causal},
    }


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kdim", [None, 5])
@pytest.mark.parametrize("masks", torch_masks().values(), ids=torch_masks().keys())
def test_multihead_attention_matches_torchs_after_loading_its_state_dict(
    batch_first, kdim, masks
):
    ours, theirs = pair_mha(batch_first, kdim)
    q, kv = randn(3, 5, 8), randn(3, 6, kdim or 8, seed=1)
    if not batch_first:
        q, kv = q.transpose(0, 1), kv.transpose(0, 1)
    q.requires_grad_()
    for average in (True, False):
        a_out, a_w = ours(q, kv, kv, **masks, average_attn_weights=average)
        b_out, b_w = theirs(q, kv, kv, **masks, average_attn_weights=average)
        torch.testing.assert_close(a_out, b_out, atol=1e-12, rtol=0)
        torch.testing.assert_close(a_w, b_w, atol=1e-12, rtol=0)
    (ga,) = torch.autograd.grad(a_out.sum(), q)
    (gb,) = torch.autograd.grad(b_out.sum(), q)
    torch.testing.assert_close(ga, gb, atol=1e-12, rtol=0)
    assert ours(q, kv, kv, need_weights=False, **masks).weights is None


def test_is_causal_and_attnlibs_own_mask_agree_with_torchs_attn_mask():
    ours, theirs = pair_mha(True)
    x = randn(3, 5, 8)
    blocked = torch.ones(5, 5, dtype=torch.bool).triu(1)
    ref = theirs(x, x, x, attn_mask=blocked)[0]
    torch.testing.assert_close(ours(x, is_causal=True).output, ref)
    torch.testing.assert_close(ours(x, mask=~blocked).output, ref)  # True = may attend


def test_dropout_acts_in_training_only():
    ours, _ = pair_mha(True, dropout=0.5)
    x = randn(2, 5, 8)
    assert torch.equal(ours(x).output, ours(x).output)  # eval: deterministic
    ours.train()
    torch.manual_seed(1)
    a = ours(x).weights
    assert (a == 0).any() and not torch.equal(a, ours(x).weights)


def test_a_state_dict_with_add_bias_kv_is_refused():
    theirs = nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(ValueError, match="bias_k"):
        MultiHeadAttention(8, 2).load_state_dict(theirs.state_dict())


def pair_layer(batch_first=True, **kw):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.1, batch_first=batch_first, **kw, **F64
    )
    ours = TransformerEncoderLayer(8, 2, 16, 0.1, batch_first=batch_first, **kw, **F64)
    ours.load_state_dict(theirs.state_dict())
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize(
    "kw",
    [{}, {"norm_first": True}, {"activation": "gelu"}, {"layer_norm_eps": 1e-3},
     {"batch_first": False}],
    ids=["post-norm", "pre-norm", "gelu", "eps", "sequence first"],
)  # fmt: skip
def test_encoder_layer_matches_torchs_after_loading_its_state_dict(kw):
    batch_first = kw.pop("batch_first", True)
    ours, theirs = pair_layer(batch_first, **kw)
    x = randn(3, 6, 8) if batch_first else randn(6, 3, 8)
    padding = torch.zeros(3, 6, dtype=torch.bool)
    padding[1, 5:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(6, **F64)  # float -inf
    for masks in ({}, {"src_key_padding_mask": padding}, {"src_mask": causal}):
        torch.testing.assert_close(
            ours(x, **masks), theirs(x, **masks), atol=1e-12, rtol=0
        )


def test_encoder_layers_stack_in_torchs_transformer_encoder():
    ours, theirs = pair_layer()
    stack_ours = nn.TransformerEncoder(ours, 3, enable_nested_tensor=False)
    stack_theirs = nn.TransformerEncoder(theirs, 3, enable_nested_tensor=False)
    x = randn(2, 6, 8)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[0, 4:] = True
    for args in (
        {},
        {"src_key_padding_mask": padding},
        {
            "is_causal": True,
            "mask": nn.Transformer.generate_square_subsequent_mask(6, **F64),
        },
    ):
        torch.testing.assert_close(
            stack_ours.eval()(x, **args), stack_theirs.eval()(x, **args),
            atol=1e-12, rtol=0,
        )  # fmt: skip


def test_torch_names_and_bad_arguments():
    assert TransformerEncoderLayer(8, nhead=2).self_attn.num_heads == 2
    with pytest.raises(ValueError, match="nhead"):
        TransformerEncoderLayer(8, 2, nhead=2)
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadAttention(8, 2, dropout=1.5)
    with pytest.raises(ValueError, match="batch_first"):
        MultiHeadAttention(8, 2, batch_first="yes")
    with pytest.raises(ValueError, match="activation"):
        TransformerEncoderLayer(8, 2, activation="swish")
    with pytest.raises(ValueError, match="key_padding_mask"):
        MultiHeadAttention(8, 2)(
            randn(3, 5, 8).float(), key_padding_mask=torch.zeros(3, 4, dtype=torch.bool)
        )
