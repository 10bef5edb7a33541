"""Tests of attnlib.denoise against SciPy, scikit-image and plain NumPy restatements."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage
from skimage.restoration import denoise_nl_means

from attnlib import denoise as dn
from attnlib.training import train


def nlm_reference(img, s=7, d=11, h=0.1, sigma=0.0):
    """Slow-mode NLM pixel by pixel in float64, exact exponential, no cut-offs."""
    img = np.asarray(img, np.float64)
    grey = img.ndim == 2
    if grey:
        img = img[..., None]
    s = s + 1 - s % 2
    r = s // 2
    H, W, C = img.shape
    P = np.pad(img, ((r, r), (r, r), (0, 0)), mode="reflect")
    t = np.arange(-r, r + 1)
    g = (
        np.exp(-(t[:, None] ** 2 + t[None] ** 2) / (2 * ((s - 1) / 4) ** 2))
        if s > 1
        else np.ones((1, 1))
    )
    g = g / (C * g.sum() * h * h)
    out = np.zeros_like(img)
    for y in range(H):
        for x in range(W):
            p = P[y : y + s, x : x + s]
            num, den = np.zeros(C), 0.0
            for yy in range(max(0, y - d), min(H, y + d + 1)):
                for xx in range(max(0, x - d), min(W, x + d + 1)):
                    dist = max(
                        np.sum(
                            g[..., None]
                            * ((p - P[yy : yy + s, xx : xx + s]) ** 2 - 2 * sigma**2)
                        ),
                        0.0,
                    )
                    num += np.exp(-dist) * img[yy, xx]
                    den += np.exp(-dist)
            out[y, x] = num / den
    return out[..., 0] if grey else out


# ---------------------------------------------------------------- Gaussian filter


@pytest.mark.parametrize("sigma", [0.8, 1.5])
@pytest.mark.parametrize("shape", [(24, 30), (20, 22, 3)])
def test_gaussian_filter_attention_matches_scipy_in_the_interior(rng, sigma, shape):
    img = rng.random(shape)
    out = dn.gaussian_filter_attention(img, sigma)
    ref = ndimage.gaussian_filter(img, sigma if len(shape) == 2 else (sigma, sigma, 0))
    r = int(4 * sigma + 0.5)
    np.testing.assert_allclose(out[r:-r, r:-r], ref[r:-r, r:-r], atol=1e-6)


def test_gaussian_filter_attention_keeps_tensor_dtype(rng):
    img = torch.tensor(rng.random((10, 12)), dtype=torch.float32)
    out = dn.gaussian_filter_attention(img, 1.0)
    assert (
        isinstance(out, torch.Tensor)
        and out.dtype == torch.float32
        and out.shape == img.shape
    )


# ---------------------------------------------------------------- pixel NLM and patches


def test_pixel_nlm_matches_numpy_softmax(rng, np_softmax):
    img = rng.random((6, 7, 3))
    y = img.reshape(-1, 3)
    w = np_softmax(-((y[:, None] - y[None]) ** 2).sum(-1) / (2 * 0.2**2), axis=1)
    np.testing.assert_allclose(
        dn.pixel_nlm(img, 0.2), (w @ y).reshape(img.shape), atol=1e-12
    )


@pytest.mark.parametrize("patch_size, expected", [(3, 3), (4, 5)])
def test_extract_patches_matches_numpy_windows(rng, patch_size, expected):
    img = rng.random((8, 9, 2))
    r = expected // 2
    padded = np.pad(img, ((r, r), (r, r), (0, 0)), mode="reflect")
    # (H, W, C, s, s)
    win = np.lib.stride_tricks.sliding_window_view(
        padded, (expected, expected), axis=(0, 1)
    )
    ref = win.transpose(0, 1, 3, 4, 2).reshape(8 * 9, -1)
    np.testing.assert_allclose(dn.extract_patches(img, patch_size).numpy(), ref)


def test_patch_attention_is_a_distribution_peaked_at_the_query(rng):
    img = rng.random((12, 14))
    w = dn.patch_attention(img, (4, 5), patch_size=3, h=0.2, patch_distance=2)
    assert torch.isclose(w.sum(), torch.tensor(1.0, dtype=w.dtype))
    assert int((w > 0).sum()) == 25 and w.argmax().item() == 4 * 14 + 5
    full = dn.patch_attention(img, (4, 5), patch_size=3, h=0.2)
    assert (full > 0).all()


# ---------------------------------------------------------------- exact NLM


@pytest.mark.parametrize(
    "shape, s, d, h, sigma",
    [
        ((11, 13), 5, 3, 0.2, 0.0),
        ((11, 13), 4, 2, 0.3, 0.05),  # even patch size: rounded up like scikit-image
        ((9, 10, 3), 3, 4, 0.25, 0.1),
        ((4, 25), 7, 6, 0.2, 0.0),  # window and patches larger than the image's height
        ((8, 9), 1, 2, 0.1, 0.0),
    ],
)
def test_nonlocal_means_equals_float64_restatement(rng, shape, s, d, h, sigma):
    img = rng.random(shape)
    ref = nlm_reference(img, s, d, h, sigma)
    for kw in ({}, {"strip_rows": 3}):
        np.testing.assert_allclose(
            dn.nonlocal_means(img, s, d, h, sigma, **kw), ref, rtol=0, atol=1e-10
        )


@pytest.mark.parametrize("threads", [2, 3])
def test_nonlocal_means_worker_threads_share_the_strips(rng, threads):
    img = rng.random((12, 14, 2))
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out = dn.nonlocal_means(img, 3, 4, 0.3, 0.05, strip_rows=2)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    np.testing.assert_allclose(
        out, nlm_reference(img, 3, 4, 0.3, 0.05), rtol=0, atol=1e-10
    )


def test_nonlocal_means_restores_the_callers_thread_count(rng):
    # Two strips give two workers: a count of 3 must survive the call (it used to become
    # 2).
    img = rng.random((8, 9))
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        out = dn.nonlocal_means(img, 3, 2, 0.3, strip_rows=4)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    np.testing.assert_allclose(out, nlm_reference(img, 3, 2, 0.3), rtol=0, atol=1e-10)


def test_global_window_is_the_whole_image(rng):
    img = rng.random((7, 9))
    ref = nlm_reference(img, 3, 100, 0.2)
    np.testing.assert_allclose(
        dn.nonlocal_means(img, 3, h=0.2, window=None), ref, atol=1e-10
    )
    np.testing.assert_allclose(dn.nlm_attention(img, 3, None, 0.2), ref, atol=1e-10)


@pytest.mark.parametrize("shape, sigma", [((10, 12), 0.0), ((9, 8, 3), 0.05)])
def test_attention_formulation_equals_fast_path(rng, shape, sigma):
    img = rng.random(shape)
    np.testing.assert_allclose(
        dn.nlm_attention(img, 5, 3, 0.2, sigma),
        dn.nonlocal_means(img, 5, 3, 0.2, sigma),
        atol=1e-10,
    )


@pytest.mark.parametrize("channel_axis, shape", [(None, (32, 32)), (-1, (24, 24, 3))])
def test_nonlocal_means_close_to_scikit_image_slow_mode(channel_axis, shape):
    # scikit-image's slow mode uses an approximate exponential and drops weights below
    # about e^-5; the exact result differs from it by about 1e-2 at most.
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[: shape[0], : shape[1]] / shape[0]
    clean = 0.5 + 0.3 * np.sin(6 * yy) * np.cos(4 * xx)
    if channel_axis is not None:
        clean = np.stack([clean, clean**2, 1 - clean], -1)
    noisy = clean + 0.05 * rng.standard_normal(clean.shape)
    ours = dn.nonlocal_means(noisy, 5, 4, 0.08)
    theirs = denoise_nl_means(
        noisy, 5, 4, 0.08, fast_mode=False, channel_axis=channel_axis
    )
    assert np.abs(ours - theirs).max() < 2e-2
    assert np.abs(ours - theirs).mean() < 2e-3


def test_float32_and_tensor_inputs_keep_type(rng):
    img = rng.random((12, 12)).astype(np.float32)
    out = dn.nonlocal_means(img, 3, 2, 0.2)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, nlm_reference(img, 3, 2, 0.2), atol=1e-5)
    t = dn.nonlocal_means(torch.tensor(img, dtype=torch.float64), 3, 2, 0.2)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float64
    # runs in float32
    half = dn.nonlocal_means(torch.tensor(img, dtype=torch.float16), 3, 2, 0.2)
    assert half.dtype == torch.float16
    np.testing.assert_allclose(half.numpy(), nlm_reference(img, 3, 2, 0.2), atol=2e-3)


@settings(max_examples=25, deadline=None)
@given(
    h=st.floats(0.05, 1.0),
    s=st.integers(1, 5),
    d=st.integers(0, 4),
    seed=st.integers(0, 2**16),
    level=st.floats(-2, 2),
)
def test_nlm_is_a_convex_combination(h, s, d, seed, level):
    img = np.random.default_rng(seed).random((7, 8))
    out = dn.nonlocal_means(img, s, d, h)
    assert out.min() >= img.min() - 1e-12 and out.max() <= img.max() + 1e-12
    np.testing.assert_allclose(
        dn.nonlocal_means(np.full((5, 6), level), s, d, h), level, atol=1e-12
    )


# ---------------------------------------------------------------- learned NLM


@pytest.mark.parametrize("num_heads, positional", [(1, False), (3, True)])
def test_denoiser_starts_as_nonlocal_means(rng, num_heads, positional):
    img = rng.random((10, 11))
    model = dn.PatchAttentionDenoiser(
        5, 0.2, num_heads, positional=positional, patch_distance=3
    ).double()
    out = model(torch.tensor(img))
    # Extra heads start at float32-rounded rotations, exact to about 1e-7.
    np.testing.assert_allclose(
        out.detach().numpy(),
        dn.nonlocal_means(img, 5, 3, 0.2),
        atol=1e-10 if num_heads == 1 else 1e-5,
    )
    global_model = dn.PatchAttentionDenoiser(3, 0.2, patch_distance=None).double()
    np.testing.assert_allclose(
        global_model(torch.tensor(img)).detach().numpy(),
        dn.nlm_attention(img, 3, None, 0.2),
        atol=1e-10,
    )


def test_denoiser_learns(rng):
    clean = torch.tensor(
        np.kron(rng.random((3, 3)), np.ones((4, 4))), dtype=torch.float32
    )
    noisy = clean + 0.1 * torch.randn(
        clean.shape, generator=torch.Generator().manual_seed(0)
    )
    model = dn.PatchAttentionDenoiser(3, 0.05, num_heads=2, patch_distance=3)
    history = train(
        model,
        lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
        [(noisy, clean)],
        n_steps=20,
        lr=0.05,
        progress=False,
    )
    assert history[-1] < 0.8 * history[0]


def test_heads_diverge_during_training(rng):
    clean = torch.tensor(rng.random((8, 8)), dtype=torch.float32)
    model = dn.PatchAttentionDenoiser(
        3, 0.1, num_heads=2, positional=True, patch_distance=2
    )
    train(
        model,
        lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
        [(clean + 0.1, clean)],
        n_steps=3,
        lr=0.05,
        progress=False,
    )
    assert not torch.allclose(model.log_h_scale[0], model.log_h_scale[1])
    assert model.pos_weight.abs().max() > 0


def test_denoiser_colour_and_channel_check(rng):
    model = dn.PatchAttentionDenoiser(3, 0.2, channels=3, patch_distance=2)
    assert model(rng.random((6, 7, 3))).shape == (6, 7, 3)
    with pytest.raises(ValueError, match=r"image must be \(H, W, 3\)"):
        model(rng.random((6, 7)))


# ---------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda img: dn.nonlocal_means(img[0]), "image"),
        (lambda img: dn.nonlocal_means(img[None, ..., None]), "image"),
        (lambda img: dn.nonlocal_means(np.where(img > 0.5, np.nan, img)), "image"),
        (lambda img: dn.nonlocal_means(img, h=-0.1), "h must be"),
        (lambda img: dn.nonlocal_means(img, patch_size=0), "patch_size"),
        (lambda img: dn.nonlocal_means(img, patch_distance=-1), "patch_distance"),
        (lambda img: dn.nonlocal_means(img, sigma=-1.0), "sigma"),
        (lambda img: dn.nonlocal_means(img, window="disc"), "window"),
        (lambda img: dn.nonlocal_means(img, strip_rows=0), "strip_rows"),
        (lambda img: dn.nlm_attention(img, h=0.0), "h must be"),
        (lambda img: dn.gaussian_filter_attention(img, 0.0), "sigma"),
        (lambda img: dn.gaussian_filter_attention(img[0], 1.0), "image"),
        (lambda img: dn.pixel_nlm(img, -1.0), "h must be"),
        (lambda img: dn.pixel_nlm(np.full((3, 3), np.inf), 1.0), "image"),
        (lambda img: dn.extract_patches(img, 0), "patch_size"),
        (lambda img: dn.patch_attention(img, (10, 0)), "pixel"),
        (lambda img: dn.patch_attention(img, 3), "pixel"),
        (lambda img: dn.PatchAttentionDenoiser(num_heads=0), "num_heads"),
        (lambda img: dn.PatchAttentionDenoiser(h=-1.0), "h must be"),
    ],
)
def test_bad_inputs_raise(call, match):
    img = np.random.default_rng(0).random((6, 7))
    with pytest.raises(ValueError, match=match):
        call(img)


def test_psnr_matches_formula(rng):
    a, b = rng.random((5, 5)), rng.random((5, 5))
    assert dn.psnr(a, b) == pytest.approx(10 * np.log10(1 / np.mean((a - b) ** 2)))


# ----------------------------------------------------- the denoiser as a PyTorch module
@pytest.mark.parametrize("positional", [False, True])
def test_denoiser_gradcheck_in_the_image(positional):
    """Reflect padding stays in PyTorch: gradients reach the image via its border."""
    model = dn.PatchAttentionDenoiser(
        3, 0.3, 2, positional=positional, patch_distance=2
    ).double()
    x = torch.rand(
        5,
        6,
        dtype=torch.float64,
        generator=torch.Generator().manual_seed(0),
        requires_grad=True,
    )
    assert torch.autograd.gradcheck(model, (x,))
    big_pad = dn.PatchAttentionDenoiser(
        7, 0.3, patch_distance=None
    ).double()  # pad 3 > 2 rows
    x = torch.rand(
        2,
        4,
        dtype=torch.float64,
        generator=torch.Generator().manual_seed(1),
        requires_grad=True,
    )
    assert torch.autograd.gradcheck(big_pad, (x,))


def test_extract_patches_pads_like_numpy_reflect(rng):
    img = rng.random((3, 5))
    for s in (3, 5, 9):  # a pad of 4 is larger than the 3 rows: repeated reflection
        r = s // 2
        padded = np.pad(img, r, mode="reflect")
        expected = np.lib.stride_tricks.sliding_window_view(padded, (s, s)).reshape(
            15, s * s
        )
        np.testing.assert_array_equal(dn.extract_patches(img, s).numpy(), expected)


def test_denoiser_takes_batches_and_keeps_dtype():
    model = dn.PatchAttentionDenoiser(3, 0.2, 2, patch_distance=2).double()
    x = torch.rand(3, 6, 7, dtype=torch.float64)
    out = model(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out[1], model(x[1]))
    assert model(x[:0]).shape == (0, 6, 7)
    colour = dn.PatchAttentionDenoiser(3, 0.2, channels=3, patch_distance=2).double()
    xc = torch.rand(2, 6, 7, 3, dtype=torch.float64)
    torch.testing.assert_close(colour(xc)[0], colour(xc[0]))
    with pytest.raises(
        ValueError, match="image must have the module's dtype torch.float64"
    ):
        model(x.float())
    with pytest.raises(
        ValueError, match=r"image must be \(H, W, 3\) or \(B, H, W, 3\)"
    ):
        colour(torch.rand(2, 6, 7, 2, dtype=torch.float64))
    assert (
        model(np.random.default_rng(0).random((6, 7)).astype(np.float32)).dtype
        == torch.float64
    )
    assert "patch_size=3, h=0.2, num_heads=2" in repr(model)


# --------------------------------------- learned parameters in use (mutation campaign)
def test_denoiser_heads_use_their_learned_bandwidth_and_mixture(rng):
    """Head i is NLM with bandwidth h·exp(log_h_scale[i]); heads mix by softmax(mix)."""
    img = rng.random((7, 8))
    model = dn.PatchAttentionDenoiser(3, 0.2, 2, patch_distance=2).double()
    scales, mix = np.array([np.log(2.0), -0.3]), np.array([0.4, -0.5])
    with torch.no_grad():
        model.log_h_scale.copy_(torch.from_numpy(scales))
        model.mix.copy_(torch.from_numpy(mix))
    weights = np.exp(mix) / np.exp(mix).sum()
    expected = sum(
        w * nlm_reference(img, 3, 2, 0.2 * np.exp(s)) for w, s in zip(weights, scales)
    )
    out = model(torch.tensor(img)).detach().numpy()
    # Head 1 starts at a float32-rounded rotation, exact to about 1e-7.
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_denoiser_positional_score_is_minus_the_scaled_squared_distance(rng):
    """With one-pixel patches the score is -(I_i - I_j)²/h² - w |x_i - x_j|² / (H W)."""
    img = rng.random((4, 5))
    model = dn.PatchAttentionDenoiser(1, 0.3, positional=True, patch_distance=None)
    model = model.double()
    with torch.no_grad():
        model.pos_weight.fill_(7.0)
    rows, cols = np.divmod(np.arange(20), 5)
    pos_sq = (rows[:, None] - rows) ** 2 + (cols[:, None] - cols) ** 2
    pix = img.ravel()
    scores = -((pix[:, None] - pix) ** 2) / 0.09 - 7.0 * pos_sq / 20
    weights = np.exp(scores - scores.max(1, keepdims=True))
    expected = (weights @ pix / weights.sum(1)).reshape(4, 5)
    out = model(torch.tensor(img)).detach().numpy()
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_gaussian_filter_window_rounds_like_scipy(rng):
    """The window's radius is round(truncate · σ), as in SciPy: σ = 0.9 gives 4, not 3
    (the weight at distance 4, e^-9.9 of the centre's, is visible at atol 1e-7)."""
    img = rng.random((20, 21))
    out = dn.gaussian_filter_attention(img, 0.9)
    ref = ndimage.gaussian_filter(img, 0.9)
    np.testing.assert_allclose(out[4:-4, 4:-4], ref[4:-4, 4:-4], atol=1e-7)


def test_nlm_attention_checks_its_image_once(check_calls):
    # The image is checked by _as_image at the boundary; patches, tokens and the
    # chunked attention calls trust it.
    image = np.random.default_rng(0).random((9, 8, 2))
    out = dn.nlm_attention(image, patch_size=3, patch_distance=2, h=0.3)
    assert out.shape == image.shape and np.isfinite(out).all()
    scans = [(c.where, c.helper) for c in check_calls if "image" in c.names]
    assert scans == [("attnlib.denoise.common", "as_tensor")]


def test_patch_tokens_at_a_tiny_h_stay_finite_or_are_refused():
    """Issue 52: h·h underflowed for h = 1e-30 and every token was infinite (attention()
    refuses the same temperature). Now the tokens are finite and their distances are
    still NLM's patch distance over h² (checked against a float64 restatement, scaled by
    h); an h whose inverse overflows the dtype is refused, naming h."""
    from attnlib.denoise.filters import patch_kernel, patch_tokens

    img = np.random.default_rng(0).random((6, 7)).astype(np.float32)
    ref = patch_tokens(img.astype(np.float64), 3, h=1.0)
    tok = patch_tokens(img, 3, h=1e-30)
    assert torch.isfinite(tok).all()
    np.testing.assert_allclose(tok.double().numpy() * 1e-30, ref.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="h=1e-40 is too small"):
        patch_tokens(img, 3, h=1e-40)
    assert torch.isfinite(patch_tokens(img.astype(np.float64), 3, h=1e-40)).all()
    with pytest.raises(ValueError, match="dtype must be a floating"):
        patch_kernel(5, dtype=torch.int64)
    assert patch_kernel(5, dtype=torch.float64).dtype == torch.float64
