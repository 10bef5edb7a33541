import numpy as np
import pytest
import torch

from attnlib.data import COLOURS, captioned_images, shuffled_translation


def test_shuffled_translation_aligns_through_the_hidden_rotation():
    d = shuffled_translation(20, length=5, vocab_size=30, dim=8, noise=0.0, seed=1)
    assert d.src.shape == d.tgt.shape == (20, 5, 8) and d.perm.shape == (20, 5)
    aligned = torch.gather(d.tgt, 1, d.perm[..., None].expand_as(d.tgt))
    # Without noise, the target embedding is an orthogonal map of the source embedding.
    R = torch.linalg.lstsq(d.src.reshape(-1, 8), aligned.reshape(-1, 8)).solution
    torch.testing.assert_close(R.T @ R, torch.eye(8), atol=1e-4, rtol=0)
    assert all(sorted(p.tolist()) == list(range(5)) for p in d.perm)


def test_generators_are_deterministic_and_splittable():
    a, b = shuffled_translation(10, seed=3), shuffled_translation(10, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert a.take(slice(2, 5)).src.shape[0] == 3
    c, e = captioned_images(4, seed=3), captioned_images(4, seed=3)
    assert np.array_equal(c.images, e.images) and torch.equal(
        c.region_features, e.region_features
    )
    assert (
        c.take([0, 2]).word_ids.shape[0] == 2
        and c.take([0, 2]).vocabulary == c.vocabulary
    )


def test_captioned_images_target_names_the_right_box():
    d = captioned_images(6, n_objects=3, seed=0)
    colours, shapes = d.vocabulary[:4], d.vocabulary[4:]
    for b in range(6):
        for j, _word in enumerate(d.word_ids[b].tolist()):
            r0, c0, r1, c1 = d.boxes[b, d.target[b, j]]
            pixels = d.images[b, r0:r1, c0:c1].reshape(-1, 3)
            assert (pixels != 1).any(axis=1).sum() > 0, (
                "the named box holds a drawn object"
            )
        # each word appears once; each box is named by one colour and one shape
        assert sorted(np.bincount(d.target[b].numpy()).tolist()) == [2, 2, 2]
    assert len(colours) == 4 and len(shapes) == 3


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: shuffled_translation(0), "n_pairs must be"),
        (
            lambda: shuffled_translation(5, length=10, vocab_size=5),
            "vocab_size must be",
        ),
        (lambda: shuffled_translation(5, noise=-1.0), "noise must be"),
        (lambda: captioned_images(3, n_objects=4), "n_objects must be"),
        (lambda: captioned_images(0), "n must be"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_captioned_images_colour_words_name_a_box_of_that_colour():
    """Word j's target box holds the colour word j names (the centre pixel of every
    shape is inside it): an independent read of the rendered pixels."""
    d = captioned_images(5, n_objects=3, seed=2)
    for b in range(5):
        for j in range(0, 6, 2):  # colour words sit at even positions
            r0, c0, r1, c1 = d.boxes[b, d.target[b, j]]
            centre = d.images[b, (r0 + r1) // 2, (c0 + c1) // 2]
            colour = COLOURS[d.vocabulary[d.word_ids[b, j]]]
            np.testing.assert_allclose(centre, colour)
