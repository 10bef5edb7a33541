"""The battery's specs for ``attnlib.denoise``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    Spec,
    _rand,
)

MODULE = "denoise"


def specs():
    D = importlib.import_module("attnlib.denoise")

    img = lambda: _rand(8, 9).double().numpy()  # noqa: E731
    return {
        "denoise.gaussian_filter_attention": Spec(
            D.gaussian_filter_attention,
            lambda: dict(image=img(), sigma=1.0, truncate=2.0),
            {"image": "array", "sigma": "positive", "truncate": "positive"},
        ),
        "denoise.pixel_nlm": Spec(
            D.pixel_nlm,
            lambda: dict(image=img(), h=0.1),
            {"image": "array", "h": "positive"},
        ),
        "denoise.extract_patches": Spec(
            D.extract_patches,
            lambda: dict(image=img(), patch_size=3),
            {"image": "array", "patch_size": "int"},
        ),
        "denoise.patch_kernel": Spec(
            D.patch_kernel, lambda: dict(patch_size=5), {"patch_size": "int"}
        ),
        "denoise.patch_tokens": Spec(
            D.patch_tokens,
            lambda: dict(image=img(), patch_size=3, h=0.1),
            {"image": "array", "patch_size": "int", "h": "positive"},
        ),
        "denoise.nlm_attention": Spec(
            D.nlm_attention,
            lambda: dict(
                image=img(), patch_size=3, patch_distance=2, h=0.1, sigma=0.05
            ),
            {
                "image": "array",
                "patch_size": "int",
                "patch_distance": "int0",
                "h": "positive",
                "sigma": "nonneg",
            },
            optional=("patch_distance",),
        ),
        "denoise.patch_attention": Spec(
            D.patch_attention,
            lambda: dict(
                image=img(),
                pixel=(2, 3),
                patch_size=3,
                h=0.1,
                patch_distance=2,
                sigma=0.0,
            ),
            {
                "image": "array",
                "patch_size": "int",
                "h": "positive",
                "patch_distance": "int0",
                "sigma": "nonneg",
            },
            optional=("patch_distance",),
            extra=[
                ("pixel outside", lambda a: a | dict(pixel=(20, 3)), INVALID, "pixel"),
                ("pixel a string", lambda a: a | dict(pixel="ab"), INVALID, "pixel"),
            ],
        ),
        "denoise.nonlocal_means": Spec(
            D.nonlocal_means,
            lambda: dict(
                image=img(), patch_size=3, patch_distance=2, h=0.1, sigma=0.05
            ),
            {
                "image": "array",
                "patch_size": "int",
                "patch_distance": "int0",
                "h": "positive",
                "sigma": "nonneg",
            },
            extra=[
                (
                    "h 1e-300 on a constant block",
                    lambda a: a | dict(image=a["image"] * 0 + 0.5, h=1e-300),
                    INVALID,
                    "h",
                )
            ],
        ),
        "denoise.PatchAttentionDenoiser": Spec(
            lambda patch_size, h, num_heads, patch_distance, image: (
                D.PatchAttentionDenoiser(
                    patch_size, h, num_heads, patch_distance=patch_distance
                )(image)
            ),
            lambda: dict(
                patch_size=3, h=0.1, num_heads=2, patch_distance=2, image=_rand(6, 7)
            ),
            {
                "patch_size": "int",
                "h": "positive",
                "num_heads": "int",
                "patch_distance": "int0",
                "image": "array",
            },
            optional=("patch_distance",),
        ),
        "denoise.crop_batches": Spec(
            lambda images, crop, noise: D.crop_batches(images, crop, noise)(0),
            lambda: dict(images=[img(), img()], crop=4, noise=0.1),
            {"crop": "int", "noise": "nonneg"},
            extra=[
                ("no images", lambda a: a | dict(images=[]), INVALID, "images"),
                (
                    "NaN image",
                    lambda a: a | dict(images=[np.full((8, 9), np.nan)]),
                    INVALID,
                    "images",
                ),
                (
                    "1-D image",
                    lambda a: a | dict(images=[np.ones(8)]),
                    INVALID,
                    "images",
                ),
            ],
        ),
        "denoise.psnr": Spec(
            D.psnr,
            lambda: dict(clean=img(), estimate=img() * 0.9, data_range=1.0),
            {"clean": "array", "estimate": "array", "data_range": "positive"},
            group=("clean", "estimate"),
            extra=[
                (
                    "shapes differ",
                    lambda a: a | dict(estimate=a["estimate"][:-1]),
                    INVALID,
                    "estimate",
                )
            ],
        ),
    }
