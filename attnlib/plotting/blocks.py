"""Coefficient maps of grouped points: magnitudes on a log scale, the groups' blocks.

A self-expressive coefficient matrix ``C[query, key]`` over points sorted by group
(chapter 05's subspaces) should be block-diagonal. On a linear colour scale a dense map
with small entries shows as a blank square, and a sparse one as scattered dots with no
visible blocks; :func:`coefficient_maps` draws each row relative to its own largest
entry, on a log scale, with the groups' boundaries, and :func:`block_shares` sums the
weight per pair of groups.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ..utils import check_positive
from .heatmaps import attention_heatmap
from .style import COLUMN_INCHES, _to_numpy

__all__ = ["block_shares", "coefficient_maps"]


def _groups(groups, n: int, name: str = "groups") -> np.ndarray:
    g = _to_numpy(groups, name)
    if g.shape != (n,):
        raise ValueError(
            f"{name} must hold one label per row ({n}), got shape {g.shape}"
        )
    if (np.diff(g) < 0).any():
        raise ValueError(f"{name} must be sorted, so that each group is one block")
    return g


def _square(C, name: str = "C") -> np.ndarray:
    C = _to_numpy(C, name)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.size == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got {C.shape}")
    return C


def block_shares(C, groups) -> np.ndarray:
    """The share of each group's rows' weight ``|C|`` that falls on each group.

    Parameters
    ----------
    C : array-like, shape (n, n)
        Coefficients indexed ``[query, key]``.
    groups : array-like, shape (n,)
        Each point's group label, sorted (each group one block).

    Returns
    -------
    numpy.ndarray, shape (n_groups, n_groups)
        ``S[a, b] = Σ_{i∈a, j∈b} |C_ij| / Σ_{i∈a, j} |C_ij|``: rows sum to one (a group
        of all-zero rows gets a row of zeros); the diagonal is the weight kept in the
        own group.

    Implements
    ----------
    The block-diagonal property of §5 of the self-expression paper, measured.
    """
    C = _square(C)
    g = _groups(groups, C.shape[0])
    labels = np.unique(g)
    A = np.abs(C)
    S = np.array([[A[np.ix_(g == a, g == b)].sum() for b in labels] for a in labels])
    total = S.sum(1, keepdims=True)
    return np.divide(S, total, out=np.zeros_like(S), where=total > 0)


def coefficient_maps(maps, groups, titles=None, *, floor: float = 1e-3, shares=False):
    """Coefficient maps side by side: ``|C_ij|`` over its row's largest, log scale.

    Each panel shows ``|C_ij| / max_j |C_ij|`` from ``floor`` to 1 on one log colour
    scale (viridis; smaller entries get the floor's colour), exact zeros in light grey,
    and white lines between the groups, so that a block-diagonal map shows its blocks
    whatever its size of entries, dense or sparse.

    Parameters
    ----------
    maps : list of array-like, each of shape (n, n)
        Coefficient matrices indexed ``[query, key]``, points sorted by group.
    groups : array-like, shape (n,)
        Each point's group label, sorted.
    titles : list of str, optional
        One per map.
    floor : float
        The smallest relative size drawn apart (0 < floor < 1).
    shares : bool
        Add, after the maps, a panel per map with its :func:`block_shares`, annotated
        (the groups named ``S1``, ``S2``, ...).

    Returns
    -------
    matplotlib.figure.Figure
        The column's width, one panel per map (and per share matrix), one colour bar.
    """
    if not isinstance(maps, (list, tuple)) or not maps:
        raise ValueError("maps must be a non-empty list of square matrices")
    mats = [_square(C, f"maps[{k}]") for k, C in enumerate(maps)]
    n = mats[0].shape[0]
    if any(C.shape != (n, n) for C in mats):
        raise ValueError("maps must all have the same shape")
    g = _groups(groups, n)
    floor = check_positive(floor, "floor")
    if floor >= 1:
        raise ValueError(f"floor must be below 1, got {floor}")
    if titles is not None and len(titles) != len(mats):
        raise ValueError(f"titles must hold one title per map ({len(mats)})")
    cmap = mpl.colormaps["viridis"].with_extremes(bad="0.88", under="#440154")
    norm = mpl.colors.LogNorm(vmin=floor, vmax=1.0)
    edges = np.flatnonzero(np.diff(g)) + 0.5
    if not isinstance(shares, bool):
        raise ValueError(f"shares must be True or False, got {shares!r}")
    k = len(mats)
    panels = 2 * k if shares else k
    fig, axes = plt.subplots(
        1,
        panels,
        figsize=(COLUMN_INCHES, COLUMN_INCHES / panels * 0.92 + 0.9),
        layout="constrained",
        squeeze=False,
    )
    for j, (ax, C) in enumerate(zip(axes[0], mats)):
        A = np.abs(C)
        top = A.max(1, keepdims=True)
        rel = np.divide(A, top, out=np.zeros_like(A), where=top > 0)
        im = ax.imshow(
            np.ma.masked_equal(rel, 0.0), cmap=cmap, norm=norm, interpolation="nearest"
        )
        for e in edges:
            ax.axhline(e, color="white", lw=0.9)
            ax.axvline(e, color="white", lw=0.9)
        ax.set(xticks=[], yticks=[], xlabel="key j")
        ax.grid(False)
        if j == 0:
            ax.set_ylabel("query i")
        if titles is not None:
            ax.set_title(titles[j])
    fig.colorbar(
        im,
        ax=axes[0, :k].tolist(),
        extend="min",
        shrink=0.9,
        label="|C[i, j]| / row max",
    )
    names = [f"S{a + 1}" for a in range(len(np.unique(g)))]
    for ax, C in zip(axes[0, k:], mats):
        attention_heatmap(
            block_shares(C, g),
            names,
            names,
            ax=ax,
            annotate=True,
            vmin=0,
            vmax=1,
            colorbar=False,
            title="share of |C| per block",
        )
        ax.set(xlabel="key's subspace", ylabel="query's subspace")
    return fig
