"""Tests of attnlib.subspace.sparse_coding: unrolled ISTA against scikit-learn."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import Lasso

import attnlib.subspace
from attnlib.subspace.sparse_coding import (
    UnrolledISTAAttention,
    sparse_coding_attention,
)


def test_sparse_coding_attention_converges_to_the_lasso():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(n, 6, generator=g, dtype=torch.float64) for n in (4, 10, 10))
    lam = 0.3
    out, C = sparse_coding_attention(q, k, v, lam, n_iter=5000)
    for i in range(4):
        ref = Lasso(
            alpha=lam / 6, fit_intercept=False, tol=1e-14, max_iter=100_000
        ).fit(k.T.numpy(), q[i].numpy())
        np.testing.assert_allclose(C[i].numpy(), ref.coef_, atol=1e-6)
    torch.testing.assert_close(out, C @ v)
    assert out.dtype == torch.float64
    # batched input, and the paper's one-sided threshold gives the non-negative Lasso
    _, Cb = sparse_coding_attention(
        q.expand(3, 4, 6), k.expand(3, 10, 6), v.expand(3, 10, 6), lam, n_iter=50
    )
    torch.testing.assert_close(
        Cb[1], sparse_coding_attention(q, k, v, lam, n_iter=50).weights
    )
    _, Cn = sparse_coding_attention(q, k, v, lam, n_iter=5000, nonnegative=True)
    ref = Lasso(
        alpha=lam / 6, fit_intercept=False, positive=True, tol=1e-14, max_iter=100_000
    ).fit(k.T.numpy(), q[0].numpy())
    np.testing.assert_allclose(Cn[0].numpy(), ref.coef_, atol=1e-6)


def test_unrolled_ista_attention_trains_and_keeps_dtype():
    torch.manual_seed(0)
    layer = UnrolledISTAAttention(8, n_iter=3, lam=0.05).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    out, C = layer(x)
    assert (
        out.shape == (2, 5, 8) and C.shape == (2, 5, 5) and out.dtype == torch.float64
    )
    out.square().sum().backward()
    assert all(p.grad is not None for p in layer.parameters())
    assert torch.autograd.gradcheck(
        lambda z: layer(z).output, (x[:1, :3].detach().requires_grad_(),)
    )
    lista = UnrolledISTAAttention(8, n_iter=2, lista=True)
    assert (
        sum(p.numel() for p in lista.parameters())
        == sum(p.numel() for p in layer.parameters()) + 8 * 8 + 8 - 2
    )


def test_bad_inputs():
    with pytest.raises(ValueError, match="lam must be"):
        sparse_coding_attention(
            torch.ones(2, 3), torch.ones(4, 3), torch.ones(4, 2), 0.0
        )
    with pytest.raises(ValueError, match="q, k, v have incompatible shapes"):
        sparse_coding_attention(
            torch.ones(2, 3), torch.ones(4, 2), torch.ones(4, 2), 0.1
        )
    with pytest.raises(ValueError, match="embed_dim"):
        UnrolledISTAAttention(0)
    with pytest.raises(ValueError, match="x must have 4 features"):
        UnrolledISTAAttention(4)(torch.ones(2, 3))


def test_still_importable_from_subspace():
    assert attnlib.subspace.sparse_coding_attention is sparse_coding_attention
    assert attnlib.subspace.UnrolledISTAAttention is UnrolledISTAAttention


def test_unrolled_ista_starts_as_plain_ista_with_step_one_over_the_lipschitz():
    """At initialisation every step is 1 / ‖K‖₂² and every threshold λ: n_iter plain
    ISTA iterations from zero on the projected tokens, restated in NumPy."""
    torch.manual_seed(4)
    layer = UnrolledISTAAttention(6, n_iter=3, lam=0.2).double()
    x = torch.randn(
        5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(5)
    )
    out, C = layer(x)
    q, k, v = (
        (x @ p.weight.T + p.bias).detach().numpy()
        for p in (layer.q_proj, layer.k_proj, layer.v_proj)
    )
    step, ref = 1 / np.linalg.norm(k, 2) ** 2, np.zeros((5, 5))
    for _ in range(3):
        z = ref - step * (ref @ k @ k.T - q @ k.T)
        ref = np.sign(z) * np.maximum(np.abs(z) - step * 0.2, 0)
    # The raw parameters start in float32: softplus(raw) is 1 to about 1e-8.
    np.testing.assert_allclose(C.detach().numpy(), ref, atol=1e-7)
    expected = ref @ v @ layer.out_proj.weight.detach().numpy().T
    expected += layer.out_proj.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), expected, atol=1e-7)
