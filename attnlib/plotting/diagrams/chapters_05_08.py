"""The diagrams of chapters 05–08: blocks, a rotation, the simplex, a density, a mux."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import torch
from matplotlib.patches import Circle, Polygon, Rectangle

from ...continuous import gaussian_pdf, truncated_parabola_pdf
from ...normalizers import softmax, sparsemax
from .drawing import (
    BIG,
    BLUE,
    GREEN,
    INK,
    ORANGE,
    SKY,
    SMALL,
    VERMILION,
    Diagram,
    _arrow,
    _box,
    _canvas,
    _grid,
    _text,
)

__all__ = ["block_diagonal", "rotation_equivariance", "simplex_projection"]
__all__ += ["density_over_time", "multiplexer_switch"]


# --------------------------------------------------------------------------- 05
def block_diagonal() -> Diagram:
    """Self-expression on a union of subspaces: ``C`` is block-diagonal when sorted.

    Left: points on three lines through the origin (three 1-D subspaces), coloured by
    subspace. Right: the coefficients ``C[i, j]`` with the points sorted by subspace:
    each point is written with others *of its own line*, so non-zeros sit in the
    diagonal blocks, and ``diag(C) = 0`` (a point may not use itself). Schematic:
    the pattern of a subspace-preserving ``C``, not a solver's output.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    The self-expressive model X = CX, diag(C) = 0 of §5 of the self-expression paper
    (our eq-05-selfexpr).
    """
    colors = [BLUE, ORANGE, GREEN]
    angles = [0.25, 1.25, 2.35]
    m = 4  # points per subspace
    fig, ax = _canvas(3.1)
    o = np.array([1.35, 1.35])
    for a, color in zip(angles, colors):
        d = np.array([np.cos(a), np.sin(a)])
        ax.plot(*np.stack([o - 1.2 * d, o + 1.2 * d]).T, color=color, lw=1, alpha=0.5)
        for s in np.linspace(-1.0, 1.0, m):
            ax.add_patch(Circle(o + s * d, 0.06, color=color))
    ax.add_patch(Circle(o, 0.03, color=INK))
    _text(ax, 1.35, 0.05, "points on three subspaces", SMALL)
    n = 3 * m
    C = np.zeros((n, n))
    for b in range(3):  # on a line, a point is a multiple of any other point of it
        for i in range(m):
            C[b * m + i, b * m + (i + 1) % m] = 1.0 - 0.35 * (i % 2)
            C[b * m + i, b * m + (i + 2) % m] = 0.4
    cell = 0.2
    gx, gy, gw, gh = 2.65, 0.3, n * cell, n * cell
    for b, color in enumerate(colors):  # each diagonal block in its subspace's colour
        blk = slice(b * m, (b + 1) * m)
        _grid(
            ax,
            gx + b * m * cell,
            gy + (2 - b) * m * cell,
            C[blk, blk],
            cell,
            color,
            vmax=1.0,
            zero="white",
        )
    ax.add_patch(Rectangle((gx, gy), gw, gh, fill=False, ec="0.5", lw=0.8))
    for i in range(n):
        ax.plot(
            gx + (i + 0.5) * cell, gy + (n - 0.5 - i) * cell, "x", color="0.45", ms=4
        )
    for b in range(1, 3):
        ax.plot([gx + b * m * cell] * 2, [gy, gy + gh], color="0.5", lw=0.8, ls=":")
        ax.plot(
            [gx, gx + gw], [gy + gh - b * m * cell] * 2, color="0.5", lw=0.8, ls=":"
        )
    _text(ax, gx + gw / 2, gy + gh + 0.4, r"$X = CX$, $\mathrm{diag}(C) = 0$", BIG)
    _text(
        ax, gx + gw / 2, gy + gh + 0.12, "C[query i, key j], sorted by subspace", SMALL
    )
    for y, note in (
        (gh - 0.3, "blocks:"),
        (gh - 0.58, "own subspace"),
        (0.5, "white: 0"),
        (0.22, r"$\times$: diagonal"),
    ):
        _text(ax, gx + gw + 0.1, gy + y, note, SMALL, ha="left")
    return fig


# --------------------------------------------------------------------------- 06
def rotation_equivariance() -> Diagram:
    """Rotating the embedding moves every token but keeps their inner products.

    Left: three tokens ``x_i`` (rows of ``X``) as arrows. Middle: the same tokens after
    a rotation ``R`` (``X ↦ XRᵀ``). Right: their inner products ``XXᵀ``, unchanged; a
    map that recombines the tokens with coefficients from ``XXᵀ`` commutes with ``R``.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    Orthogonal equivariance, f(XRᵀ) = f(X)Rᵀ, of the symmetry paper (rows).
    """
    angle = 0.9
    X = np.array([[1.0, 0.15], [0.35, 0.8], [-0.55, 0.45]])
    Rm = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    XR = X @ Rm.T
    colors = [BLUE, ORANGE, GREEN]
    fig, ax = _canvas(2.9)
    for ox, pts, title in ((1.05, X, r"tokens $X$"), (3.2, XR, r"rotated $XR^\top$")):
        ax.add_patch(Circle((ox, 1.35), 1.0, fill=False, ec="0.85", lw=0.8))
        for i, (p, color) in enumerate(zip(pts, colors)):
            tip = (ox + p[0], 1.35 + p[1])
            _arrow(ax, (ox, 1.35), tip, color, lw=2)
            _text(
                ax,
                ox + 1.22 * p[0],
                1.35 + 1.22 * p[1],
                rf"$x_{i + 1}$",
                SMALL,
                color=color,
            )
        _text(ax, ox, 0.05, title, SMALL)
    _arrow(ax, (1.9, 2.55), (2.35, 2.55), INK, style="-|>")
    _text(ax, 2.12, 2.75, r"rotate by $R$", SMALL)
    G = X @ X.T
    assert np.allclose(G, XR @ XR.T)
    cell = 0.42
    gx, gy = 4.6, 0.6
    _grid(ax, gx, gy, np.abs(G), cell, SKY, vmax=1.2)
    for i in range(3):
        for j in range(3):
            _text(
                ax,
                gx + (j + 0.5) * cell,
                gy + (2.5 - i) * cell,
                f"{G[i, j]:.2f}",
                SMALL,
            )
    _text(
        ax,
        gx + 1.5 * cell,
        gy + 3 * cell + 0.45,
        r"$XX^\top = (XR^\top)(XR^\top)^\top$",
        SMALL,
    )
    _text(ax, gx + 1.5 * cell, gy + 3 * cell + 0.17, "inner products: kept", SMALL)
    _text(ax, gx + 1.5 * cell, 0.3, r"so $f(XR^\top) = f(X)\,R^\top$", SMALL)
    return fig


# -------------------------------------------------------------------------- 07a
def simplex_projection() -> Diagram:
    """Softmax and sparsemax of one score vector, drawn on the 2-simplex (a triangle).

    The triangle (probability vectors over three keys) is drawn isometrically: page
    distances are Euclidean. The scores ``θ``, moved into its plane (which changes
    neither map), lie outside; sparsemax is the triangle's closest point, on an edge
    (one weight exactly zero); softmax lies inside. Dashed: softmax of ``θ/τ``.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    sparsemax(θ) = argmin over the simplex of ‖p − θ‖² (Martins & Astudillo, 2016).
    """
    th = torch.tensor([[0.9, 0.6, -0.1]], dtype=torch.float64)
    corners = np.array([[0.0, 0.0], [np.sqrt(2), 0.0], [np.sqrt(2) / 2, np.sqrt(1.5)]])
    scale, o = 1.75, np.array([0.45, 0.85])
    at = lambda p: o + scale * (np.asarray(p) @ corners)
    fig, ax = _canvas(3.4)
    ax.add_patch(
        Polygon(
            at(np.eye(3)), closed=True, fc=mpl.colors.to_rgba(SKY, 0.12), ec=INK, lw=1.2
        )
    )
    for e, label, off in zip(
        np.eye(3), [r"$e_1$", r"$e_2$", r"$e_3$"], [(-0.2, -0.1), (0.2, -0.1), (0, 0.2)]
    ):
        _text(ax, *(at(e) + off), label, SMALL)
    plane = th[0].numpy() - (th[0].numpy().sum() - 1) / 3  # θ moved along 1
    p_soft = softmax(th, dim=-1)[0].numpy()
    p_sparse = sparsemax(th, dim=-1)[0].numpy()
    temps = np.geomspace(20, 0.05, 60)
    path = np.array([softmax(th / t, dim=-1)[0].numpy() for t in temps])
    ax.plot(*at(path).T, color=ORANGE, lw=1.2, ls="--")
    ax.plot(*np.stack([at(plane), at(p_sparse)]).T, color=BLUE, lw=1.2, ls=":")
    ax.add_patch(Circle(at(plane), 0.05, color=INK))
    ax.add_patch(Circle(at(p_sparse), 0.06, color=BLUE))
    ax.add_patch(Circle(at(p_soft), 0.06, color=ORANGE))
    _text(ax, *(at(plane) + (0.3, 0.12)), r"scores $\theta$", SMALL)
    _text(ax, *(at(p_soft) + (-0.55, 0.0)), "softmax", SMALL, color=ORANGE)
    _text(ax, *(at(p_sparse) + (0.5, -0.05)), "sparsemax", SMALL, color=BLUE)
    lines = [
        (r"$\theta = (" + ", ".join(f"{v:.1f}" for v in th[0].tolist()) + ")$", INK),
        ("softmax: (" + ", ".join(f"{v:.2f}" for v in p_soft) + ")", ORANGE),
        ("sparsemax: (" + ", ".join(f"{v:.2f}" for v in p_sparse) + ")", BLUE),
        ("sparsemax = closest point", BLUE),
        ("of the triangle: on an edge,", BLUE),
        (r"so $p_3 = 0$ exactly", BLUE),
        (r"dashed: softmax($\theta/\tau$),", ORANGE),
        (r"from large $\tau$ to small", ORANGE),
    ]
    for k, (s, color) in enumerate(lines):
        _text(ax, 3.55, 3.1 - 0.36 * k, s, SMALL, color=color, ha="left")
    return fig


# -------------------------------------------------------------------------- 07b
def density_over_time() -> Diagram:
    """Discrete weights over tokens beside a density over time, and its context.

    Top: attention over ten tokens at times ``t_ℓ`` (bars: a probability vector).
    Bottom: continuous attention puts a density ``p(t)`` on the time line, a Gaussian
    (positive everywhere) or a truncated parabola (zero outside a window), and the
    context is the expectation of the value function, ``E_p[V(t)]``.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    Continuous attention, Eqs. (7)–(11) of the sparse and continuous attention paper
    (our eq-07b-rpm): p = p̂_Ω[f] and the context E_p[V(t)].
    """
    mu, sigma = 0.55, 0.12
    fig, ax = _canvas(3.5)
    left, width = 0.4, 4.0
    tx = lambda t: left + width * np.asarray(t)
    L = 10
    tl = (np.arange(L) + 0.5) / L
    scores = torch.as_tensor(-((tl - mu) ** 2) / (2 * sigma**2), dtype=torch.float64)
    p_disc = softmax(scores, dim=-1).numpy()
    b1, b2 = 2.2, 0.45
    for base in (b1, b2):
        _arrow(ax, (left - 0.1, base), (left + width + 0.2, base), INK, lw=1)
        _text(ax, left + width + 0.3, base, r"$t$", SMALL, ha="left")
    for t, p in zip(tl, p_disc):
        ax.add_patch(Rectangle((tx(t) - 0.12, b1), 0.24, 2.2 * p, fc=BLUE, ec="none"))
        ax.add_patch(Circle((tx(t), b1 - 0.07), 0.035, color=INK))
    _text(
        ax, tx(0.5), b1 - 0.28, r"ten tokens at times $t_\ell$: weights $p_\ell$", SMALL
    )
    t = torch.linspace(0, 1, 400, dtype=torch.float64)
    gauss = gaussian_pdf(t, mu, sigma**2).numpy()
    parab = truncated_parabola_pdf(t, mu, sigma**2).numpy()
    h = 0.9 / max(gauss.max(), parab.max())
    ax.plot(tx(t), b2 + h * gauss, color=BLUE, lw=2)
    ax.fill_between(tx(t), b2, b2 + h * parab, color=ORANGE, alpha=0.35, lw=0)
    ax.plot(tx(t), b2 + h * parab, color=ORANGE, lw=2)
    _text(ax, tx(0.5), b2 - 0.28, r"a density $p(t)$ on the time line", SMALL)
    notes = [
        ("discrete: a vector", BLUE, 2.95),
        (r"$c = \sum_\ell p_\ell\, v_\ell$", BLUE, 2.65),
        ("Gaussian:", BLUE, 1.5),
        ("> 0 everywhere", BLUE, 1.23),
        ("truncated parabola:", ORANGE, 0.93),
        ("0 outside a window", ORANGE, 0.66),
        (r"$c = \mathbb{E}_p[V(t)]$", INK, 0.25),
    ]
    for s, color, y in notes:
        _text(ax, 4.75, y, s, SMALL, color=color, ha="left")
    return fig


# --------------------------------------------------------------------------- 08
def multiplexer_switch() -> Diagram:
    """Attention as a multiplexer: inputs, a control signal, one output.

    A hard multiplexer passes the one input its control picks; the soft one passes
    ``Σ w_i h_i`` with ``w = softmax(a/T)``, the scores ``a_i`` computed from the
    control. The width of each input's line is its weight ``w_i``.

    Returns
    -------
    Diagram
        The figure; a notebook shows it as SVG.

    Implements
    ----------
    The soft multiplexer of the attention note (our eq-08-softmux).
    """
    a = torch.tensor([[0.3, 2.4, -0.5, 0.9, -1.2]], dtype=torch.float64)
    temperature = 1.0
    alpha = softmax(a / temperature, dim=-1)[0].numpy()
    n = len(alpha)
    fig, ax = _canvas(3.3)
    ax.add_patch(
        Polygon(
            [(2.4, 0.45), (2.4, 3.05), (3.5, 2.45), (3.5, 1.05)],
            closed=True,
            fc=mpl.colors.to_rgba(SKY, 0.15),
            ec=INK,
            lw=1.4,
        )
    )
    _text(ax, 2.95, 1.75, "mux", BIG)
    ys = np.linspace(2.75, 0.75, n)
    best = int(alpha.argmax())
    for i, (y, w) in enumerate(zip(ys, alpha)):
        _box(ax, 0.15, y - 0.17, 0.6, 0.34, rf"$h_{i + 1}$", GREEN, size=SMALL)
        ax.plot([0.75, 2.4], [y, y], color=GREEN, lw=0.5 + 9 * w, solid_capstyle="butt")
        _text(
            ax,
            1.55,
            y + 0.2,
            rf"$w_{i + 1}$={w:.2f}",
            SMALL,
            color=VERMILION if i == best else INK,
        )
    _arrow(ax, (3.5, 1.75), (4.1, 1.75), GREEN, lw=0.5 + 9 * alpha.max())
    _text(ax, 4.2, 1.95, r"$\sum_i w_i h_i$", BIG, ha="left")
    _text(ax, 4.2, 1.5, "(hard: only the largest)", SMALL, ha="left")
    _box(ax, 2.35, 0.02, 1.2, 0.3, "control", ORANGE, size=SMALL)
    _arrow(ax, (2.95, 0.32), (2.95, 0.68), ORANGE)
    _text(
        ax,
        4.6,
        0.35,
        "scores $a_i = x_i^\\top W_K^\\top W_Q\\, C$\n"
        r"$w = \mathrm{softmax}(a / T)$",
        SMALL,
        linespacing=1.6,
    )
    return fig
