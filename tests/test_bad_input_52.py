"""Issue 52's classes of silent outcomes, each against an independent peer.

- ``layer_norm_eps``: torch's own layers take a negative or NaN ε and return NaN
  (shown here, so that the day torch starts refusing is noticed); ours refuse, naming
  the argument. ε = 0 is accepted by both and computes the same output.
- Hyper-parameters by type: ``learn_alpha``, ``norm_first`` are flags, not truthy
  values; a learned α that the default dtype cannot hold is refused when the module is
  built, not at its first forward.
- Fenchel–Young losses at a target whose score is ``-inf``: ``inf``, as torch's
  ``cross_entropy`` (softmax) and the ``entmax`` package's losses; class-index
  targets in the dtypes ``cross_entropy`` takes (int64, uint8), the others refused as
  it refuses them.
- ``NadarayaWatson`` in float32 at feature scales 1e-20 to 1e-30 and with extreme
  sample weights, against a float64 NumPy restatement.
- ``as_tensor`` into an integer dtype refuses non-integral values.
- ``truncated_paraboloid_pdf`` far from zero, against a float64 NumPy restatement.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlib.layers import TransformerDecoderLayer, TransformerEncoderLayer

D, H, FF = 8, 2, 16


def _pair(cls_ours, cls_torch, **kw):
    torch.manual_seed(0)
    theirs = cls_torch(D, H, dim_feedforward=FF, dropout=0.0, batch_first=True, **kw)
    ours = cls_ours(D, H, dim_feedforward=FF, dropout=0.0, batch_first=True, **kw)
    ours.load_state_dict(theirs.state_dict())
    return ours.eval(), theirs.eval()


LAYERS = [
    (TransformerEncoderLayer, torch.nn.TransformerEncoderLayer),
    (TransformerDecoderLayer, torch.nn.TransformerDecoderLayer),
]


def _call(layer, x):
    if isinstance(layer, (TransformerDecoderLayer, torch.nn.TransformerDecoderLayer)):
        return layer(x, x)
    return layer(x)


@pytest.mark.parametrize("layers", LAYERS, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("eps", [-1.0, float("nan")])
def test_layer_norm_eps_torch_returns_nan_we_refuse(layers, eps):
    ours, theirs = layers
    x = torch.randn(2, 5, D)
    torch_layer = theirs(D, H, dim_feedforward=FF, dropout=0.0, layer_norm_eps=eps,
                         batch_first=True).eval()  # fmt: skip
    # torch: built, and NaN out (the silent outcome we do not follow)
    assert torch.isnan(_call(torch_layer, x)).any()
    with pytest.raises(ValueError, match="layer_norm_eps must be a finite number"):
        ours(D, H, layer_norm_eps=eps)


@pytest.mark.parametrize("layers", LAYERS, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("eps", [float("inf"), "1e-5", True, None])
def test_layer_norm_eps_of_the_wrong_kind_is_refused(layers, eps):
    with pytest.raises(ValueError, match="layer_norm_eps must be a finite number"):
        layers[0](D, H, layer_norm_eps=eps)


@pytest.mark.parametrize("layers", LAYERS, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("eps", [0, 0.0, 1e-30, np.float32(1e-3), 10.0])
def test_layer_norm_eps_that_torch_takes_gives_torchs_output(layers, eps):
    ours, theirs = _pair(*layers, layer_norm_eps=eps)
    x = torch.randn(2, 5, D)
    torch.testing.assert_close(_call(ours, x), _call(theirs, x))


@pytest.mark.parametrize("layers", LAYERS, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("flag", ["no", 1, 0, None, np.bool_(True)])
def test_norm_first_is_a_flag_not_a_truthy_value(layers, flag):
    with pytest.raises(ValueError, match="norm_first must be True or False"):
        layers[0](D, H, norm_first=flag)


# ---------------------------------------------------------------- learned α, flags
def test_learn_alpha_is_a_flag_not_a_truthy_value():
    from attnlib.normalizers import Entmax

    for flag in ["no", 0, 1, None, np.bool_(False)]:
        with pytest.raises(ValueError, match="learn_alpha must be True or False"):
            Entmax(1.5, learn_alpha=flag)


@pytest.mark.parametrize("alpha", [1.5, 3.0, 100.0, 1e6])
def test_a_learned_alpha_starts_where_asked_and_maps_as_the_package(alpha):
    import entmax

    from attnlib.normalizers import Entmax

    m = Entmax(alpha, learn_alpha=True)
    torch.testing.assert_close(m.alpha.detach(), torch.tensor(alpha), rtol=1e-6, atol=0)
    x = torch.randn(4, 7)
    peer = entmax.entmax_bisect(x.double(), alpha, n_iter=100).float()
    torch.testing.assert_close(m(x), peer, atol=1e-5, rtol=0)


@pytest.mark.parametrize("alpha", [1 + 1e-9, torch.tensor([1.5, 1 + 1e-9])])
def test_a_learned_alpha_the_dtype_rounds_to_one_is_refused_when_built(alpha):
    from attnlib.normalizers import Entmax

    with pytest.raises(ValueError, match="alpha must (be|hold values) greater than 1"):
        Entmax(alpha, learn_alpha=True)


# ---------------------------------------------------------- Fenchel–Young at -inf
def _losses():
    import entmax

    from attnlib import normalizers as N

    return [
        (N.SparsemaxLoss, entmax.SparsemaxLoss, {}),
        (N.Entmax15Loss, entmax.Entmax15Loss, {}),
        (N.SparsemaxBisectLoss, entmax.SparsemaxBisectLoss, {}),
        (N.EntmaxBisectLoss, entmax.EntmaxBisectLoss, {"alpha": 1.3}),
        (N.NormmaxBisectLoss, entmax.NormmaxBisectLoss, {"alpha": 2}),
    ]


def _scores_with_a_dead_target():
    z = torch.randn(4, 5, dtype=torch.float64)
    t = torch.tensor([2, 1, 0, 4])
    z[0, 2] = -torch.inf  # the target's own score
    return z, t


def test_a_dead_class_off_the_target_is_the_loss_without_that_class():
    """The package gives NaN there (0 · -inf); the limit is the loss over the
    classes left, which the package computes on the row without the dead class."""
    import entmax

    from attnlib import normalizers as N

    z = torch.randn(3, 5, dtype=torch.float64)
    t = torch.tensor([1, 0, 4])
    z[:, 3] = -torch.inf
    live = z[:, [0, 1, 2, 4]]
    t_live = torch.tensor([1, 0, 3])
    for name in ["sparsemax_loss", "entmax15_loss", "normmax_bisect_loss"]:
        torch.testing.assert_close(
            getattr(N, name)(z, t), getattr(entmax, name)(live, t_live)
        )
    torch.testing.assert_close(
        N.fenchel_young_loss(z, t, 1.0, "none"), F.cross_entropy(z, t, reduction="none")
    )


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("reduction", ["none", "sum", "elementwise_mean"])
def test_loss_modules_are_inf_where_the_packages_are(case, reduction):
    ours, theirs, kw = _losses()[case]
    z, t = _scores_with_a_dead_target()
    got = ours(reduction=reduction, **kw)(z, t)
    want = theirs(reduction=reduction, **kw)(z, t)
    assert torch.isinf(want[0] if reduction == "none" else want)  # the peer's limit
    torch.testing.assert_close(got, want.to(got.dtype), atol=1e-6, rtol=1e-6)
    # an ignored row on a dead class contributes zero, as the package's (which
    # takes only a valid class as ignore_index); ours also on its stand-in class 0
    z_ign = z.clone()
    z_ign[0, 0] = -torch.inf
    got = ours(reduction=reduction, ignore_index=2, **kw)(z_ign, t)
    want = theirs(reduction=reduction, ignore_index=2, **kw)(z_ign, t)
    assert torch.isfinite(want).all()
    torch.testing.assert_close(got, want.to(got.dtype), atol=1e-6, rtol=1e-6)


def test_the_package_functions_are_inf_where_the_packages_are():
    import entmax

    from attnlib import normalizers as N

    z, t = _scores_with_a_dead_target()
    for name in ["sparsemax_loss", "entmax15_loss", "sparsemax_bisect_loss",
                 "entmax_bisect_loss", "normmax_bisect_loss"]:  # fmt: skip
        got, want = getattr(N, name)(z, t), getattr(entmax, name)(z, t)
        assert torch.isinf(got[0]) and torch.isinf(want[0]), name
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_fenchel_young_at_alpha_one_is_cross_entropy_at_a_dead_target(reduction):
    from attnlib.normalizers import fenchel_young_loss

    z, t = _scores_with_a_dead_target()
    z.requires_grad_()
    got = fenchel_young_loss(z, t, 1.0, reduction=reduction)
    want = F.cross_entropy(z, t, reduction=reduction)
    torch.testing.assert_close(got, want)
    # probabilities with mass on the dead class: inf too; none on it: finite
    y = F.one_hot(t, 5).double()
    torch.testing.assert_close(
        fenchel_young_loss(z, y, 1.0, reduction="none"),
        F.cross_entropy(z, y, reduction="none"),
    )
    # the live rows' gradient is cross_entropy's
    g = torch.autograd.grad(fenchel_young_loss(z, t, 1.0, "none")[1:].sum(), z)[0]
    w = torch.autograd.grad(F.cross_entropy(z, t, reduction="none")[1:].sum(), z)[0]
    torch.testing.assert_close(g, w)


@pytest.mark.parametrize(
    "dtype",
    [
        torch.int64,
        torch.uint8,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.bool,
    ],  # fmt: skip
)
def test_class_index_dtypes_are_cross_entropys(dtype):
    from attnlib.normalizers import SparsemaxLoss, fenchel_young_loss, sparsemax_loss

    z = torch.randn(3, 4)
    t = torch.tensor([0, 1, 1], dtype=dtype)
    try:
        want = F.cross_entropy(z, t, reduction="none")
    except RuntimeError as err:  # torch refuses: so do we, naming target
        assert "expected target dtype" in str(err)
        for call in (
            lambda: fenchel_young_loss(z, t, 1.0),
            lambda: SparsemaxLoss()(z, t),
            lambda: sparsemax_loss(z, t),
        ):
            with pytest.raises(ValueError, match="target of class indices must be"):
                call()
        return
    torch.testing.assert_close(fenchel_young_loss(z, t, 1.0, "none"), want)
    torch.testing.assert_close(SparsemaxLoss()(z, t), SparsemaxLoss()(z, t.long()))
    torch.testing.assert_close(sparsemax_loss(z, t), sparsemax_loss(z, t.long()))


# ------------------------------------------------------- NadarayaWatson in float32
def _nw_numpy(X, y, Q, h, w=None):
    """The Gaussian-kernel weighted average in float64, distances scaled by h first."""
    X, Q = np.asarray(X, np.float64) / h, np.asarray(Q, np.float64) / h
    d2 = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    k = np.exp(-(d2 - d2.min(1, keepdims=True)) / 2)
    k = k * (1.0 if w is None else np.asarray(w, np.float64) / np.max(w))
    return (k @ np.asarray(y, np.float64)) / k.sum(1)


@pytest.mark.parametrize("scale", [1e-30, 1e-25, 1e-20, 1.0, 1e15])
def test_nadaraya_watson_float32_is_scale_free(scale, rng):
    from attnlib.kernel_regression import NadarayaWatson

    X, Q = rng.normal(size=(40, 2)), rng.normal(size=(6, 2))
    y = np.sin(X[:, 0]) + X[:, 1]
    X32, Q32 = (X * scale).astype(np.float32), (Q * scale).astype(np.float32)
    h = 0.5 * scale
    want = _nw_numpy(X32, y, Q32, h)
    assert np.ptp(want) > 0.5  # the peer is not the mean of y
    got = NadarayaWatson(bandwidth=h).fit(X32, y.astype(np.float32)).predict(Q32)
    np.testing.assert_allclose(got, want, atol=2e-5)
    # the leave-one-out choice is the float64 one, rescaled
    m32 = NadarayaWatson().fit(X32, y.astype(np.float32))
    m64 = NadarayaWatson().fit(X32.astype(np.float64), y)
    np.testing.assert_allclose(m32.bandwidth_, m64.bandwidth_, rtol=1e-5)
    np.testing.assert_allclose(m32.predict(Q32), m64.predict(Q32), atol=2e-5)


@pytest.mark.parametrize("w", [1e-44, 1e-40, 1e-30, 1.0, 1e30, 1e38, 3e38])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equal_sample_weights_of_any_size_predict_the_unweighted_average(w, dtype, rng):
    from attnlib.kernel_regression import NadarayaWatson

    X, Q = rng.normal(size=(30, 2)), rng.normal(size=(5, 2))
    y = np.cos(X[:, 0]) * 2 + X[:, 1]
    X, Q, y = X.astype(dtype), Q.astype(dtype), y.astype(dtype)
    weights = np.full(30, w, dtype)
    got = NadarayaWatson(bandwidth=0.4).fit(X, y, sample_weight=weights).predict(Q)
    np.testing.assert_allclose(got, _nw_numpy(X, y, Q, 0.4), atol=2e-5)
    # unequal extreme weights: the float64 weighted average
    ramp = np.linspace(1, 4, 30) * w
    if ramp.max() < np.finfo(dtype).max and ramp.min() >= np.finfo(dtype).tiny:
        ramp = ramp.astype(dtype)
        got = NadarayaWatson(bandwidth=0.4).fit(X, y, sample_weight=ramp).predict(Q)
        np.testing.assert_allclose(got, _nw_numpy(X, y, Q, 0.4, ramp), atol=1e-4)
    # leave-one-out runs and predicts with the bandwidth it chose
    m = NadarayaWatson().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(
        m.predict(Q), _nw_numpy(X, y, Q, m.bandwidth_), atol=2e-5
    )


@pytest.mark.parametrize("w", [1.0, 7.0, 1e30, 3e38])
def test_equal_weights_give_the_unweighted_default_bandwidths(w, rng):
    """w copies of every point have the median distance of the points themselves
    (the ties of the repeated list average the same two middle distances), also
    where w_i w_j overflows float32. (A weight below 1 is a fraction of a copy, and
    the median of the repeated list is then another one: not compared here.)"""
    from attnlib.kernel_regression import NadarayaWatson

    X = rng.normal(size=(30, 2)).astype(np.float32)
    y = X[:, 0].astype(np.float32)
    weighted = NadarayaWatson().fit(X, y, sample_weight=np.full(30, w, np.float32))
    plain = NadarayaWatson().fit(X, y)
    np.testing.assert_allclose(weighted.bandwidths_, plain.bandwidths_, rtol=1e-6)


# ------------------------------------------------------------ as_tensor to integers
@pytest.mark.parametrize(
    "values", [[1.5], [1.0, 2.0], [-3.0, 7.0], [2.0**40], [1e-300], [0.5, 1.0]]
)
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
@pytest.mark.parametrize("kind", ["list", "numpy", "tensor"])
def test_as_tensor_to_an_integer_dtype_keeps_values_or_refuses(values, dtype, kind):
    from attnlib.utils import as_tensor

    as64 = lambda v: torch.tensor(v, dtype=torch.float64)
    x = {"list": list, "numpy": np.array, "tensor": as64}[kind](values)
    info = torch.iinfo(dtype)
    # the reference: Python's own integrality and the dtype's range
    exact = all(float(v).is_integer() and info.min <= v <= info.max for v in values)
    if exact:
        got = as_tensor(x, "x", dtype=dtype)
        assert got.dtype == dtype and got.tolist() == [int(v) for v in values]
    else:
        with pytest.raises(ValueError, match="x must hold integers"):
            as_tensor(x, "x", dtype=dtype)


# ------------------------------------------------- truncated paraboloid far away
def _paraboloid_numpy(t, mu, Sigma):
    """Eq. (11) in float64 NumPy and SciPy's gamma: [-λ - ½ xᵀΣ⁻¹x]₊."""
    from scipy.special import gamma

    t, mu, Sigma = (np.asarray(a, np.float64) for a in (t, mu, Sigma))
    d = Sigma.shape[-1]
    lam = -((gamma(d / 2 + 2) / np.sqrt(np.linalg.det(2 * np.pi * Sigma)))
            ** (2 / (d + 2)))  # fmt: skip
    x = t - mu
    quad = np.einsum("...i,ij,...j->...", x, np.linalg.inv(Sigma), x)
    return np.maximum(-lam - 0.5 * quad, 0)


@pytest.mark.parametrize("centre", [0.0, 1e10, 1e29, -1e29, 1e37])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_truncated_paraboloid_near_and_far_matches_numpy(centre, dtype, rng):
    from attnlib.continuous.densities import truncated_paraboloid_pdf

    Sigma = np.array([[2.0, 0.5], [0.5, 1.0]])
    mu = np.full(2, centre)
    # points inside the support, on its edge's scale, and far out (up to 3e38)
    offsets = np.concatenate([
        rng.normal(size=(6, 2)) * 0.5,
        rng.normal(size=(3, 2)) * 1e20,
        np.array([[3e38, -3e38], [-3e38, 3e38], [1e30, 0.0]]),
    ])  # fmt: skip
    t = mu + offsets
    t32 = torch.tensor(t, dtype=dtype)
    mu32 = torch.tensor(mu, dtype=dtype).expand_as(t32)
    got = truncated_paraboloid_pdf(t32, mu32, torch.tensor(Sigma, dtype=dtype))
    want = _paraboloid_numpy(t32.double().numpy(), mu32.double().numpy(), Sigma)
    assert torch.isfinite(got).all()
    np.testing.assert_allclose(got.double().numpy(), want, atol=1e-5)


def test_truncated_paraboloid_at_the_dtypes_edge_is_zero_not_nan():
    from attnlib.continuous.densities import truncated_paraboloid_pdf

    for dtype in (torch.float32, torch.float64):
        big = torch.finfo(dtype).max * 0.75
        t = torch.tensor([[big, big], [big, -big], [-big, 0.0]], dtype=dtype)
        Sigma = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=dtype)
        # t - mu overflows the dtype for the first two; the limit is 0
        got = truncated_paraboloid_pdf(t, -t, Sigma)
        assert got.tolist() == [0.0, 0.0, 0.0]


def test_truncated_paraboloid_gradient_matches_finite_differences(rng):
    from attnlib.continuous.densities import truncated_paraboloid_pdf

    Sigma = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
    t = torch.tensor(rng.normal(size=(5, 2)) * 0.4, dtype=torch.float64)
    mu = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda m: truncated_paraboloid_pdf(t, m, Sigma), (mu,)
    )


# ----------------------------------------------------------- seeds name `seed`
SEEDED = {
    "attnlib.continuous.experiments.alignment.monotone_alignment": ((4,), {}),
    "attnlib.continuous.experiments.digits.cluttered_digits": ((2,), {}),
    "attnlib.continuous.experiments.documents.span_documents": ((2,), {}),
    "attnlib.data.captioned_images": ((2,), {}),
    "attnlib.data.shuffled_translation": ((2,), {}),
    "attnlib.data.union_of_subspaces": ((), {}),
    "attnlib.denoise.learned.crop_batches": ((np.zeros((1, 32, 32)),), {}),
    "attnlib.lle.experiments.manifold_sample": (("swiss roll",), {"n": 50}),
    "attnlib.mux.experiments.routing.pointer_task": ((2,), {}),
    "attnlib.mux.tasks.routing_task": ((2,), {}),
    "attnlib.mux.tasks.translation_sequences": ((2,), {}),
    "attnlib.mux.tasks.weekday_task": ((2,), {}),
    "attnlib.subspace.experiments.datasets.faces": ((), {}),
    "attnlib.subspace.experiments.datasets.motion": ((), {}),
    "attnlib.symmetry.experiments.teachers.make_teacher": ((4, 3), {}),
    "attnlib.mux.experiments.runs.routing_run": ((), {"n_steps": 1}),
    "attnlib.mux.experiments.runs.pointer_run": ((), {"n_steps": 1}),
    "attnlib.mux.experiments.runs.weekday_run": ((), {"n_steps": 1}),
    "attnlib.subspace.experiments.runs.stack_run": ((), {"n_steps": 1}),
    "attnlib.lle.experiments.crossing_planes": ((), {}),
    "attnlib.training.train": (
        (torch.nn.Linear(2, 1), lambda m, b: m(b).sum(), lambda i: torch.ones(1, 2)),
        {"n_steps": 1, "progress": False},
    ),
}


def _resolve(path):
    import importlib

    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("path", sorted(SEEDED), ids=lambda p: p.rsplit(".", 1)[1])
@pytest.mark.parametrize("seed", [1.5, "3", True, -1, 2**64])
def test_a_bad_seed_is_refused_naming_seed(path, seed):
    """2^64 is one past torch's generators' range (they raise an overflow message
    that names nothing); NumPy's would take it, the seed offset's arithmetic too."""
    args, kwargs = SEEDED[path]
    with pytest.raises(ValueError, match="seed must be an integer at least 0"):
        _resolve(path)(*args, seed=seed, **kwargs)


@pytest.mark.parametrize("seed", [None, np.int64(3), 2**64 - 1])
def test_train_takes_none_numpy_integers_and_torchs_largest_seed(seed):
    args, kwargs = SEEDED["attnlib.training.train"]
    history = _resolve("attnlib.training.train")(*args, seed=seed, **kwargs)
    assert len(history) == 1  # one step taken


# ------------------------------------- the battery's mask cases, against torch's
MASK_CASES = {
    "3-D mask per sequence": dict(attn_mask=torch.zeros(2, 3, 5, dtype=torch.bool)),
    "mask of the wrong size": dict(attn_mask=torch.zeros(4, 5, dtype=torch.bool)),
    "padding mask too short": dict(
        key_padding_mask=torch.zeros(2, 4, dtype=torch.bool)
    ),
    "per-head mask": dict(attn_mask=torch.zeros(4, 3, 5, dtype=torch.bool)),
    "per-sequence 2-D mask": dict(attn_mask=torch.zeros(3, 5, dtype=torch.bool)),
}


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_the_batterys_mask_cases_are_refused_where_torchs_module_refuses(case):
    """tests/battery/specs_layers.py's mask cases: refused by us exactly where
    torch's nn.MultiheadAttention refuses them, and equal to torch's where not."""
    from attnlib.layers import MultiHeadAttention

    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    ours = MultiHeadAttention(4, 2, batch_first=True)
    ours.load_state_dict(theirs.state_dict())
    q, kv = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    try:
        want = theirs(q, kv, kv, **MASK_CASES[case])[0]
    except (RuntimeError, AssertionError):
        with pytest.raises(ValueError, match="mask must have shape"):
            ours(q, kv, kv, **MASK_CASES[case])
        return
    torch.testing.assert_close(ours(q, kv, kv, **MASK_CASES[case])[0], want)
