"""attnlib.symmetry's tests: group elements, equivariance errors, KnowledgeAttention."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group

from attnlib.functional import attention
from attnlib.symmetry import (
    KnowledgeAttention,
    equivariance_error,
    householder,
    knowledge_attention,
    random_orthogonal,
    random_permutation,
)

ROUND_OFF = 1e-12


# The tensors here are tiny: one thread (conftest's fixture) for every test.
pytestmark = pytest.mark.usefixtures("one_thread")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- group elements


@given(st.integers(1, 12), st.integers(0, 2**31 - 1))
@settings(max_examples=10, deadline=None)
def test_random_orthogonal_is_orthogonal(d, seed):
    Q = random_orthogonal(d, gen(seed), dtype=torch.float64)
    torch.testing.assert_close(Q @ Q.T, torch.eye(d, dtype=torch.float64))


def test_random_orthogonal_is_haar_like_scipy():
    # Haar measure: E[tr Q] = 0 and E[tr(Q)^2] = 1 for O(d); compare moments with
    # SciPy's sampler.
    d, m, g = 4, 1500, gen()
    ours = torch.stack(
        [random_orthogonal(d, g, dtype=torch.float64) for _ in range(m)]
    ).numpy()
    ref = ortho_group.rvs(d, size=m, random_state=0)
    for sample in (ours, ref):
        tr = np.trace(sample, axis1=1, axis2=2)
        assert abs(tr.mean()) < 0.1 and abs((tr**2).mean() - 1) < 0.15
    # Both determinants occur (the full orthogonal group, not only rotations).
    dets = np.linalg.det(ours)
    assert 0.4 < (dets > 0).mean() < 0.6


def test_random_permutation_is_a_permutation_matrix():
    P = random_permutation(7, gen(1))
    assert set(P.sum(0).tolist()) == {1.0} and set(P.sum(1).tolist()) == {1.0}
    X = torch.arange(7.0)[:, None]
    assert sorted((P @ X).squeeze().tolist()) == X.squeeze().tolist()


def test_householder_reflects_u_and_fixes_its_complement():
    u = torch.tensor([1.0, 2.0, -1.0, 0.5], dtype=torch.float64)
    H = householder(u)
    w = torch.tensor([2.0, -1.0, 0.0, 0.0], dtype=torch.float64)  # w ⟂ u
    torch.testing.assert_close(H @ u, -u)
    torch.testing.assert_close(H @ w, w)
    torch.testing.assert_close(H @ H.T, torch.eye(4, dtype=torch.float64))
    # Plain NumPy restatement of I - 2 u uᵀ / ‖u‖².
    un = u.numpy()
    np.testing.assert_allclose(H.numpy(), np.eye(4) - 2 * np.outer(un, un) / un.dot(un))


# ---------------------------------------------------------------- equivariance_error


def test_equivariance_error_zero_for_gram_based_map_and_order_one_for_broken():
    X = torch.randn(5, 8, dtype=torch.float64, generator=gen())

    def equivariant(x):  # f(X) = g(XXᵀ) X with tokens in rows
        return torch.softmax(x @ x.T, -1) @ x + (x @ x.T) @ x / 5

    b = torch.randn(8, dtype=torch.float64, generator=gen(1))
    assert equivariance_error(equivariant, X, generator=gen(2)) < ROUND_OFF
    assert equivariance_error(lambda x: equivariant(x) + b, X, generator=gen(2)) > 0.1
    # entrywise maps are not
    assert equivariance_error(torch.tanh, X, generator=gen(2)) > 0.1


def test_equivariance_error_with_knowledge_needs_z_to_rotate():
    X = torch.randn(4, 6, dtype=torch.float64, generator=gen())
    Z = torch.randn(3, 6, dtype=torch.float64, generator=gen(1))

    def f(x, z):
        return torch.softmax(x @ z.T @ z @ x.T, -1) @ x + (x @ z.T) @ z

    assert equivariance_error(f, X, Z=Z, generator=gen(2)) < ROUND_OFF
    assert equivariance_error(lambda x: f(x, Z), X, generator=gen(2)) > 0.1


def test_permutation_error_matches_numpy_restatement():
    X = torch.randn(5, 3, dtype=torch.float64, generator=gen())
    cumsum = lambda x: torch.cumsum(x, -2)  # noqa: E731  order-dependent
    err = equivariance_error(
        cumsum, X, group="permutation", n_trials=1, generator=gen(7)
    )
    P = random_permutation(5, gen(7), dtype=torch.float64).numpy()
    Xn = X.numpy()
    ref = np.linalg.norm(np.cumsum(P @ Xn, 0) - P @ np.cumsum(Xn, 0)) / np.linalg.norm(
        np.cumsum(Xn, 0)
    )
    assert err == pytest.approx(ref, rel=1e-12)
    assert equivariance_error(lambda x: 2 * x, X, group="permutation") < ROUND_OFF


# ---------------------------------------------------------------- knowledge_attention


def test_quadratic_kernel_is_self_attention_with_z_of_stacked_wq_wk():
    # Proposition 2 / Remark 3: Z = [W_Q; W_K] (rows), A = [[0, I], [0, 0]] gives
    # softmax(Q Kᵀ/√d₁) X.
    g = gen(3)
    n, d, d1 = 6, 5, 3
    X = torch.randn(n, d, dtype=torch.float64, generator=g)
    WQ, WK = (torch.randn(d1, d, dtype=torch.float64, generator=g) for _ in range(2))
    A = torch.zeros(2 * d1, 2 * d1, dtype=torch.float64)
    A[:d1, d1:] = torch.eye(d1)
    out, w = knowledge_attention(X, torch.cat([WQ, WK]), A, temperature=math.sqrt(d1))
    ref = torch.nn.functional.scaled_dot_product_attention(X @ WQ.T, X @ WK.T, X)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w.sum(-1), torch.ones(n, dtype=torch.float64))


def test_rbf_kernel_matches_numpy_gaussian_weights():
    g = gen(4)
    X = torch.randn(5, 4, dtype=torch.float64, generator=g)
    Z = torch.randn(3, 4, dtype=torch.float64, generator=g)
    out, w = knowledge_attention(X, Z, kernel="rbf", temperature=2.0)
    Y = X.numpy() @ Z.numpy().T
    sq = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    K = np.exp(-sq / 4.0)
    np.testing.assert_allclose(w.numpy(), K / K.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(
        out.numpy(), (K / K.sum(1, keepdims=True)) @ X.numpy(), rtol=1e-12
    )


def test_higher_order_kernel_matches_numpy_restatement():
    g = gen(5)
    n, d, k = 4, 6, 3
    X, Z = (
        torch.randn(n, d, dtype=torch.float64, generator=g),
        torch.randn(k, d, dtype=torch.float64, generator=g),
    )
    A, C = (
        torch.randn(k, k, dtype=torch.float64, generator=g),
        torch.randn(k, k, dtype=torch.float64, generator=g),
    )
    _, w = knowledge_attention(
        X, Z, A, kernel="higher_order", c=C, normalizer="none", temperature=1.0
    )
    Y = X.numpy() @ Z.numpy().T
    M = Y.T @ Y / n
    np.testing.assert_allclose(
        w.numpy(), Y @ A.numpy() @ Y.T + Y @ M @ C.numpy() @ Y.T, rtol=1e-10
    )


@pytest.mark.parametrize("kernel", ["quadratic", "rbf", "higher_order"])
def test_knowledge_attention_is_equivariant_only_when_knowledge_rotates(kernel):
    g = gen(6)
    X, Z = (
        torch.randn(5, 7, dtype=torch.float64, generator=g),
        torch.randn(3, 7, dtype=torch.float64, generator=g),
    )
    C = torch.randn(3, 3, dtype=torch.float64, generator=g)
    f = lambda x, z: knowledge_attention(x, z, kernel=kernel, c=C)  # noqa: E731
    assert equivariance_error(f, X, Z=Z, generator=gen(1)) < ROUND_OFF
    assert equivariance_error(lambda x: f(x, Z), X, generator=gen(1)) > 1e-2
    assert (
        equivariance_error(lambda x: f(x, Z), X, group="permutation", generator=gen(1))
        < ROUND_OFF
    )


def test_knowledge_attention_keeps_dtype_and_gradients_flow():
    X = torch.randn(2, 4, 5, requires_grad=True)
    Z = torch.randn(3, 5, requires_grad=True)
    out = knowledge_attention(X, Z).output
    assert out.dtype == torch.float32 and out.shape == (2, 4, 5)
    out.sum().backward()
    assert X.grad is not None and Z.grad is not None


# ---------------------------------------------------------------- KnowledgeAttention


@pytest.mark.parametrize("kernel", ["quadratic", "rbf", "higher_order"])
def test_module_equivariances(kernel):
    torch.manual_seed(0)
    m = KnowledgeAttention(
        6, 3, num_heads=2, num_layers=2, kernel=kernel, residual=True
    ).double()
    if m.c is not None:
        torch.nn.init.normal_(m.c)
    X = torch.randn(5, 6, dtype=torch.float64, generator=gen())
    Z = m.knowledge.detach()
    assert equivariance_error(m, X, Z=Z, generator=gen(1)) < ROUND_OFF
    assert equivariance_error(m, X, group="permutation", generator=gen(1)) < ROUND_OFF
    assert equivariance_error(m, X, generator=gen(1)) > 1e-2  # knowledge held fixed


@given(
    st.integers(1, 7),
    st.sampled_from(["quadratic", "rbf", "higher_order"]),
    st.integers(0, 2**31 - 1),
)
@settings(max_examples=15, deadline=None)
def test_module_is_permutation_and_knowledge_equivariant_for_any_length(
    n, kernel, seed
):
    torch.manual_seed(seed)
    m = KnowledgeAttention(4, 2, num_heads=2, kernel=kernel).double()
    X = torch.randn(n, 4, dtype=torch.float64, generator=gen(seed))
    assert (
        equivariance_error(m, X, group="permutation", n_trials=2, generator=gen(seed))
        < ROUND_OFF
    )
    assert (
        equivariance_error(
            m, X, Z=m.knowledge.detach(), n_trials=2, generator=gen(seed)
        )
        < ROUND_OFF
    )


def test_linear_value_breaks_orthogonal_but_not_permutation_equivariance():
    torch.manual_seed(1)
    m = KnowledgeAttention(6, 3, value="linear").double()
    torch.nn.init.normal_(m.head_weight)
    X = torch.randn(5, 6, dtype=torch.float64, generator=gen())
    assert equivariance_error(m, X, Z=m.knowledge.detach(), generator=gen(1)) > 1e-2
    assert equivariance_error(m, X, group="permutation", generator=gen(1)) < ROUND_OFF


def test_module_equals_sum_of_heads_of_the_functional_form():
    torch.manual_seed(2)
    m = KnowledgeAttention(5, 2, num_heads=3).double()
    X = torch.randn(4, 5, dtype=torch.float64, generator=gen())
    heads = [
        knowledge_attention(X, m.knowledge[0, i], m.a[0, i]).output
        * m.head_weight[0, i]
        for i in range(3)
    ]
    torch.testing.assert_close(m(X), sum(heads))


def test_one_layer_module_matches_attention_of_projected_tokens():
    torch.manual_seed(3)
    m = KnowledgeAttention(4, 3).double()
    X = torch.randn(6, 4, dtype=torch.float64, generator=gen())
    Y = X @ m.knowledge[0, 0].T
    ref = (
        attention(Y @ m.a[0, 0], Y, X, score="scaled_dot").output * m.head_weight[0, 0]
    )
    torch.testing.assert_close(m(X), ref)


def test_module_gradcheck_float64():
    torch.manual_seed(4)
    m = KnowledgeAttention(3, 2, kernel="higher_order").double()
    X = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: m(x), (X,))


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_raise_value_errors_naming_the_argument():
    X, Z = torch.randn(4, 3), torch.randn(2, 3)
    with pytest.raises(ValueError, match="d must be"):
        random_orthogonal(0)
    with pytest.raises(ValueError, match="n must be"):
        random_permutation(-1)
    with pytest.raises(ValueError, match="u must be a non-zero"):
        householder(torch.zeros(3))
    with pytest.raises(ValueError, match="u must have 1 dim"):
        householder(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="f must be callable"):
        equivariance_error("not callable", X)
    with pytest.raises(ValueError, match="group"):
        equivariance_error(lambda x: x, X, group="rotation")
    with pytest.raises(ValueError, match="Z must have X's feature size"):
        equivariance_error(lambda x, z: x, X, Z=torch.randn(2, 5))
    with pytest.raises(ValueError, match="n_trials"):
        equivariance_error(lambda x: x, X, n_trials=0)
    with pytest.raises(ValueError, match="X contains NaN"):
        equivariance_error(lambda x: x, torch.tensor([[float("nan")]]))
    with pytest.raises(
        ValueError, match=r"f\(X\) is zero, so the relative error is undefined"
    ):
        equivariance_error(lambda x: 0 * x, X)
    with pytest.raises(ValueError, match="kernel"):
        knowledge_attention(X, Z, kernel="cubic")
    with pytest.raises(ValueError, match="z must have x's feature size"):
        knowledge_attention(X, torch.randn(2, 4))
    with pytest.raises(ValueError, match="a must be"):
        knowledge_attention(X, Z, torch.eye(3))
    with pytest.raises(ValueError, match="c is required"):
        knowledge_attention(X, Z, kernel="higher_order")
    with pytest.raises(ValueError, match="n_knowledge"):
        KnowledgeAttention(3, 0)
    with pytest.raises(ValueError, match="kernel"):
        KnowledgeAttention(3, 2, kernel="cubic")
    with pytest.raises(ValueError, match="value"):
        KnowledgeAttention(3, 2, value="mlp")
    with pytest.raises(ValueError, match="temperature"):
        KnowledgeAttention(3, 2, temperature=-1.0)
    with pytest.raises(ValueError, match="x must have 3 features"):
        KnowledgeAttention(3, 2)(torch.randn(4, 5))
    with pytest.raises(ValueError, match="knowledge"):
        KnowledgeAttention(3, 2)(X, knowledge=torch.randn(2, 3))


# ------------------------------------------- kernels and value maps (mutation campaign)
def numpy_quadratic_head(X, Z, A, softmax):
    """softmax(Y A Yᵀ / √k) X with Y = X Zᵀ: Remark 3 in rows, restated in NumPy."""
    Y = X @ Z.T
    return softmax(Y @ A @ Y.T / np.sqrt(Z.shape[0])) @ X


def test_rbf_kernel_with_a_non_identity_form(np_softmax):
    """§3.3: the RBF kernel compares the rows of Y A: -‖(y_i - y_j) A‖² / (2t)."""
    g = gen(7)
    X, Z, A = (torch.randn(*s, dtype=torch.float64, generator=g) for s in
               ((5, 4), (3, 4), (3, 3)))  # fmt: skip
    _, w = knowledge_attention(X, Z, A, kernel="rbf", temperature=1.5)
    YA = X.numpy() @ Z.numpy().T @ A.numpy()
    sq = ((YA[:, None, :] - YA[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(w.numpy(), np_softmax(-sq / 3.0), rtol=1e-10)


def test_linear_value_maps_each_head_by_its_matrix(np_softmax):
    """value="linear": the layer is Σ_i g_i(X Z_iᵀ) X W_iᵀ (Eq. 4), with a W_i that is
    not symmetric, so that W_i and W_iᵀ differ."""
    torch.manual_seed(5)
    m = KnowledgeAttention(4, 3, num_heads=2, value="linear").double()
    with torch.no_grad():
        m.head_weight.copy_(
            torch.randn(1, 2, 4, 4, dtype=torch.float64, generator=gen())
        )
    X = torch.randn(6, 4, dtype=torch.float64, generator=gen(1))
    p = {k: v.detach().numpy()[0] for k, v in m.named_parameters()}
    ref = sum(
        numpy_quadratic_head(X.numpy(), p["knowledge"][i], p["a"][i], np_softmax)
        @ p["head_weight"][i].T
        for i in range(2)
    )
    np.testing.assert_allclose(m(X).detach().numpy(), ref, rtol=1e-10)


def test_residual_layers_add_their_input(np_softmax):
    """residual=True: h ← h + Σ_i w_i g_i(h Z_iᵀ) h, layer after layer."""
    torch.manual_seed(6)
    m = KnowledgeAttention(4, 2, num_layers=2, residual=True).double()
    X = torch.randn(5, 4, dtype=torch.float64, generator=gen(2))
    Z, A = m.knowledge.detach().numpy(), m.a.detach().numpy()
    w = m.head_weight.detach().numpy()
    h = X.numpy()
    for layer in range(2):
        h = h + w[layer, 0] * numpy_quadratic_head(
            h, Z[layer, 0], A[layer, 0], np_softmax
        )
    np.testing.assert_allclose(m(X).detach().numpy(), h, rtol=1e-10)
