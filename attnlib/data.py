"""Generated data shared by the chapters (nothing is downloaded).

Each generator takes a ``seed`` and returns the same data for the same seed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .utils import check_int, check_positive
from .utils.validation import SEED_MAX

__all__ = [
    "TranslationPairs",
    "shuffled_translation",
    "CaptionedImages",
    "captioned_images",
    "UnionOfSubspaces",
    "union_of_subspaces",
]


class TranslationPairs(NamedTuple):
    """Sentence pairs: ``tgt[b, perm[b, j]]`` is the translation of ``src[b, j]``."""

    src: torch.Tensor  # (n_pairs, length, dim): source-language word embeddings
    # (n_pairs, length, dim): target-language word embeddings, shuffled
    tgt: torch.Tensor
    perm: torch.Tensor  # (n_pairs, length): where each source word's translation sits
    src_words: torch.Tensor  # (n_pairs, length): word ids of the source sentence

    def take(self, index) -> TranslationPairs:
        """The pairs selected by ``index`` (a slice, or integer indices).

        E.g. a test split. Integer indices may live on any device: they are moved to
        the pairs' (as a training loop moves a batch of indices to the model's).
        """
        if isinstance(index, torch.Tensor):
            index = index.to(self.src.device)
        return TranslationPairs(*(field[index] for field in self))

    def to(self, device) -> TranslationPairs:
        """The same pairs on ``device``."""
        return TranslationPairs(*(field.to(device) for field in self))


def shuffled_translation(
    n_pairs: int,
    length: int = 6,
    vocab_size: int = 50,
    dim: int = 16,
    *,
    noise: float = 0.1,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> TranslationPairs:
    """A toy "translation" task whose alignment is a permutation.

    Each word has an embedding in the source language and another in the target
    language, related by a hidden rotation plus noise. A target sentence holds the
    translations of the source words in a shuffled order, so attention from source words
    (queries) to target words (keys) should recover the permutation once the two spaces
    are aligned.

    Parameters
    ----------
    n_pairs : int
        Number of sentence pairs.
    length : int
        Words per sentence.
    vocab_size : int
        Words in the vocabulary, at least ``length`` (a sentence has distinct words).
    dim : int
        Size of the word embeddings.
    noise : float
        Standard deviation of the noise between a word's two embeddings (≥ 0).
    seed : int
        Seeds the generator (≥ 0).
    device : str or torch.device, optional
        Where the tensors live (default: the CPU). They are drawn on the CPU and moved,
        so a seed gives the same pairs on every device.

    Returns
    -------
    TranslationPairs
        ``src`` and ``tgt`` ``(n_pairs, length, dim)``, ``perm`` and ``src_words``
        ``(n_pairs, length)``.

    Implements
    ----------
    No equation: synthetic data, whose alignment is known, for chapter 01's
    attention heatmaps.
    """
    n_pairs, length = check_int(n_pairs, "n_pairs"), check_int(length, "length")
    vocab_size = check_int(vocab_size, "vocab_size", minimum=length)
    dim, noise = check_int(dim, "dim"), check_positive(noise, "noise", allow_zero=True)
    g = torch.Generator().manual_seed(
        check_int(seed, "seed", minimum=0, maximum=SEED_MAX)
    )
    src_vocab = torch.randn(vocab_size, dim, generator=g)
    rotation, _ = torch.linalg.qr(torch.randn(dim, dim, generator=g))
    tgt_vocab = src_vocab @ rotation + noise * torch.randn(vocab_size, dim, generator=g)
    words = torch.stack(
        [torch.randperm(vocab_size, generator=g)[:length] for _ in range(n_pairs)]
    )
    perm = torch.stack([torch.randperm(length, generator=g) for _ in range(n_pairs)])
    tgt_words = torch.empty_like(words).scatter_(1, perm, words)
    pairs = TranslationPairs(src_vocab[words], tgt_vocab[tgt_words], perm, words)
    return pairs if device is None else pairs.to(device)


COLOURS = {
    "red": (0.84, 0.37, 0.0),
    "blue": (0.0, 0.45, 0.70),
    "green": (0.0, 0.62, 0.45),
    "yellow": (0.94, 0.89, 0.26),
}
SHAPES = ("square", "disc", "triangle")


class CaptionedImages(NamedTuple):
    """Synthetic image–caption pairs for grounding words to regions.

    ``word_ids[b, j]`` is the vocabulary index of word j of caption b (vocabulary:
    ``vocabulary``); ``region_features[b, i]`` describes box i; ``target[b, j]`` is the
    box that word j names; ``images[b]`` is the rendered RGB image and ``boxes[b, i]``
    the box ``(row0, col0, row1, col1)`` in pixels.
    """

    images: np.ndarray  # (n, size, size, 3)
    boxes: np.ndarray  # (n, n_objects, 4)
    region_features: torch.Tensor  # (n, n_objects, feature_dim)
    word_ids: torch.Tensor  # (n, 2 * n_objects)
    target: torch.Tensor  # (n, 2 * n_objects)
    vocabulary: tuple[str, ...]

    def take(self, index) -> CaptionedImages:
        """The pairs selected by ``index`` (a slice, or integer indices).

        E.g. a test split. Integer indices may live on any device (a training loop
        moves a batch of indices to the model's): each field is indexed where it lives,
        the NumPy images and boxes on the host.
        """

        def pick(field):
            if not isinstance(index, torch.Tensor):
                return field[index]
            if isinstance(field, torch.Tensor):
                return field[index.to(field.device)]
            return field[index.cpu().numpy()]

        return CaptionedImages(*(pick(field) for field in self[:-1]), self.vocabulary)


def _draw(image: np.ndarray, shape: str, colour, r0: int, c0: int, side: int) -> None:
    rr, cc = np.mgrid[:side, :side]
    if shape == "square":
        inside = np.ones((side, side), bool)
    elif shape == "disc":
        inside = (rr - side / 2 + 0.5) ** 2 + (cc - side / 2 + 0.5) ** 2 <= (
            side / 2
        ) ** 2
    else:  # triangle with its apex up
        inside = np.abs(cc - side / 2 + 0.5) <= rr / 2
    image[r0 : r0 + side, c0 : c0 + side][inside] = colour


def captioned_images(
    n: int,
    n_objects: int = 3,
    *,
    size: int = 64,
    feature_dim: int = 24,
    noise: float = 0.3,
    seed: int = 0,
) -> CaptionedImages:
    """Images of coloured shapes with captions.

    Captions such as "red square blue disc green triangle".

    The objects of one image have distinct colours and distinct shapes, so each caption
    word names exactly one box. Region features are what a detector's CNN might give: a
    fixed random linear map of the box's colour and shape plus noise, so a learned
    projection is needed to match words with regions.

    Parameters
    ----------
    n : int
        Number of images.
    n_objects : int
        Objects per image (at most 3: their shapes are distinct).
    size : int
        Side of the square images in pixels; large enough for ``n_objects`` boxes.
    feature_dim : int
        Size of the region features.
    noise : float
        Standard deviation of the noise on the region features (≥ 0).
    seed : int
        Seeds the generator (≥ 0).

    Returns
    -------
    CaptionedImages
        ``images`` ``(n, size, size, 3)``, ``boxes`` ``(n, n_objects, 4)``,
        ``region_features`` ``(n, n_objects, feature_dim)``, ``word_ids`` and ``target``
        ``(n, 2 n_objects)``, and the ``vocabulary``.

    Implements
    ----------
    No equation: synthetic data for chapter 01's attention over image regions.
    """
    n = check_int(n, "n")
    n_objects = check_int(n_objects, "n_objects", maximum=len(SHAPES))
    size, feature_dim = (
        check_int(size, "size", minimum=4),
        check_int(feature_dim, "feature_dim"),
    )
    noise = check_positive(noise, "noise", allow_zero=True)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    colours = list(COLOURS)
    vocabulary = tuple(colours) + SHAPES
    mixing = rng.standard_normal((len(vocabulary), feature_dim)) / np.sqrt(2)
    side = size // 4
    images = np.ones((n, size, size, 3))
    boxes = np.zeros((n, n_objects, 4), int)
    features = np.zeros((n, n_objects, feature_dim))
    word_ids = np.zeros((n, 2 * n_objects), int)
    target = np.zeros((n, 2 * n_objects), int)
    cells = [
        (r, c)
        for r in range(0, size - side, side + 2)
        for c in range(0, size - side, side + 2)
    ]
    if len(cells) < n_objects:
        raise ValueError(
            f"size={size} leaves room for {len(cells)} objects, fewer than "
            f"n_objects={n_objects}"
        )
    for b in range(n):
        cs = rng.choice(len(colours), n_objects, replace=False)
        ss = rng.choice(len(SHAPES), n_objects, replace=False)
        spots = rng.choice(len(cells), n_objects, replace=False)
        for i, (ci, si, spot) in enumerate(zip(cs, ss, spots)):
            r0, c0 = cells[spot]
            _draw(images[b], SHAPES[si], COLOURS[colours[ci]], r0, c0, side)
            boxes[b, i] = (r0, c0, r0 + side, c0 + side)
            features[b, i] = (
                mixing[ci]
                + mixing[len(colours) + si]
                + noise * rng.standard_normal(feature_dim)
            )
        # The caption names the objects in a random order: "<colour> <shape>" for each.
        for j, i in enumerate(rng.permutation(n_objects)):
            word_ids[b, 2 * j : 2 * j + 2] = (cs[i], len(colours) + ss[i])
            target[b, 2 * j : 2 * j + 2] = i
    as_t = lambda a: torch.as_tensor(a, dtype=torch.get_default_dtype())  # noqa: E731
    return CaptionedImages(
        images,
        boxes,
        as_t(features),
        torch.as_tensor(word_ids),
        torch.as_tensor(target),
        vocabulary,
    )


class UnionOfSubspaces(NamedTuple):
    """Points drawn from a union of linear subspaces.

    ``X[i]`` lies (near) subspace ``labels[i]``.
    """

    X: np.ndarray  # (n_subspaces * n_per_subspace, ambient_dim), unit-norm rows
    labels: np.ndarray  # (n_samples,) subspace index of each point
    bases: np.ndarray  # (n_subspaces, ambient_dim, dim) orthonormal bases


def union_of_subspaces(
    n_subspaces: int = 5,
    dim: int = 6,
    ambient_dim: int = 9,
    n_per_subspace: int = 100,
    noise: float = 0.0,
    seed: int = 0,
) -> UnionOfSubspaces:
    """Unit-norm points on random subspaces (the synthetic protocol of You et al. 2016).

    Each subspace has a uniformly random orthonormal basis; each point is a standard
    Gaussian combination of its basis vectors, plus isotropic noise of standard
    deviation ``noise``, scaled to unit norm. Points are grouped by subspace (labels
    sorted).

    Parameters
    ----------
    n_subspaces : int
        Number of subspaces.
    dim : int
        Dimension of each subspace, at most ``ambient_dim``.
    ambient_dim : int
        Dimension of the space they live in.
    n_per_subspace : int
        Points drawn on each subspace.
    noise : float
        Standard deviation of the isotropic noise (≥ 0).
    seed : int
        Seeds the generator (≥ 0).

    Returns
    -------
    UnionOfSubspaces
        ``X`` ``(n_subspaces · n_per_subspace, ambient_dim)``, ``labels``
        ``(n_samples,)`` and ``bases`` ``(n_subspaces, ambient_dim, dim)``.

    Implements
    ----------
    The synthetic protocol of You et al. (2016), §5.1 (random subspaces of one
    dimension, unit-norm points). The self-expression paper runs no
    experiment; its §5 only describes the methods that this protocol benchmarks.
    """
    n_subspaces, n_per = (
        check_int(n_subspaces, "n_subspaces"),
        check_int(n_per_subspace, "n_per_subspace"),
    )
    ambient_dim = check_int(ambient_dim, "ambient_dim")
    dim = check_int(dim, "dim", maximum=ambient_dim)
    noise = check_positive(noise, "noise", allow_zero=True)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    bases = np.linalg.qr(rng.standard_normal((n_subspaces, ambient_dim, dim)))[0]
    X = np.einsum(
        "sDd,snd->snD", bases, rng.standard_normal((n_subspaces, n_per, dim))
    ).reshape(-1, ambient_dim)
    X += noise * rng.standard_normal(X.shape)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return UnionOfSubspaces(X, np.repeat(np.arange(n_subspaces), n_per), bases)
