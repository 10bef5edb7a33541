"""``attention()`` takes SDPA's arguments with SDPA's meaning (PyTorch is the peer).

Each case calls ``torch.nn.functional.scaled_dot_product_attention`` and attnlib's
``attention`` with the same keyword arguments and compares outputs and input gradients;
dropout is compared under the same seed (SDPA's math path on the CPU draws its mask as
``F.dropout`` does).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.functional import attention


def qkv(n_q=5, n_k=7, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(2, 3, n_q, 8), (2, 3, n_k, 8), (2, 3, n_k, 4)]
    return [torch.randn(*s, generator=g, dtype=dtype).requires_grad_() for s in shapes]


def masks():
    g = torch.Generator().manual_seed(1)
    bool_mask = torch.rand(5, 7, generator=g) > 0.4
    bool_mask[:, 0] = True
    float_mask = torch.randn(2, 1, 5, 7, generator=g, dtype=torch.float64)
    float_mask[..., 3] = -torch.inf
    padded = torch.zeros(2, 1, 1, 7, dtype=torch.float64)
    padded[..., 5:] = -1e9  # masked_fill(-1e9), as many models pad
    return {"bool": bool_mask, "float": float_mask, "padding -1e9": padded}


CASES = {
    "plain": {},
    **{f"attn_mask {name}": {"attn_mask": m} for name, m in masks().items()},
    "is_causal": {"is_causal": True},
    "scale": {"scale": 0.3},
    "bool mask and scale": {"attn_mask": masks()["bool"], "scale": 2.0},
}


# Five queries for every case; seven (as many as keys) where no mask fixes the shape.
RUNS = [(kw, 5) for kw in CASES.values()] + [
    (kw, 7) for kw in CASES.values() if "attn_mask" not in kw
]


@pytest.mark.parametrize(
    "kw, n_q", RUNS, ids=[f"{name}, {n} queries" for name, n in zip(
        [*CASES, *(c for c in CASES if "attn_mask" not in CASES[c])],
        [n for _, n in RUNS])],
)  # fmt: skip
def test_matches_sdpa_in_output_and_gradient(kw, n_q):
    ours_in, peer_in = qkv(n_q), qkv(n_q)
    ours = attention(*ours_in, **kw).output
    peer = F.scaled_dot_product_attention(*peer_in, **kw)
    torch.testing.assert_close(ours, peer, atol=1e-12, rtol=0)
    w = torch.randn_like(peer)
    ours_g = torch.autograd.grad((ours * w).sum(), ours_in)
    peer_g = torch.autograd.grad((peer * w).sum(), peer_in)
    for a, b in zip(ours_g, peer_g):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)


def test_causal_mask_is_anded_with_a_given_mask():
    q, k, v = qkv()
    m = masks()["bool"]
    ours = attention(q, k, v, attn_mask=m, is_causal=True)
    both = m & torch.ones(5, 7, dtype=torch.bool).tril()
    peer = F.scaled_dot_product_attention(q, k, v, attn_mask=both)
    torch.testing.assert_close(ours.output, peer)
    assert (ours.weights[..., ~both] == 0).all()


def test_dropout_is_sdpas_under_the_same_seed_and_unbiased():
    q, k, v = qkv()
    torch.manual_seed(5)
    ours = attention(q, k, v, dropout_p=0.3)
    torch.manual_seed(5)
    peer = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    torch.testing.assert_close(ours.output, peer, atol=1e-12, rtol=0)
    kept = attention(q, k, v).weights
    dropped = ours.weights
    # every weight is dropped (0) or scaled by 1 / (1 - p)
    scaled = torch.isclose(dropped, kept / 0.7) | (dropped == 0)
    assert scaled.all()
    zeros = (dropped == 0).double().mean().item()
    assert 0.2 < zeros < 0.4  # about p of 210 weights
    assert attention(q, k, v, dropout_p=1.0).output.abs().max() == 0


@pytest.mark.parametrize("name", [*masks(), "is_causal"])
def test_masks_with_dropout_are_sdpas_under_the_same_seed(name):
    """With dropout, softmax attention runs on the weights path (which masks and adds
    the float mask's bias after the temperature): still SDPA's output, draw for draw."""
    q, k, v = qkv()
    kw = {"is_causal": True} if name == "is_causal" else {"attn_mask": masks()[name]}
    torch.manual_seed(5)
    ours = attention(q, k, v, dropout_p=0.3, **kw).output
    torch.manual_seed(5)
    peer = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, **kw)
    torch.testing.assert_close(ours, peer, atol=1e-12, rtol=0)


def test_a_row_with_every_key_masked_gives_zeros_for_bool_and_float_masks():
    q, k, v = qkv()
    bool_mask = masks()["bool"].clone()
    bool_mask[2] = False
    float_mask = torch.zeros(5, 7, dtype=torch.float64)
    float_mask[2] = -torch.inf
    for m in (bool_mask, float_mask):
        out = attention(q, k, v, attn_mask=m)
        assert out.output[..., 2, :].abs().max() == 0
        assert out.weights[..., 2, :].abs().max() == 0
        (g,) = torch.autograd.grad(out.output.sum(), q)
        assert torch.isfinite(g).all()
    peer = F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)
    torch.testing.assert_close(attention(q, k, v, attn_mask=bool_mask).output, peer)


def test_every_normalizer_takes_the_sdpa_arguments():
    q, k, v = qkv()
    for normalizer in ("softmax", "sparsemax", "entmax"):
        out = attention(
            q, k, v, normalizer=normalizer, attn_mask=masks()["float"], is_causal=True,
            scale=0.5,
        )  # fmt: skip
        w = out.weights.detach()
        torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
        assert (w[..., torch.ones(5, 7, dtype=torch.bool).triu(1)] == 0).all()
        assert (w[..., 3] == 0).all()


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"mask": torch.ones(5, 7, dtype=torch.bool),
          "attn_mask": torch.ones(5, 7, dtype=torch.bool)}, "attn_mask"),
        ({"temperature": 2.0, "scale": 0.5}, "scale"),
        ({"scale": 0.0}, "scale"),
        ({"scale": 1e-320}, "scale"),  # its inverse overflows
        ({"dropout_p": 1.5}, "dropout_p"),
        ({"dropout_p": True}, "dropout_p"),
        ({"is_causal": 1}, "is_causal"),
        ({"attn_mask": torch.full((5, 7), torch.nan)}, "float mask .* NaN"),
        ({"attn_mask": torch.ones(5, 7, dtype=torch.long), "is_causal": True}, "mask"),
        ({"attn_mask": torch.ones(4, 7, dtype=torch.bool), "is_causal": True}, "mask"),
    ],
)  # fmt: skip
def test_bad_sdpa_arguments_are_refused_by_name(kw, name):
    with pytest.raises(ValueError, match=name):
        attention(*qkv(), **kw)


@pytest.mark.parametrize("kw", CASES.values(), ids=CASES.keys())
def test_without_weights_softmax_runs_fused_and_agrees(kw, monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention
    monkeypatch.setattr(
        F,
        "scaled_dot_product_attention",
        lambda *a, **k: calls.append(1) or real(*a, **k),
    )
    dense_in, fused_in = qkv(), qkv()
    dense = attention(*dense_in, **kw)
    fused = attention(*fused_in, **kw, need_weights=False)
    assert len(calls) == 1 and fused.weights is None  # the fused path, only there
    torch.testing.assert_close(fused.output, dense.output, atol=1e-12, rtol=0)
    w = torch.randn_like(dense.output)
    for a, b in zip(
        torch.autograd.grad((dense.output * w).sum(), dense_in),
        torch.autograd.grad((fused.output * w).sum(), fused_in),
    ):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=0)


def test_without_weights_other_normalizers_and_scores_keep_their_own_path(monkeypatch):
    monkeypatch.setattr(F, "scaled_dot_product_attention", None)  # must not be called
    q, k, v = qkv()
    for kw in ({"normalizer": "sparsemax"}, {"score": "neg_sq_dist"}):
        out = attention(q, k, v, **kw, need_weights=False)
        assert out.weights is None
        torch.testing.assert_close(out.output, attention(q, k, v, **kw).output)


def test_without_weights_a_query_with_no_key_gets_zeros_and_overflow_is_named():
    q, k, v = qkv()
    blocked = masks()["bool"].clone()
    blocked[2] = False
    out = attention(q, k, v, attn_mask=blocked, need_weights=False).output
    assert out[..., 2, :].abs().max() == 0
    torch.testing.assert_close(out, attention(q, k, v, attn_mask=blocked).output)
    with pytest.raises(ValueError, match="too large for torch.float32"):
        big = q.detach().float() * 1e20
        attention(big, big, big, need_weights=False, temperature=1e-20)
    with pytest.raises(ValueError, match="need_weights"):
        attention(q, k, v, need_weights=0)


def test_without_weights_nan_input_is_caught_once_on_the_output_and_named():
    q, k, v = (t.detach() for t in qkv())
    for name, t in (("q", q), ("k", k), ("v", v)):
        bad = t.clone()
        bad[0, 0, 0, 0] = torch.nan
        args = {"q": q, "k": k, "v": v} | {name: bad}
        with pytest.raises(ValueError, match=f"^{name} contains NaN"):
            attention(args["q"], args["k"], args["v"], need_weights=False)
