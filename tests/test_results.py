"""Every committed result is falsifiable: a slice of it is recomputed from today's code.

``attnlib/results/<name>.json`` holds what ``benchmarks/<name>.py`` measured in a full
run, and chapters display it (their claims about it are consistency checks). Here, for
every committed file, one slice (one seed, the smallest size) is recomputed with the
benchmark's own functions and compared with the committed number, within the tolerance
the chapter relies on. A change of the code that alters a committed number fails here;
then re-run the benchmark and commit its result.

The tests read the JSON (never a typed value), so a re-run sweep needs no edit here.
Timings (``*_ms``, ``*_s``, ``seconds``, speed-ups, ratios of times, first-call times)
are measurements of a machine, not results of the code: they are not recomputed. For a
file whose numbers are all timings (normalizers), the slice recomputes what the timed
rows stand on: that the rows are the benchmark's configurations and that the maps timed
compute the same function as their peer.

Each slice is also shown to fail on a copy of the committed result with its value
moved just beyond the tolerance (``test_a_moved_committed_number_fails``); the
recomputation is cached, so that costs nothing. About 30 s on one core.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlib import results
from attnlib.mux.experiments import runs as routing_runs
from attnlib.subspace.experiments import runs as self_expression_runs

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


def bench(name: str):
    """``benchmarks/<name>.py`` as a module (its ``main`` is not run)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", BENCHMARKS / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Check:
    """A recomputed number and where its committed twin sits in the result."""

    what: str
    path: tuple
    value: float
    rtol: float = 0.0
    atol: float = 0.0
    #: compare orders of magnitude: ``atol`` is then in decades (log10 units)
    log10: bool = False

    def committed(self, result: dict):
        if self.path and self.path[0] == "count":  # ("count", list key, fields)
            _, key, fields = self.path
            return sum(all(r.get(k) == v for k, v in fields) for r in result[key])
        node = result
        for key in self.path:
            node = node[key]
        return node

    def holds(self, result: dict) -> bool:
        a, b = self.committed(result), self.value
        if self.log10:
            a, b = math.log10(a), math.log10(b)
        return math.isclose(a, b, rel_tol=self.rtol, abs_tol=self.atol)

    def report(self, result: dict) -> str:
        return (
            f"{self.what}: committed {self.committed(result)!r}, recomputed "
            f"{self.value!r} (rtol {self.rtol}, atol {self.atol}); "
            f"path {'/'.join(map(str, self.path))}"
        )


def _index(rows: list, **match) -> int:
    """The index of the one row whose fields equal ``match``."""
    found = [
        i for i, r in enumerate(rows) if all(r.get(k) == v for k, v in match.items())
    ]
    assert len(found) == 1, f"{len(found)} rows match {match}"
    return found[0]


# the sweeps ran on one thread, and the recomputation does too
pytestmark = pytest.mark.usefixtures("one_thread")


# ----------------------------------------------------------------- one slice per file
def slice_continuous(result: dict) -> list[Check]:
    """The closed form's error against the fine trapezoid (1-D, smallest N, both α), and
    one document run (discrete attention, α = 1, the sweep's first seed)."""
    b = bench("continuous")
    checks = []
    rows = result["rows"]
    n_min = min(r["N"] for r in rows if r["dim"] == 1)
    for alpha in (2, 1):
        i = _index(rows, dim=1, N=n_min, alpha=alpha)
        basis = b.GaussianRBF.linspace(n_min, sigmas=(0.05, 0.2))
        mu, s = b.inputs(1, rows[i]["batch"])
        weights = torch.randn(
            rows[i]["batch"],
            len(basis),
            dtype=torch.float64,
            generator=torch.Generator().manual_seed(1),
        )
        sub = slice(0, min(rows[i]["batch"], 16))
        ref = b.value_and_grads(
            lambda m, v, alpha=alpha, basis=basis: b.quad_1d(
                m, v, basis, alpha, 20_000
            ),
            mu[sub],
            s[sub],
            weights[sub],
        )
        out = b.value_and_grads(
            lambda m, v, alpha=alpha, basis=basis: b.continuous_attention_1d(
                m, v, basis, alpha
            ),
            mu,
            s,
            weights,
        )
        err = max(
            ((a[sub] - r).abs().max() / r.abs().max()).item() for a, r in zip(out, ref)
        )
        # α = 2 is accurate to ~1e-8 (its erf differences); α = 1 to round-off, which
        # the chapter reads only as "below 1e-12" (the benchmark's ROUNDOFF)
        tol = dict(rtol=1e-3) if alpha == 2 else dict(atol=0.1 * b.ROUNDOFF)
        checks.append(
            Check(f"1-D α={alpha} N={n_min} closed-form error", (
                "rows", i, "closed_max_rel_err"), err, **tol)
        )  # fmt: skip
    docs = result["documents"]
    # discrete softmax, and combined sparsemax at the smallest N, whose continuous half
    # goes through the ridge fit (a float32 normal-equation solve changed these rows)
    n_min = min(r["N"] for r in docs if r["N"] is not None)
    for kind, alpha, n in (("discrete", 1, None), ("combined", 2, n_min)):
        i = _index(docs, attention=kind, alpha=alpha, N=n)
        row = docs[i]
        tr = b.span_documents(1500, row["L"], seed=100)  # the sweep's seed 0
        te = b.span_documents(1000, row["L"], seed=101)
        torch.manual_seed(0)
        model = b.DocumentClassifier(48, kind, alpha=alpha, n_basis=n or 32)
        b.fit_classifier(
            model, tr.tokens, tr.labels, n_steps=row["steps"], batch=32, seed=0,
            progress=False,
        )  # fmt: skip
        acc = b.accuracy(model, te.tokens, te.labels)
        # Training is chaotic in round-off: another CPU and torch (an H100 machine's
        # host, torch 2.11) gave 0.948 for the committed 0.957, and so did a change of
        # the scores' rounding in attention() (0.946). 15 of 1000 test documents:
        # far below the chapter's gaps to chance (0.4) and between combined sparsemax
        # and softmax (0.05).
        checks.append(
            Check(f"documents, {kind} α={alpha} N={n}, seed 0, accuracy",
                  ("documents", i, "accs", 0), acc, atol=0.015)
        )  # fmt: skip
    return checks


def slice_denoise(result: dict) -> list[Check]:
    """The float32/float64 NLM against the NumPy restatement (the one size committed),
    the PSNRs of seed 0 at the lowest noise (noisy, Gaussian filter and exact NLM at
    their committed settings, and the learned one-head denoiser), and seed 0 of the CNN
    baseline (its smallest CNN, exact NLM and the Gaussian filter)."""
    from attnlib.denoise.experiments.cnn import baseline_run

    b = bench("denoise")
    checks = []
    for row in b.accuracy_rows(False):
        j = _index(result["accuracy_rows"], dtype=row["dtype"])
        tol = dict(atol=1e-14) if row["dtype"] == "float64" else dict(rtol=0.1)
        checks.append(
            Check(f"NLM {row['dtype']} max |ours - NumPy|",
                  ("accuracy_rows", j, "max_abs_diff"), row["max_abs_diff"], **tol)
        )  # fmt: skip
    rows = result["quality_rows"]
    noise = min(r["noise"] for r in rows)
    size = 64
    camera = b.img_as_float(b.data.camera())
    clean = camera[60 : 60 + size, 200 : 200 + size]
    noisy = clean + noise * np.random.default_rng(0).standard_normal(clean.shape)

    def setting(method):
        return rows[_index(rows, seed=0, noise=noise, method=method)]["setting"]

    width = float(setting("Gaussian filter").split()[-1])
    factor = float(setting("attnlib NLM (exact)").split()[-1].rstrip("σ"))
    outs = {
        "noisy": noisy,
        "Gaussian filter": b.ndimage.gaussian_filter(noisy, width),
        "attnlib NLM (exact)": b.nonlocal_means(
            noisy, patch_size=5, patch_distance=6, h=factor * noise, sigma=noise
        ),
    }
    model = b.trained_denoiser(noise, 1, 120, 16, 0)
    with torch.no_grad():
        outs["learned, 1 head"] = model(
            torch.tensor(noisy, dtype=torch.float32)
        ).numpy()
    for method, out in outs.items():
        # PSNRs are committed to 3 decimals; the chapter reads gaps of >= 0.1 dB
        tol = 0.05 if method.startswith("learned") else 0.002
        j = _index(rows, seed=0, noise=noise, method=method)
        checks.append(
            Check(f"PSNR, seed 0, noise {noise}, {method}",
                  ("quality_rows", j, "psnr_db"), round(b.psnr(clean, out), 3),
                  atol=tol)
        )  # fmt: skip
    base = result["baseline_rows"]
    fresh = baseline_run(0, widths=(4,), heads=(), **b.BASELINE)["psnr"]
    for method in ("Gaussian filter", "exact NLM", "CNN, width 4"):
        j = _index(base, run="sweep", seed=0, method=method)
        checks.append(
            Check(f"baseline PSNR, seed 0, {method}", ("baseline_rows", j, "psnr_db"),
                  round(fresh[method], 4), atol=0.05 if "CNN" in method else 0.002)
        )  # fmt: skip
    return checks


def slice_kernel_regression(result: dict) -> list[Check]:
    """The fused kernel's largest error against the float64 sums, 1-D, on the
    benchmark's accuracy queries (its default, 100) of its problem."""
    b = bench("kernel_regression")
    rows = result["rows"]
    i = _index(rows, d=1, method="attnlib nadaraya_watson (fused)")
    xq, xt, y, h = b.problem(rows[i]["n_train"], 100, 1)
    ref = b.reference(xq, xt, y, h)
    error = float(
        (b.nadaraya_watson(xq, xt, y, bandwidth=h).double() - ref).abs().max()
    )
    # A largest round-off error: its digits depend on the CPU's vector width and FMA
    # (on an H100 machine's host it moved by more than 10 %; on an AVX2-only AMD EPYC
    # it was 2.04 times the committed one), and the chapter reads only that it is the
    # smallest of the methods' errors (the next is 13 to 28 times larger): within a
    # factor of about 3 (0.5 decades).
    return [
        Check("1-D fused max error vs float64", ("rows", i, "max_abs_error_vs_float64"),
              error, atol=0.5, log10=True)
    ]  # fmt: skip


def slice_lle(result: dict) -> list[Check]:
    """The smallest swiss roll: attnlib's reconstruction error and its embedding's
    largest difference from scikit-learn's."""
    b = bench("lle")
    rows = result["rows"]
    i = min(range(len(rows)), key=lambda j: rows[j]["n_samples"])
    X, _ = b.make_swiss_roll(rows[i]["n_samples"], random_state=0)
    fits = b.estimators(rows[i]["n_neighbors"])
    ours, theirs = fits["attnlib"].fit(X), fits["sklearn"].fit(X)
    signs = np.sign((ours.embedding_ * theirs.embedding_).sum(0))
    diff = float(np.abs(ours.embedding_ - theirs.embedding_ * signs).max())
    return [
        Check("reconstruction error", ("rows", i, "attnlib_reconstruction_error"),
              float(ours.reconstruction_error_), rtol=1e-6),
        # round-off level; the chapter reads it against the 1e-6 target
        Check("max |attnlib - sklearn| embedding",
              ("rows", i, "max_abs_embedding_difference"), diff, atol=1e-8),
    ]  # fmt: skip


def slice_calls(result: dict) -> list[Check]:
    """Every number of calls.json but two is a time. Recomputed: the timed rows are the
    benchmark's calls today (a count per call: a call added to the library, such as an
    SDPA-shaped function, needs a re-run), each call's largest difference from the
    peers computing the same function (within the benchmark's tolerance, 1e-4), and
    the bandwidth the default NadarayaWatson fit chooses at n = 1 000 (its data and
    seed)."""
    import json
    import subprocess

    b = bench("calls")
    cpu = torch.device("cpu")
    torch.manual_seed(0)
    specs = b.normalizer_rows(cpu, False) + b.attention_rows(cpu, False)
    specs += b.mha_rows(cpu, False)
    checks = []
    for spec in specs:
        fields = (("call", spec["call"]),)
        checks.append(Check(f"one timed row {spec['call']}", ("count", "rows", fields),
                            1.0))  # fmt: skip
        i = _index(result["rows"], call=spec["call"])
        for key, value in b.agreement(spec).items():
            checks.append(Check(f"{spec['call']}: {key}", ("rows", i, key), value,
                                atol=b.AGREE_ATOL))  # fmt: skip
    i = _index(result["fits"], n=1000)
    run = [sys.executable, "-c", b.FIT, "1000", str(b.FIT_DIM), "1"]
    done = subprocess.run(run, check=True, capture_output=True, text=True)
    fresh = json.loads(done.stdout)
    checks.append(Check("bandwidth chosen at n = 1000", ("fits", i, "bandwidth"),
                        fresh["bandwidth"], rtol=1e-9))  # fmt: skip
    return checks


def slice_normalizers(result: dict) -> list[Check]:
    """Every number of normalizers.json is a time. Recomputed: the timed rows are the
    benchmark's configurations today (a count per configuration), and on the first 256
    rows of the benchmark's first input (its seed), attnlib's maps give the entmax
    package's values and gradients (checked here, as the benchmark asserts before
    timing)."""
    b = bench("normalizers")
    checks = []
    for shape in b.SHAPES:
        for scale in b.SCALES:
            for name, _, _ in b.METHODS:
                fields = (("method", name), ("shape", list(shape)), ("scale", scale))
                checks.append(
                    Check(f"one timed row {name} {shape} ×{scale}",
                          ("count", "rows", fields), 1.0)
                )  # fmt: skip
    torch.manual_seed(0)
    shape, scale = b.SHAPES[0], b.SCALES[0]
    x, g = torch.randn(*shape) * scale, torch.randn(*shape)
    x, g = x[:256], g[:256]  # a slice of rows: each row is normalised on its own
    for name, ours, theirs in b.METHODS:
        diff = (b.OURS[ours](x) - theirs(x)).abs().max().item()
        grad = (b.fwd_bwd(b.OURS[ours], x, g) - b.fwd_bwd(theirs, x, g)).abs().max()
        assert diff < 1e-4 and grad.item() < 1e-3, (name, diff, grad.item())
    return checks


def slice_normalizers_gpu(result: dict) -> list[Check]:
    """Every number of normalizers_gpu.json is a time on a GPU that CI does not have.
    Recomputed: the timed rows are the GPU section's configurations today (a count per
    map, shape, scale and dtype), and the attention row its shape; on the CPU, on 256
    rows of the first shape, the engine that CUDA dispatches to
    (normalizers._entmax) gives the entmax package's values and gradients in both
    dtypes (as the GPU section's peers)."""
    import entmax as E

    from attnlib.normalizers import _entmax as engine

    b = bench("normalizers")
    checks = [
        Check(f"one timed row {m} {list(shape)} ×{scale} {dtype}",
              ("count", "rows", (("map", m), ("shape", list(shape)), ("scale", scale),
                                 ("dtype", dtype))), 1.0)
        for shape in b.GPU_SHAPES for scale in b.SCALES
        for dtype in ("float32", "bfloat16")
        for m in ("sparsemax", "entmax15", "entmax a=1.25")
    ]  # fmt: skip
    checks += [
        Check(f"attention shape, axis {i}", ("attention", "shape", i), n, atol=0.5)
        for i, n in enumerate(b.ATTENTION_SHAPE)  # integers: equal, or 1 apart
    ]
    assert len(result["attention"]["shape"]) == len(b.ATTENTION_SHAPE)
    torch.manual_seed(0)
    x, g = torch.randn(256, b.GPU_SHAPES[0][1]) * b.SCALES[-1], torch.randn(256, 1)
    for dtype, atol in ((torch.float32, 1e-6), (torch.bfloat16, 8e-3)):
        xd = x.to(dtype)
        for alpha, peer in ((2, E.sparsemax), (1.5, E.entmax15)):
            p = engine.threshold_map(
                xd, xd.amax(-1, keepdim=True), alpha, torch.float32
            )
            ref = xd.float().clone().requires_grad_()  # a leaf of its own
            (peer(ref, -1) * g).sum().backward()
            q = peer(ref, -1).detach()
            grad = engine.entmax_vjp(p, g.expand_as(p), alpha, differentiable=False)
            assert (p - q).abs().max() < atol, (dtype, alpha)
            assert (grad - ref.grad).abs().max() < 10 * atol, (dtype, alpha)
    return checks


def slice_subspace(result: dict) -> list[Check]:
    """The λ sweep's chosen setting on its first seed, and the default estimator on the
    first fresh seed (N = 1000, the smallest)."""
    b = bench("subspace")
    sweep = result["sweep"]
    lam, norm = sweep["chosen"]["lam"], sweep["chosen"]["normalize"]
    i = _index(sweep["table"], lam=lam, normalize=norm)
    got = b.sweep(
        sweep["N"], sweep["seeds"][:1], [lam], (None if norm == "None" else norm,)
    )[0]["accuracies"][0]
    fresh = result["defaults_fresh"]
    data = b.union_of_subspaces(5, 6, 9, fresh["N"] // 5, seed=fresh["seeds"][0])
    model = b.SubspaceClustering(5).fit(data.X)
    # one point in N = 1000 is 0.001: the chapter reads differences of >= 0.01
    return [
        Check(f"SSC λ={lam}, seed {sweep['seeds'][0]}",
              ("sweep", "table", i, "accuracies", 0), got, atol=0.0015),
        Check(f"SubspaceClustering default, seed {fresh['seeds'][0]}",
              ("defaults_fresh", "accuracies", 0),
              b.clustering_accuracy(data.labels, model.labels_), atol=0.0015),
        Check(f"its spectral labels, seed {fresh['seeds'][0]}",
              ("defaults_fresh", "accuracies_ssc", 0),
              b.clustering_accuracy(data.labels, model.spectral_labels_), atol=0.0015),
    ]  # fmt: skip


def slice_symmetry(result: dict) -> list[Check]:
    """Every learner on the quadratic teacher, the smallest training set, first seed."""
    b = bench("symmetry")
    config = result["config"]
    n, seed = min(config["sizes"]), config["seeds"][0]
    fresh = b.sample_efficiency(
        [n], [seed], teacher="quadratic", learners=config["learners"],
        grid=config["grid"], n_test=config["n_test"], progress=False,
    )  # fmt: skip
    rows = result["rows"]
    checks = []
    for row in fresh:
        i = _index(rows, teacher="quadratic", model=row["model"], n_train=n, seed=seed)
        # trained in float32: 2 % is float noise; the chapter reads ratios of 3-10
        checks.append(
            Check(f"{row['model']} test error (n={n}, seed {seed})",
                  ("rows", i, "test_n6"), row["test_n6"], rtol=0.02)
        )  # fmt: skip
    return checks


def slice_self_expression(result: dict) -> list[Check]:
    """The normalised-coefficient comparison on its first seed (the sweep's rows)."""
    row = result["normalized"][0]
    fresh = self_expression_runs.normalized_run(row["seed"])
    # Accuracies of 300 points: 0.02 is six points; the chapter reads gaps of >= 0.05.
    # The row near chance (sparsemax of |C|/0.1, about 0.22) moved by four points
    # between two machines' BLAS (0.2267 committed, 0.2133 on an EPYC with OpenBLAS's
    # Haswell kernels): spectral clustering of a near-uniform affinity is that fragile.
    return [
        Check(f"{key} (seed {row['seed']})", ("normalized", 0, key), value, atol=0.02)
        for key, value in fresh.items()
        if key != "seed"
    ]


def slice_mux(result: dict) -> list[Check]:
    """The weekday multiplexers and the two-layer wide stack, on the first seed."""
    week = result["weekday"][0]
    checks = [
        Check(f"weekday {key} (seed {week['seed']})", ("weekday", 0, key), value,
              atol=0.01)
        for key, value in routing_runs.weekday_run(week["seed"]).items()
        if key != "seed"
    ]  # fmt: skip
    wide = result["wide_stacks"][0]
    checks.append(
        Check(f"wide stack, two layers (seed {wide['seed']})", ("wide_stacks", 0, "2"),
              routing_runs.wide_stack_run(wide["seed"], 2), atol=0.01)
    )  # fmt: skip
    return checks


SLICES = {
    "calls": slice_calls,
    "continuous": slice_continuous,
    "denoise": slice_denoise,
    "kernel_regression": slice_kernel_regression,
    "lle": slice_lle,
    "mux": slice_mux,
    "normalizers": slice_normalizers,
    "normalizers_gpu": slice_normalizers_gpu,
    "self_expression": slice_self_expression,
    "subspace": slice_subspace,
    "symmetry": slice_symmetry,
}


@functools.cache
def recomputed(name: str) -> tuple[Check, ...]:
    return tuple(SLICES[name](results.load(name)))


# ----------------------------------------------------------------- the tests
# A sweep re-run once on seeds nobody chose (``benchmarks/<name>.py --seed-offset K``)
# lands beside its committed result as ``<name>.unseen``; the chapter reads it to say
# whether its claim held there. Its slice is its base result's: the same code.
UNSEEN = ".unseen"


def _base_names() -> list[str]:
    return sorted({n.removesuffix(UNSEEN) for n in results.names()})


def test_every_committed_result_has_a_slice():
    assert sorted(SLICES) == _base_names(), (
        "a committed result without a recomputed slice (or a slice without its file)"
    )


@pytest.mark.parametrize(
    "name", [n for n in results.names() if n.endswith(UNSEEN)] or [None]
)
def test_an_unseen_rerun_is_a_full_run_at_an_unseen_offset_of_its_sweep(name):
    if name is None:
        pytest.skip("no sweep has been re-run at an unseen offset")
    rerun, base = results.load(name), results.load(name.removesuffix(UNSEEN))
    assert rerun["seed_offset"] >= 10_000, "an unseen offset is at least 10 000"
    assert base.get("seed_offset", 0) == 0, "the committed sweep is the offset-0 run"
    assert set(rerun) <= set(base) | {"seed_offset", "note", "quick"}, (
        "the re-run writes what its sweep writes"
    )


@pytest.mark.parametrize("name", sorted(SLICES))
def test_a_slice_of_the_committed_result_is_recomputed(name):
    result = results.load(name)
    checks = recomputed(name)
    assert checks, f"{name}: the slice recomputes nothing"
    failed = [c.report(result) for c in checks if not c.holds(result)]
    assert failed == [], f"{name}.json no longer matches today's code:\n" + "\n".join(
        failed
    )


@pytest.mark.parametrize("name", sorted(SLICES))
def test_a_moved_committed_number_fails(name):
    """Each checked number, moved just beyond its tolerance in a copy, is caught."""
    result = results.load(name)
    for check in recomputed(name):
        moved = copy.deepcopy(result)
        if check.path[0] == "count":  # a configuration's timed row goes missing
            _, key, fields = check.path
            moved[key] = [
                r for r in moved[key] if not all(r.get(k) == v for k, v in fields)
            ]
        else:
            node = moved
            for key in check.path[:-1]:
                node = node[key]
            # beyond the tolerance from the number recomputed on this machine (a
            # round-off error may differ from the committed one by CPU)
            now = check.value
            step = max(check.atol, check.rtol * abs(now)) * 1.5 + 1e-300
            node[check.path[-1]] = now * 10**step if check.log10 else now + step
        assert not _holds_everywhere(name, moved), check.what


def _holds_everywhere(name: str, result: dict) -> bool:
    return all(c.holds(result) for c in recomputed(name))
