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
    "dtype", [torch.int64, torch.uint8, torch.int32, torch.int16, torch.int8,
              torch.bool]  # fmt: skip
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
