"""Chapter 05's two classic subspace-clustering settings, generated rather than loaded.

Trajectories of rigid bodies under an affine camera (:func:`motion`) and images of
convex Lambertian objects under distant lights (:func:`faces`): the data lie on (or
near) one low-dimensional subspace per cluster, the situation that self-expression
exploits. They stand in for the Hopkins155 and Extended Yale B benchmarks, which nothing
in the book downloads.
"""

from __future__ import annotations

import numpy as np

from ...utils import check_int
from ...utils.validation import SEED_MAX

__all__ = ["motion", "faces"]


def motion(n_bodies: int = 3, n_points: int = 40, frames: int = 10, seed: int = 0):
    """Trajectories of points on rigid bodies seen by an affine camera.

    Each body has ``n_points`` random 3-D points; each frame applies a random affine
    camera ``(2, 4)`` to the homogeneous points, so a trajectory (``2 * frames``
    numbers) lies in the at most 4-dimensional subspace of its body (Tomasi & Kanade
    1992).

    Parameters
    ----------
    n_bodies : int
        Rigid bodies (the clusters).
    n_points : int
        Points per body.
    frames : int
        Camera frames.
    seed : int
        The same seed gives the same data.

    Returns
    -------
    X : ndarray, shape (n_bodies * n_points, 2 * frames)
        The trajectories, one per row.
    labels : ndarray, shape (n_bodies * n_points,)
        The body of each trajectory.
    """
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    n_points, frames = check_int(n_points, "n_points"), check_int(frames, "frames")
    bodies = []
    for _ in range(check_int(n_bodies, "n_bodies")):
        P = np.vstack([rng.standard_normal((3, n_points)), np.ones(n_points)])
        bodies.append(
            np.concatenate([rng.standard_normal((2, 4)) @ P for _ in range(frames)])
        )
    return np.hstack(bodies).T, np.repeat(np.arange(n_bodies), n_points)


def faces(n_faces: int = 3, n_images: int = 40, pixels: int = 100, seed: int = 0):
    """Images of convex Lambertian objects under distant lights, with attached shadows.

    Each object has random unit normals and albedos per pixel; an image under light
    ``l`` is ``albedo * max(normal · l, 0)``, near a low-dimensional subspace per object
    (Basri & Jacobs 2003). Lights point mostly towards the object.

    Parameters
    ----------
    n_faces : int
        Objects (the clusters).
    n_images : int
        Images (lights) per object.
    pixels : int
        Pixels per image.
    seed : int
        The same seed gives the same data.

    Returns
    -------
    X : ndarray, shape (n_faces * n_images, pixels)
        The images, one per row.
    labels : ndarray, shape (n_faces * n_images,)
        The object of each image.
    """
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0, maximum=SEED_MAX))
    n_images, pixels = check_int(n_images, "n_images"), check_int(pixels, "pixels")
    images = []
    for _ in range(check_int(n_faces, "n_faces")):
        normals = rng.standard_normal((pixels, 3))
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        albedo = rng.uniform(0.3, 1, pixels)
        lights = rng.standard_normal((3, n_images)) + [[0], [0], [2]]
        images.append((albedo[:, None] * np.maximum(normals @ lights, 0)).T)
    return np.vstack(images), np.repeat(np.arange(n_faces), n_images)
