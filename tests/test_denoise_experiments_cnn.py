import numpy as np
import pytest
import torch
from draws import differ, equal, inits_differ, same_numbers

from attnlib.denoise.experiments.cnn import (
    SmallCNNDenoiser,
    cnn_matching,
    count_parameters,
)
from attnlib.training import train


def test_parameter_count_matches_the_formula():
    for w, k in [(1, 3), (7, 3), (16, 3), (4, 5)]:
        expected = (k * k + 1) * w + (k * k * w + 1) * w + (k * k * w + 1)
        assert count_parameters(SmallCNNDenoiser(w, k)) == expected


def test_untrained_model_is_the_identity_and_keeps_the_shape():
    img = np.random.default_rng(0).random((13, 17))
    out = SmallCNNDenoiser(5)(img)
    assert out.shape == (13, 17)
    np.testing.assert_allclose(out.detach().numpy(), img.astype(np.float32), atol=0)


def test_cnn_matching_picks_the_closest_width():
    model = cnn_matching(627)
    counts = {w: count_parameters(SmallCNNDenoiser(w)) for w in range(1, 30)}
    best = min(counts, key=lambda w: abs(counts[w] - 627))
    assert model.width == best == 7


def test_training_lowers_the_error_on_noisy_constant_images():
    g = torch.Generator().manual_seed(0)

    def batches(step):
        clean = torch.full((12, 12), 0.5)
        return clean + 0.1 * torch.randn(12, 12, generator=g), clean

    model = SmallCNNDenoiser(4)
    noisy, clean = batches(0)
    before = ((model(noisy) - clean) ** 2).mean().item()
    mse = lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()
    train(model, mse, batches, n_steps=60, lr=0.02, progress=False)
    after = ((model(noisy) - clean) ** 2).mean().item()
    assert after < 0.5 * before


@pytest.mark.parametrize(
    "kwargs, name", [({"width": 0}, "width"), ({"kernel_size": 4}, "kernel_size")]
)
def test_bad_hyper_parameters_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SmallCNNDenoiser(**kwargs)


@pytest.mark.parametrize(
    "image", [np.zeros((4, 4, 3)), np.full((5, 5), np.nan), np.zeros((1, 9))]
)
def test_bad_images_are_refused(image):
    with pytest.raises(ValueError, match="image"):
        SmallCNNDenoiser(3)(image)


def test_bad_n_params():
    with pytest.raises(ValueError, match="n_params"):
        cnn_matching(0)


def test_cnn_matching_picks_the_closest_width_for_every_budget():
    """Against the parameters PyTorch counts, for budgets between two widths' counts."""
    counts = {w: sum(p.numel() for p in SmallCNNDenoiser(w).parameters())
              for w in range(1, 40)}  # fmt: skip
    for n in range(40, 8000, 53):
        best = min(counts, key=lambda w: abs(counts[w] - n))
        assert cnn_matching(n).width == best, n


def test_baseline_run_scores_against_scikit_image_and_is_seeded():
    from scipy import ndimage
    from skimage.metrics import peak_signal_noise_ratio

    from attnlib.denoise.experiments.cnn import baseline_run

    a = baseline_run(0, n_steps=3, widths=(2,), heads=(1,), return_images=True)
    b = baseline_run(0, n_steps=3, widths=(2,), heads=(1,))
    c = baseline_run(1, n_steps=3, widths=(2,), heads=())
    img = a["images"]
    assert set(a["psnr"]) == {
        "Gaussian filter",
        "exact NLM",
        "attention, 1 head",
        "CNN, width 2",
    }
    assert a["psnr"] == b["psnr"]  # the seed fixes everything
    assert c["psnr"]["Gaussian filter"] != a["psnr"]["Gaussian filter"]  # new noise
    np.testing.assert_allclose(
        img["Gaussian filter"], ndimage.gaussian_filter(img["noisy"], 0.75)
    )
    for name, out in img.items():
        if name not in ("clean", "noisy"):
            ref = peak_signal_noise_ratio(
                img["clean"], out.astype(np.float64), data_range=1.0
            )
            np.testing.assert_allclose(a["psnr"][name], ref, rtol=1e-6)
    assert a["parameters"]["CNN, width 2"] == count_parameters(SmallCNNDenoiser(2))
    with pytest.raises(ValueError, match="seed"):
        baseline_run(-1, n_steps=1)
    with pytest.raises(ValueError, match="lr must be"):
        baseline_run(0, n_steps=1, lr=0)


def test_baseline_run_draws_noise_crops_and_initialisation_from_its_seed_alone(
    record_calls, reseed_globals
):
    """The same seed under two global states: the same numbers, noise, crops and
    initialisation; another seed: other noise on the test crop, another stream of
    training crops (and their noise), another initialisation."""
    from attnlib.denoise.experiments import cnn as denoising

    streams = record_calls(denoising, "crop_batches")
    trainings = record_calls(denoising, "train")
    seen = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        streams.clear()
        trainings.clear()
        reseed_globals(state)
        out = denoising.baseline_run(
            seed, n_steps=1, widths=(2,), heads=(), return_images=True
        )
        ((_, _, batches),) = streams
        ((args, _, _),) = trainings
        seen.append((out, batches(0), args[0].state_dict()))
    (a, crops_a, init_a), (b, crops_b, init_b), (c, crops_c, init_c) = seen
    assert same_numbers(b, a) and equal(crops_b, crops_a) and equal(init_b, init_a)
    assert not same_numbers(c["psnr"], a["psnr"])
    assert equal(c["images"]["clean"], a["images"]["clean"])  # one test crop
    assert differ(c["images"]["noisy"], a["images"]["noisy"])
    assert differ(crops_c, crops_a)  # the noisy crops and their clean ones
    assert inits_differ(init_c, init_a)
