"""Continuous attention in closed form against numerical integration; chapter's sweep.

Part 1 (timing): forward + backward of ``r = E_p[ψ(t)]`` for a batch of 256 densities
and N = 64 or 100 Gaussian RBFs, by ``attnlib.continuous`` (closed form; for the 2-D
truncated paraboloid, closed-form chord integrals summed by 48-node Gauss–Legendre along
the major axis) and by numerical integration with autograd (a 1 000-point trapezoid on
the density's support in 1-D, a 100 × 100 grid on its bounding box in 2-D). Accuracy:
the largest error of ``r`` and of the gradient with respect to (μ, σ² or Σ), each
relative to that quantity's largest entry, against a finer numerical integration in
float64 with autograd (20× the nodes in 1-D; in 2-D, on two samples, a 400 × 400 grid
over ±9σ for the Gaussian and Gauss–Legendre × trapezoid in whitened polar coordinates
for the truncated paraboloid, whose kink at the ellipse would cap a grid reference at
~1e-3). Medians of repeats, side by side in one process.

Part 2 (sweep): the chapter's two experiments over more basis sizes and seeds than the
chapter runs live, and the document experiment's controls (``--part controls``: an
oracle μ on the span documents, and documents whose label is diffuse).

    # the full run, writes attnlib/results/continuous.json
    python benchmarks/continuous.py
    # tiny sizes, < 30 s
    python benchmarks/continuous.py --quick
"""

from __future__ import annotations

import functools
import json
import math
from datetime import UTC, datetime
from pathlib import Path

# benchmarks/ is on sys.path when a script runs
import _common
import numpy as np
import torch
from _common import QUICK_RESULTS, RESULTS, machine, median_seconds

from attnlib.continuous import (
    GaussianRBF,
    continuous_attention_1d,
    continuous_attention_2d,
    gaussian_pdf,
    truncated_parabola_pdf,
)
from attnlib.continuous.experiments.classify import accuracy, fit_classifier
from attnlib.continuous.experiments.digits import DigitClassifier, cluttered_digits
from attnlib.continuous.experiments.documents import DocumentClassifier, span_documents
from attnlib.utils import seeds

OUT = RESULTS / "continuous.json"
# Gauss–Legendre nodes per RBF along the ellipse's major axis (relative error ~1e-12; 32
# gives ~1e-6).
N_ANGLES = 48
# Relative errors below this are float64 round-off (of r, of the gradients and of the
# reference itself): two methods both below it count as equally accurate.
ROUNDOFF = 1e-12
# Fraction of cue words in the diffuse documents (label spread over the whole text).
DIFFUSE_CUE = 0.08
# Starting variance of the "continuous-narrow" control.
NARROW_VAR = 0.02
# Each seed draws its own training and test data (seed s: data seeds base + 2s and
# base + 2s + 1, so that seed 0 keeps the data of the earlier three-seed sweep) and its
# own initialisation and batch order.
SEEDS = (0, 1, 2, 3, 4)
_SEEDS = [SEEDS]  # --seeds runs a subset (one process per subset, merged afterwards)


def _summary(v) -> dict:
    """Median, range (min-max), mean and standard deviation of accuracies ``v``."""
    return {
        "median": float(np.median(v)),
        "min": float(np.min(v)),
        "max": float(np.max(v)),
        "mean": float(np.mean(v)),
        "std": float(np.std(v)),
        "accs": list(v),
    }


# ------------------------------------------------------ the peer: numerical integration


def quad_1d(mu, s2, basis, alpha, n):
    """Trapezoid with ``n`` nodes on the support (α = 2) or ±8σ (α = 1).

    The nodes move with μ, σ² so autograd works.
    """
    half = (1.5 * s2) ** (1 / 3) if alpha == 2 else 8 * s2.sqrt()
    t = mu[:, None] + half[:, None] * torch.linspace(-1, 1, n, dtype=mu.dtype)
    pdf = gaussian_pdf if alpha == 1 else truncated_parabola_pdf
    dens = pdf(t, mu[:, None], s2[:, None])
    return torch.trapezoid(dens.unsqueeze(-1) * basis(t), t.unsqueeze(-1), dim=1)


def quad_2d(mu, Sigma, basis, alpha, n, box=5.0):
    """``n × n`` grid on the bounding box of the ellipse, in whitened coordinates.

    The ellipse is the support (α = 2) or the ``box``-σ ellipse (α = 1).
    """
    # Symmetrise so that autograd's gradient with respect to Σ is symmetric, as
    # attnlib's is.
    L = torch.linalg.cholesky(0.5 * (Sigma + Sigma.transpose(-1, -2)))
    det_L = L[:, 0, 0] * L[:, 1, 1]
    R = (
        torch.sqrt(2 * torch.sqrt(1 / (math.pi * det_L)))
        if alpha == 2
        else torch.full_like(det_L, box)
    )
    g = torch.linspace(-1, 1, n, dtype=mu.dtype)
    # (n², 2) on [-1, 1]²
    u = torch.stack(torch.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    u = u * R[:, None, None]
    x = u @ L.transpose(-1, -2)  # (batch, n², 2)
    q = (u * u).sum(-1)
    dens = (
        torch.clamp(R[:, None] ** 2 / 2 - q / 2, min=0)
        if alpha == 2
        else torch.exp(-q / 2) / (2 * math.pi)
    )
    w = torch.full((n,), 2 / (n - 1), dtype=mu.dtype)
    w[0] = w[-1] = 1 / (n - 1)
    w2 = (w[:, None] * w[None, :]).reshape(-1) * R[
        :, None
    ] ** 2  # trapezoid weights in u; dt = det L du
    psi = basis(x + mu[:, None, :])
    # For α = 1 the density in u is the standard normal (dt = det L du and
    # p(t) = N(u; 0, I)/det L).
    scale = torch.ones_like(det_L) if alpha == 1 else det_L
    return torch.einsum("bk,bkn->bn", (w2 * dens) * scale[:, None], psi)


def reference_2d_paraboloid(
    mu, Sigma, basis, weights, n_radius=128, n_angle=1024, chunk=256
):
    """r and the gradients of ``(r * weights).sum()`` for one truncated paraboloid.

    By brute force in polar coordinates.

    Whitened polar coordinates ``t = μ + L ρ e(ω)``: the support is ``ρ ≤ R`` and the
    density ``(R² - ρ²)/2`` a polynomial in ρ, so Gauss–Legendre in ρ and the periodic
    trapezoid in ω converge fast, with no kink at the boundary (which caps a grid at
    second order). Nodes move with (μ, Σ), so autograd gives the gradient; independent
    of attnlib's chord integrals and of its Proposition 3 backward. Chunks of angles
    keep memory small (the sum is linear).
    """
    x, w = (
        torch.as_tensor(a, dtype=mu.dtype)
        for a in np.polynomial.legendre.leggauss(n_radius)
    )
    omega = torch.arange(n_angle, dtype=mu.dtype) * (2 * math.pi / n_angle)
    m, S = mu.clone().requires_grad_(), Sigma.clone().requires_grad_()
    total = [
        torch.zeros(len(basis), dtype=mu.dtype),
        torch.zeros_like(mu),
        torch.zeros_like(Sigma),
    ]
    for i in range(0, n_angle, chunk):
        L = torch.linalg.cholesky(0.5 * (S + S.transpose(-1, -2)))
        det_L = L[0, 0] * L[1, 1]
        c = torch.sqrt(1 / (math.pi * det_L))
        R = torch.sqrt(2 * c)
        rho = 0.5 * R * (x + 1)
        e = torch.stack([omega[i : i + chunk].cos(), omega[i : i + chunk].sin()], -1)
        t = m + (rho[:, None, None] * e) @ L.T  # (n_radius, chunk, 2)
        dens = (c - 0.5 * rho**2) * det_L * rho * 0.5 * R * w * (2 * math.pi / n_angle)
        r = torch.einsum("a,abn->n", dens, basis(t))
        gm, gS = torch.autograd.grad((r * weights[0]).sum(), (m, S))
        for acc, part in zip(total, (r.detach(), gm, gS)):
            acc += part
    return [part.unsqueeze(0) for part in total]


# ------------------------------------------------------------------ timing


def inputs(dim, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    mu = 0.2 + 0.6 * torch.rand(
        batch, *(() if dim == 1 else (2,)), generator=g, dtype=torch.float64
    )
    if dim == 1:
        return mu, 0.002 + 0.05 * torch.rand(batch, generator=g, dtype=torch.float64)
    A = 0.15 * torch.randn(batch, 2, 2, generator=g, dtype=torch.float64)
    return mu, A @ A.transpose(-1, -2) + 0.003 * torch.eye(2, dtype=torch.float64)


def value_and_grads(fn, mu, s, weights, chunk=None):
    """r and the gradient of ``(r * weights).sum()`` in (μ, σ² or Σ).

    Computed ``chunk`` samples at a time.
    """
    chunk = chunk or len(mu)
    out = []
    for i in range(0, len(mu), chunk):
        m, v = (
            mu[i : i + chunk].clone().requires_grad_(),
            s[i : i + chunk].clone().requires_grad_(),
        )
        r = fn(m, v)
        out.append(
            (
                r.detach(),
                *torch.autograd.grad((r * weights[i : i + chunk]).sum(), (m, v)),
            )
        )
    return [torch.cat(parts) for parts in zip(*out)]


def timing_rows(quick: bool, dims=(1, 2), rows=(), save=lambda rows: None):
    """Rows for ``dims``, appended to the kept ``rows`` of other dimensions.

    ``save`` gets the rows so far.
    """
    batch, repeats = (16, 3) if quick else (256, 3)
    rows = [r for r in rows if r["dim"] not in dims]
    for dim in dims:
        for n_basis in (16,) if quick else (64, 100):
            basis = (
                GaussianRBF.linspace(n_basis, sigmas=(0.05, 0.2))
                if dim == 1
                else GaussianRBF.grid(int(round(n_basis**0.5)), 1e-3)
            )
            if dim == 2 and len(basis) != n_basis:
                basis = GaussianRBF.grid(8, 1e-3)  # 64 = 8 × 8 (16 and 100 are squares)
            for alpha in (2, 1):
                mu, s = inputs(dim, batch)
                weights = torch.randn(
                    batch,
                    len(basis),
                    dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1),
                )
                n_peer = 1000 if dim == 1 else 100
                closed = (
                    (
                        lambda m, v, basis=basis, alpha=alpha: continuous_attention_1d(
                            m, v, basis, alpha
                        )
                    )
                    if dim == 1
                    else (
                        lambda m, v, basis=basis, alpha=alpha: continuous_attention_2d(
                            m, v, basis, alpha, n_angles=N_ANGLES
                        )
                    )
                )
                peer = (
                    (
                        lambda m, v, n=n_peer, basis=basis, alpha=alpha: quad_1d(
                            m, v, basis, alpha, n
                        )
                    )
                    if dim == 1
                    else (
                        lambda m, v, n=n_peer, basis=basis, alpha=alpha: quad_2d(
                            m, v, basis, alpha, n
                        )
                    )
                )
                # The fine reference is costly in memory: 16 samples in 1-D, two (one at
                # a time) in 2-D.
                sub = slice(0, 2 if dim == 2 else min(batch, 16))
                if dim == 1:
                    ref = value_and_grads(
                        lambda m, v, basis=basis, alpha=alpha, n_peer=n_peer: quad_1d(
                            m, v, basis, alpha, 20 * n_peer
                        ),
                        mu[sub],
                        s[sub],
                        weights[sub],
                    )
                else:
                    fine_peer = functools.partial(
                        quad_2d, basis=basis, alpha=alpha, n=4 * n_peer, box=9.0
                    )
                    parts = [
                        reference_2d_paraboloid(mu[i], s[i], basis, weights[i : i + 1])
                        if alpha == 2
                        # a Gaussian integrand decays to e^{-40} at 9σ: the
                        # trapezoid rule is then spectrally accurate
                        else value_and_grads(
                            fine_peer, mu[i : i + 1], s[i : i + 1], weights[i : i + 1]
                        )
                        for i in range(2)
                    ]
                    ref = [torch.cat(p) for p in zip(*parts)]
                # r, ∂μ and ∂σ² (∂Σ) differ in scale by up to 10⁶: each error relative
                # to its quantity's largest entry.
                err = lambda out, sub=sub, ref=ref: max(
                    ((a[sub] - b).abs().max() / b.abs().max()).item()
                    for a, b in zip(out, ref)
                )  # noqa: E731
                t_closed, _ = median_seconds(
                    lambda closed=closed, mu=mu, s=s, weights=weights: value_and_grads(
                        closed, mu, s, weights
                    ),
                    repeats,
                )
                t_peer, _ = median_seconds(
                    lambda peer=peer, mu=mu, s=s, weights=weights, dim=dim: (
                        value_and_grads(
                            peer, mu, s, weights, chunk=8 if dim == 2 else 64
                        )
                    ),
                    repeats,
                )
                e_closed, e_peer = (
                    err(value_and_grads(closed, mu, s, weights)),
                    err(
                        value_and_grads(
                            peer, mu, s, weights, chunk=8 if dim == 2 else 64
                        )
                    ),
                )
                rows.append(
                    {
                        "dim": dim,
                        "alpha": alpha,
                        "N": len(basis),
                        "batch": batch,
                        "peer": f"{n_peer}-point trapezoid"
                        if dim == 1
                        else f"{n_peer}x{n_peer} grid",
                        "n_angles": N_ANGLES if dim == 2 and alpha == 2 else None,
                        "closed_ms": 1e3 * t_closed,
                        "peer_ms": 1e3 * t_peer,
                        "speedup": t_peer / t_closed,
                        "closed_max_rel_err": e_closed,
                        "peer_max_rel_err": e_peer,
                        "accuracy_ratio": max(e_peer, ROUNDOFF)
                        / max(e_closed, ROUNDOFF),
                    }
                )
                print(
                    {
                        k: (
                            round(v, 4)
                            if isinstance(v, float) and k.endswith("ms")
                            else v
                        )
                        for k, v in rows[-1].items()
                    },
                    flush=True,
                )
                save(rows)
    return rows


# --------------------------------------------------- sweep of the chapter's experiments


def document_sweep(quick: bool, save=lambda rows: None):
    """Seed-major, so that an interrupted sweep still covers every configuration.

    ``save`` gets the rows so far.
    """
    # ~0.05-0.1 s a step on one thread: 14 configurations × 5 seeds × 150 steps take
    # ~15-20 minutes.
    n_train, n_test, length, steps = (
        (200, 200, 64, 5) if quick else (1500, 1000, 256, 150)
    )
    seeds = (0,) if quick else _SEEDS[0]
    sizes = (32,) if quick else (32, 64, 128)

    def data(seed):
        return (
            span_documents(n_train, length, seed=100 + 2 * seed),
            span_documents(n_test, length, seed=101 + 2 * seed),
        )

    configs = [("discrete", 1, None), ("discrete", 2, None)]
    configs += [
        (kind, alpha, n)
        for kind in ("continuous", "combined")
        for alpha in (1, 2)
        for n in sizes
    ]
    accs = {c: [] for c in configs}
    rows = []
    for seed in seeds:
        tr, te = data(seed)
        for kind, alpha, n in configs:
            torch.manual_seed(seed)
            model = DocumentClassifier(48, kind, alpha=alpha, n_basis=n or 32)
            fit_classifier(
                model,
                tr.tokens,
                tr.labels,
                n_steps=steps,
                batch=32,
                seed=seed,
                progress=False,
            )
            accs[(kind, alpha, n)].append(accuracy(model, te.tokens, te.labels))
            rows = [
                {
                    "attention": k,
                    "alpha": a,
                    "N": nb,
                    "L": length,
                    "steps": steps,
                    **_summary(v),
                }
                for (k, a, nb), v in accs.items()
                if v
            ]
            print(rows[-1] if seed == 0 else accs[(kind, alpha, n)], flush=True)
            save(rows)
    return rows


def control_sweep(quick: bool, save=lambda rows: None):
    """Controls of the document experiment: is the continuous model's failure its place?

    * ``oracle``: continuous attention moment-matched to the true span (μ at its
      centre), on the sweep's span documents: can a density read the span once it is
      put there?
    * ``diffuse``: documents whose cue words are spread over the whole text (``span =
      length``), where no place matters more than another and the paper's continuous
      model, with μ and σ² from a max-pooled summary, should work;
      ``continuous-narrow`` is that model with σ² started at ``NARROW_VAR`` instead of
      its default start (about 1), on both tasks.

    Seed-major; ``save`` gets the rows so far.
    """
    n_train, n_test, length, steps = (
        (200, 200, 64, 5) if quick else (1500, 1000, 256, 150)
    )
    seeds = (0,) if quick else _SEEDS[0]
    kw = dict(span=length, cue=DIFFUSE_CUE)

    def data(seed):
        span = (
            span_documents(n_train, length, seed=100 + 2 * seed),
            span_documents(n_test, length, seed=101 + 2 * seed),
        )
        diffuse = (
            span_documents(n_train, length, seed=200 + 2 * seed, **kw),
            span_documents(n_test, length, seed=201 + 2 * seed, **kw),
        )
        return span, diffuse

    configs = [("span", "oracle", 1), ("span", "oracle", 2)]
    configs += [
        ("diffuse", kind, alpha)
        for kind in ("discrete", "continuous", "combined")
        for alpha in (1, 2)
    ]
    # The continuous model started narrow (σ² = NARROW_VAR instead of about 1 at the
    # default init).
    configs += [
        ("diffuse", "continuous-narrow", 1),
        ("diffuse", "continuous-narrow", 2),
    ]
    # The same narrow start on the span task: is the span model's failure its wide
    # start (as on diffuse labels) or the place its max-pooled summary cannot give?
    configs += [("span", "continuous-narrow", 1), ("span", "continuous-narrow", 2)]
    accs = {c: [] for c in configs}
    rows = []
    for seed in seeds:
        span, diffuse = data(seed)
        for task, kind, alpha in configs:
            tr, te = span if task == "span" else diffuse
            torch.manual_seed(seed)
            narrow = kind == "continuous-narrow"
            model = DocumentClassifier(
                48,
                "continuous" if narrow else kind,
                alpha=alpha,
                n_basis=32,
                span=tr.span,
                init_var=NARROW_VAR if narrow else None,
            )
            x_tr = (tr.tokens, tr.start) if kind == "oracle" else tr.tokens
            x_te = (te.tokens, te.start) if kind == "oracle" else te.tokens
            fit_classifier(
                model,
                x_tr,
                tr.labels,
                n_steps=steps,
                batch=32,
                seed=seed,
                progress=False,
            )
            accs[(task, kind, alpha)].append(accuracy(model, x_te, te.labels))
            rows = [
                {
                    "task": t,
                    "attention": k,
                    "alpha": a,
                    "N": None if k == "discrete" else 32,
                    "L": length,
                    "cue": 0.3 if t == "span" else DIFFUSE_CUE,
                    "steps": steps,
                    "init_var": NARROW_VAR if k == "continuous-narrow" else None,
                    **_summary(v),
                }
                for (t, k, a), v in accs.items()
                if v
            ]
            print(task, kind, alpha, accs[(task, kind, alpha)], flush=True)
            save(rows)
    return rows


def digit_sweep(quick: bool, save=lambda rows: None):
    """Seed-major like :func:`document_sweep`; ``save`` gets the rows so far."""
    n_train, n_test, steps = (100, 100, 5) if quick else (1500, 500, 400)
    seeds = (0,) if quick else _SEEDS[0]
    kw = dict(size=16, n_clutter=2, noise=0.05)

    def data(seed):
        return (
            cluttered_digits(n_train, seed=100 + 2 * seed, **kw),
            cluttered_digits(n_test, seed=101 + 2 * seed, **kw),
        )

    configs = (("discrete", 1), ("discrete", 2), ("continuous", 1), ("continuous", 2))
    accs = {c: [] for c in configs}
    rows = []
    for seed in seeds:
        tr, te = data(seed)
        for kind, alpha in configs:
            torch.manual_seed(seed)
            # 16 × 16 canvas: an 8 × 8 feature grid
            model = DigitClassifier(kind, alpha=alpha, n_side=8, channels=32)
            fit_classifier(
                model,
                tr.images,
                tr.labels,
                n_steps=steps,
                batch=32,
                lr=1.5e-3,
                seed=seed,
                progress=False,
            )
            accs[(kind, alpha)].append(accuracy(model, te.images, te.labels))
            rows = [
                {
                    "attention": k,
                    "alpha": a,
                    "steps": steps,
                    **_summary(v),
                }
                for (k, a), v in accs.items()
                if v
            ]
            print(kind, alpha, accs[(kind, alpha)], flush=True)
            save(rows)
    return rows


def main() -> None:
    parser = _common.parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        choices=("all", "timing", "documents", "controls", "digits"),
        default="all",
        help="run one part, keeping the others' results in --out",
    )
    parser.add_argument(
        "--dims",
        type=int,
        nargs="+",
        default=[1, 2],
        help="timing: which dimensions to (re)measure",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--seeds", type=int, nargs="+", help="run these seeds only (default: SEEDS)"
    )
    args = _common.parse_args(parser)
    _SEEDS[0] = tuple(seeds(args.seeds or SEEDS))  # shifted by --seed-offset
    if args.seed_offset and args.out == OUT:  # an unseen-seed re-run lands beside it
        args.out = _common.unseen_folder() / "continuous.unseen.json"
    elif (
        args.quick and args.out == OUT
    ):  # a quick run never replaces the committed results
        args.out = QUICK_RESULTS / "continuous.quick.json"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = (
        json.loads(args.out.read_text())
        if args.part != "all" and args.out.exists()
        else {}
    )
    result.update(
        {
            "benchmark": "continuous attention: closed form vs numerical integration "
            "(forward + backward)",
            "machine": machine(),
            "quick": args.quick,
            **({"seed_offset": args.seed_offset} if args.seed_offset else {}),
            "targets": {"speedup": 10.0, "accuracy_ratio": 1.0, "roundoff": ROUNDOFF},
        }
    )
    parts = {
        "timing": ("rows", timing_rows),
        "documents": ("documents", document_sweep),
        "controls": ("controls", control_sweep),
        "digits": ("digits", digit_sweep),
    }
    for name, (key, fn) in parts.items():
        if args.part in ("all", name):
            save = lambda rows, key=key: args.out.write_text(
                json.dumps({**result, key: rows}, indent=1) + "\n"
            )  # noqa: E731
            if name == "timing":
                result[key] = fn(
                    args.quick, tuple(args.dims), result.get("rows", ()), save
                )
            else:
                result[key] = fn(args.quick, save)
            result.setdefault("dates", {})[key] = datetime.now(UTC).isoformat(
                timespec="seconds"
            )
            result["date"] = result["dates"][key]
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
