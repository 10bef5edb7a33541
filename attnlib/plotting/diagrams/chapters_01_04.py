"""The diagrams of chapters 01–04: a lookup, a kernel's band, patches, a mask."""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.patches import Circle, Rectangle

from ...functional import attention
from .drawing import (
    BIG,
    BLUE,
    GREEN,
    INK,
    ORANGE,
    SMALL,
    Diagram,
    _arrow,
    _box,
    _canvas,
    _grid,
    _text,
)

__all__ = ["qkv_lookup", "kernel_bump", "patches_as_tokens", "neighbourhood_mask"]


# --------------------------------------------------------------------------- 01
def qkv_lookup() -> Diagram:
    """Attention as a soft dictionary lookup: one query, four keys and their values.

    The query is compared with every key (score ``q·k_j/√d``), the scores become
    weights by a softmax, and the output is the weights' average of the values; the
    width of each arrow is its weight. The numbers are computed by
    :func:`attnlib.functional.attention`.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    Eqs. (1)–(2) of the self-expression paper for one query (our eq-01-attention).
    """
    scores = torch.tensor([[2.2, 1.2, 0.2, -1.0]], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    k = torch.cat([scores.T, torch.zeros(4, 1, dtype=torch.float64)], 1)
    w = attention(q, k, torch.eye(4, dtype=torch.float64), score="dot").weights[0]
    fig, ax = _canvas(3.3)
    ys = [2.35, 1.7, 1.05, 0.4]
    for x, head in zip((0.6, 2.35, 3.75, 5.3), ("query", "keys", "values", "output")):
        _text(ax, x, 3.05, head, BIG)
    _box(ax, 0.15, 1.1, 0.9, 0.7, r"$q$", ORANGE)
    for j, (yj, wj) in enumerate(zip(ys, w.tolist())):
        _box(ax, 2.0, yj, 0.7, 0.45, rf"$k_{j + 1}$", BLUE)
        _box(ax, 3.4, yj, 0.7, 0.45, rf"$v_{j + 1}$", GREEN)
        _arrow(ax, (1.05, 1.45), (2.0, yj + 0.22), ORANGE, lw=0.6 + 7 * wj)
        _arrow(ax, (2.7, yj + 0.22), (3.4, yj + 0.22), "0.55", lw=0.8)
        _arrow(ax, (4.1, yj + 0.22), (4.85, 1.45), GREEN, lw=0.6 + 7 * wj)
        ya = 1.45 + (yj + 0.22 - 1.45) * 0.78  # on the arrow, near the key
        _text(
            ax,
            1.74,
            ya + 0.16,
            f"{float(scores[0, j]):+.1f}",
            SMALL,
            color=ORANGE,
            bbox={"fc": "white", "ec": "none", "pad": 0.5},
        )
        _text(ax, 3.05, yj + 0.38, f"w={wj:.2f}", SMALL)
    _box(ax, 4.85, 1.1, 0.95, 0.7, r"$z=\sum_j w_j v_j$", INK, fill=0.05, size=SMALL)
    _text(
        ax,
        3.0,
        0.05,
        r"score $q^\top k_j/\sqrt{d}$ (orange)  $\rightarrow$  weights "
        r"$w = \mathrm{softmax}$ of the scores",
        SMALL,
    )
    return fig


# --------------------------------------------------------------------------- 02
def kernel_bump() -> Diagram:
    """A Gaussian bump over sorted inputs and the band matrix its rows make.

    Top: the keys ``x_j`` on a line, the kernel ``κ(x_i, ·)`` centred on one query and
    the normalised weights ``w(x_i, x_j)`` as stems. Bottom: the matrix of weights of
    every ``x_i`` against every ``x_j`` (queries = keys, sorted), a band because the
    bump only reaches near neighbours; the highlighted row is the bump above.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    The Nadaraya–Watson weights, Eq. (6) of the self-expression paper (our eq-02-nw).
    """
    n, bandwidth = 12, 0.35
    x = np.sort(np.random.default_rng(3).uniform(0, 5, n))
    xt = torch.as_tensor(x, dtype=torch.float64)[:, None]
    W = attention(xt, xt, xt, score="neg_sq_dist", temperature=bandwidth**2).weights
    W = W.numpy()
    row = n // 2
    fig, ax = _canvas(4.9)
    left, width, base = 0.3, 3.6, 3.5
    pos = left + x / 5 * width
    u = np.linspace(0, 5, 300)
    bump = np.exp(-((u - x[row]) ** 2) / (2 * bandwidth**2))
    ax.plot(left + u / 5 * width, base + 1.1 * bump, color=ORANGE, lw=2)
    ax.plot([left, left + width], [base, base], color=INK, lw=1)
    for j in range(n):
        ax.plot(
            [pos[j]] * 2,
            [base, base + 1.1 * W[row, j] / W[row].max()],
            color=BLUE,
            lw=2.5,
            solid_capstyle="butt",
        )
        ax.add_patch(Circle((pos[j], base), 0.045, color=INK))
    _text(
        ax,
        pos[row],
        base + 1.35,
        r"kernel $\kappa(x_i, \cdot)$ at query $x_i$",
        SMALL,
        color=ORANGE,
    )
    _text(ax, left + width / 2, base - 0.22, r"keys $x_j$ (sorted)", SMALL)
    cell = 2.4 / n
    gx, gy, gw, gh = _grid(ax, left + 0.6, 0.15, W, cell, BLUE)
    ax.add_patch(
        Rectangle(
            (gx, gy + (n - 1 - row) * cell), gw, cell, fill=False, ec=ORANGE, lw=2.2
        )
    )
    for j in range(n):  # each key's position fans out to its column
        ax.plot(
            [pos[j], gx + (j + 0.5) * cell],
            [base - 0.38, gy + gh + 0.05],
            color="0.7",
            lw=0.6,
        )
    ry = gy + (n - 0.5 - row) * cell
    _arrow(ax, (4.1, ry), (gx + gw + 0.05, ry), ORANGE)
    _text(ax, 4.15, ry + 0.17, r"row $i$ of $w$:", SMALL, color=ORANGE, ha="left")
    _text(ax, 4.15, ry - 0.17, "the bump above", SMALL, color=ORANGE, ha="left")
    _text(ax, 3.45, 2.35, r"weights $w(x_i, x_j)$, [query, key]:", SMALL, ha="left")
    _text(ax, 3.45, 2.05, "sorted inputs make a band", SMALL, ha="left")
    return fig


# --------------------------------------------------------------------------- 03
def patches_as_tokens() -> Diagram:
    """Non-local means as attention: each pixel's patch is its token.

    A small image with two 3×3 patches ``P_x`` and ``P_x'`` framed; each is flattened
    into a row of nine numbers (a token), their squared distance ``d²`` gives the
    weight ``exp(-d²/h²)``, and the value a key carries is its centre pixel.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    The non-local means weights of §3.2 of the self-expression paper (our eq-03-nlm).
    """
    r, c = np.mgrid[0:7, 0:7]
    img = 0.25 + 0.5 * ((r >= 3) & (c >= 2) & (c <= 5)) + 0.04 * ((r + 2 * c) % 3)
    fig, ax = _canvas(3.2)
    cell = 0.34
    x0, y0 = 0.15, 0.35
    for i in range(7):
        for j in range(7):
            g = 1 - img[i, j]
            ax.add_patch(
                Rectangle(
                    (x0 + j * cell, y0 + (6 - i) * cell),
                    cell,
                    cell,
                    fc=(g, g, g),
                    ec="0.6",
                    lw=0.5,
                )
            )
    patches = [((1, 1), ORANGE, r"$P_x$", 2.45), ((4, 4), BLUE, r"$P_{x'}$", 0.95)]
    for (pi, pj), color, name, ty in patches:
        ax.add_patch(
            Rectangle(
                (x0 + (pj - 1) * cell, y0 + (5 - pi) * cell),
                3 * cell,
                3 * cell,
                fill=False,
                ec=color,
                lw=2.5,
            )
        )
        token = img[pi - 1 : pi + 2, pj - 1 : pj + 2].reshape(1, 9)
        tx = 3.0
        for m in range(9):
            g = 1 - token[0, m]
            ax.add_patch(
                Rectangle(
                    (tx + m * 0.2, ty),
                    0.2,
                    0.3,
                    fc=(g, g, g),
                    ec=color,
                    lw=0.8 + 1.2 * (m == 4),
                )
            )
        _arrow(
            ax,
            (x0 + (pj + 2) * cell + 0.02, y0 + (6 - pi) * cell + cell / 2),
            (tx - 0.05, ty + 0.15),
            color,
        )
        _text(
            ax,
            tx + 0.9,
            ty + 0.5,
            f"token {name}: the patch as a row",
            SMALL,
            color=color,
        )
    _text(ax, 3.9, 2.12, r"weight $w(x, x') = \exp(-d^2/h^2)$,", SMALL)
    _text(ax, 3.9, 1.84, r"$d^2 = \|P_x - P_{x'}\|^2$ (patch distance)", SMALL)
    _text(ax, 3.9, 0.62, "value: the centre pixel (bold cell)", SMALL)
    _text(ax, 3.9, 0.32, "output: weighted mean of the values", SMALL)
    _text(ax, x0 + 3.5 * cell, y0 + 7 * cell + 0.2, "image: one token per pixel", SMALL)
    return fig


# --------------------------------------------------------------------------- 04
def neighbourhood_mask() -> Diagram:
    """LLE's neighbourhood as a mask: each point may attend to its K nearest only.

    Left: points along a curve, one query ``x_j`` and its ``K`` nearest neighbours
    ``N_j`` joined to it. Right: the boolean mask ``[query, key]`` (filled where
    ``i ∈ N_j``), ``K`` cells per row and none on the diagonal; the query's row framed.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    The support constraint of Eq. (9) of the self-expression paper (our eq-04-weights).
    """
    n, n_neighbors = 10, 3
    t = np.linspace(0.0, 1.0, n) ** 1.3
    pts = np.stack([0.3 + 2.3 * t, 1.4 + 0.9 * np.sin(3.2 * t)], 1)
    dist = ((pts[:, None] - pts[None]) ** 2).sum(-1)
    np.fill_diagonal(dist, np.inf)
    nbrs = np.argsort(dist, 1)[:, :n_neighbors]
    mask = np.zeros((n, n))
    mask[np.arange(n)[:, None], nbrs] = 1
    fig, ax = _canvas(3.3)
    q = 4
    for i in nbrs[q]:
        ax.plot(*pts[[q, i]].T, color=ORANGE, lw=2, zorder=1)
    for i, p in enumerate(pts):
        color = ORANGE if i == q else (BLUE if i in nbrs[q] else "0.55")
        ax.add_patch(Circle(p, 0.07 if i == q else 0.055, color=color, zorder=2))
        _text(ax, p[0], p[1] - 0.2, str(i), SMALL, color=color)
    _text(
        ax, pts[q, 0] - 0.1, pts[q, 1] + 0.3, rf"query $x_{{{q}}}$", SMALL, color=ORANGE
    )
    _text(
        ax,
        1.4,
        0.2,
        rf"its $K={n_neighbors}$ nearest neighbours $N_{{{q}}}$",
        SMALL,
        color=BLUE,
    )
    cell = 0.25
    gx, gy, gw, gh = _grid(ax, 3.3, 0.3, mask, cell, BLUE, zero="white")
    ax.add_patch(
        Rectangle(
            (gx, gy + (n - 1 - q) * cell), gw, cell, fill=False, ec=ORANGE, lw=2.2
        )
    )
    for i in range(n):
        _text(ax, gx - 0.12, gy + (n - 0.5 - i) * cell, str(i), SMALL, color="0.35")
    _text(
        ax, gx + gw / 2, gy + gh + 0.35, r"mask: key $i$ allowed if $i \in N_j$", SMALL
    )
    _text(
        ax,
        gx + gw / 2,
        gy + gh + 0.1,
        r"rows: queries $j$; columns: keys $i$",
        SMALL,
        color="0.35",
    )
    return fig
