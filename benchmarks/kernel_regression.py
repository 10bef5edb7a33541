"""Nadaraya–Watson kernel sums: attnlib's fused loops against KeOps and PyTorch's SDPA.

    # 10^6 keys x 10^4 queries, d = 1 and 8
    python benchmarks/kernel_regression.py
    # tiny sizes (CI)
    python benchmarks/kernel_regression.py --quick

The same Gaussian-kernel predictions ``Σ_j w_ij y_j / Σ_j w_ij``,
``w_ij = exp(-|x_i - x_j|² / (2σ²))``, computed in float32, side by side in one process,
on one thread (CPU time through ``time.process_time``, medians), for ``--n-train`` keys
and a subset of the queries per method (each method's subset is large enough to time;
throughput is reported in pairs per second):

* ``attnlib``: :func:`attnlib.kernel_regression.nadaraya_watson` (the fused compiled
  kernel of ``attnlib.kernel_regression._kernelsums``); also on every core (wall
  time);
* ``keops``: ``pykeops`` (``LazyTensor(...).sumsoftmaxweight``, the standard library for
  kernel sums without memory; it compiles with the system's C++ compiler at first use).
  Where pykeops is not installed, or does not compile, its rows say so and the run goes
  on;
* ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` on the augmented
  vectors ``q = [x, 1]``, ``k = [x_j, -|x_j|²/2]`` with ``scale = 1/σ²`` (the scores
  differ from ``-|x - x_j|²/(2σ²)`` by a constant per row, which the softmax cancels),
  in blocks of queries.

Accuracy: every method's largest error on the first ``--accuracy-queries`` queries
against a float64 reference (the same sums in float64 by PyTorch, differences formed
directly). The limit: ``torch.exp`` on one core on 16 384 float32 numbers in cache, and
the exponential of ``attnlib.utils.fastexp`` on the same; an implementation's
fraction of the limit is its pairs/s over that. ``loo``: the default
``NadarayaWatson().fit`` (leave-one-out over 30 bandwidths) at n = 1k/5k/20k, d = 3,
beside the old one-call-per-candidate choice (benchmarks/_loo.py; ``--loo-only``
re-measures that section alone in the committed result). Memory: growth of the peak
resident set (``VmHWM``, reset through ``/proc/self/clear_refs``) over the resident set
before the call, for ``nadaraya_watson`` on 2 000 x 10^6 in 1-D.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

# benchmarks/ is on sys.path
from _common import machine, median_cpu_seconds, write_result
from _loo import loo_rows, loo_targets

from attnlib.kernel_regression import nadaraya_watson
from attnlib.utils import seeds
from attnlib.utils.fastexp import _exp_array, exp_nonpositive

TARGETS = {
    "keops_over_attnlib_time_1d": 10.0,
    "keops_over_attnlib_time_8d": 3.0,
    "peak_memory_mib": 1024,
}


def problem(n_train: int, n_query: int, d: int, seed: int | None = None):
    """A smooth function on the unit cube; its bandwidth keeps ~100s of neighbours.

    The default seed is 0 shifted by ``ATTNLIB_SEED_OFFSET``
    (:func:`attnlib.utils.seeds`).
    """
    g = torch.Generator().manual_seed(seeds([0])[0] if seed is None else seed)
    x_train, x_query = (
        torch.rand(n_train, d, generator=g),
        torch.rand(n_query, d, generator=g),
    )
    y = torch.sin(2 * math.pi * x_train.sum(1)) + 0.1 * torch.randn(
        n_train, generator=g
    )
    return x_query, x_train, y, 0.05 * math.sqrt(d)


def reference(x_query, x_train, y, bandwidth):
    """The predictions in float64, each query's differences formed directly.

    No expansion of the squared distance.
    """
    xt, yy = x_train.double(), y.double()
    out = []
    for q in x_query.double():
        s = -((q - xt) ** 2).sum(1) / (2 * bandwidth**2)
        w = torch.exp(s - s.max())
        out.append((w @ yy) / w.sum())
    return torch.stack(out)


def sdpa(x_query, x_train, y, bandwidth, block: int = 50):
    q = torch.cat([x_query, torch.ones_like(x_query[:, :1])], 1)
    k = torch.cat([x_train, -0.5 * (x_train * x_train).sum(1, keepdim=True)], 1)[
        None, None
    ]
    v = y[None, None, :, None]
    return torch.cat(
        [
            F.scaled_dot_product_attention(
                q[None, None, i : i + block], k, v, scale=1 / bandwidth**2
            )[0, 0, :, 0]
            for i in range(0, len(q), block)
        ]
    )


def keops_method():
    """KeOps's Nadaraya–Watson (a stable softmax-weighted sum), or why it cannot run."""
    try:
        from pykeops.torch import LazyTensor
    except Exception as e:  # noqa: BLE001 - any import failure means: not available here
        return None, f"pykeops not available ({type(e).__name__})"

    def run(x_query, x_train, y, bandwidth):
        d2 = (
            (LazyTensor(x_query[:, None, :]) - LazyTensor(x_train[None, :, :])) ** 2
        ).sum(-1)
        return (-d2 * (0.5 / bandwidth**2)).sumsoftmaxweight(
            LazyTensor(y[None, :, None]), axis=1
        )[:, 0]

    try:
        g = torch.Generator().manual_seed(1)
        run(
            torch.rand(3, 1, generator=g),
            torch.rand(50, 1, generator=g),
            torch.rand(50, generator=g),
            0.1,
        )
    except Exception as e:  # noqa: BLE001 - a compiler problem must not stop the benchmark
        return None, f"pykeops failed to run ({type(e).__name__}: {str(e)[:80]})"
    import pykeops

    return run, f"pykeops {pykeops.__version__}"


def exp_limits(repeats: int = 7) -> dict:
    """Exponentials per second on one core, in cache: torch.exp and attnlib's exp."""
    x = -torch.rand(16384, generator=torch.Generator().manual_seed(0)) * 80
    out = torch.empty_like(x)
    xn, outn = x.numpy(), out.numpy().copy()
    # loads the compiled loop, timed below without the checks around it
    exp_nonpositive(xn)
    rates = {}
    for name, fn in {
        "torch.exp": lambda: torch.exp(x, out=out),
        "attnlib exp": lambda: _exp_array(xn, outn),
    }.items():
        t, _ = median_cpu_seconds(lambda fn=fn: [fn() for _ in range(200)], repeats)
        rates[name] = 200 * x.numel() / t
    return rates


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_growth_mib(fn) -> float:
    """Growth of the peak resident set during ``fn()`` over the set before it (MiB)."""
    before = _status_mib("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        return float("nan")
    fn()
    return _status_mib("VmHWM") - before


def fresh_peak_mib(n_query: int, n_train: int) -> float:
    """:func:`peak_growth_mib` of one 1-D ``nadaraya_watson`` call, in a fresh process.

    A process that has already allocated and freed memory (as this benchmark has, by
    the time it gets here) serves the call from pages it holds and shows no growth;
    a fresh interpreter that has only built the problem (and loaded the compiled
    kernel with a tiny call) shows what the call needs.
    """
    code = (
        "import sys, torch; torch.set_num_threads(1); "
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
        "import kernel_regression as b; "
        f"xq, xt, y, h = b.problem({n_train}, {n_query}, 1); "
        # one tiny call first: loading the compiled loops is not the call's memory
        "b.nadaraya_watson(xq[:2, 0], xt[:2, 0], y[:2], bandwidth=h); "
        "print(b.peak_growth_mib("
        "lambda: b.nadaraya_watson(xq[:, 0], xt[:, 0], y, bandwidth=h)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(run.stdout.strip().splitlines()[-1])


def update_memory(n_query: int, n_train: int, path: Path) -> float:
    """Re-measure only the peak memory (in a fresh process) in the committed result."""
    record = json.loads(path.read_text())
    peak = fresh_peak_mib(n_query, n_train)
    record["memory_method"] = MEMORY_METHOD
    record["peak_memory_mib"].update(
        n_query=n_query, n_train=n_train, value=round(peak, 1)
    )
    for name, target in record["targets"].items():
        if name.startswith("peak memory"):
            target.update(value=round(peak, 1), met=bool(peak <= target["target"]))
    path.write_text(json.dumps(record, indent=1) + "\n")
    return peak


MEMORY_METHOD = (
    "growth of VmHWM over VmRSS, VmHWM reset via /proc/self/clear_refs before the "
    "call, in a fresh Python process that has only built the problem and loaded the "
    "kernel"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--n-train", type=int, default=1_000_000)
    parser.add_argument(
        "--n-query",
        type=int,
        default=10_000,
        help="queries of the problem (attnlib runs them all)",
    )
    parser.add_argument(
        "--keops-queries", type=int, default=1000, help="queries timed for KeOps"
    )
    parser.add_argument(
        "--sdpa-queries", type=int, default=200, help="queries timed for SDPA"
    )
    parser.add_argument("--accuracy-queries", type=int, default=100)
    parser.add_argument("--memory-queries", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--memory-only",
        action="store_true",
        help="re-measure only the peak memory in the committed result",
    )
    parser.add_argument("--loo-only", action="store_true", help="re-measure loo alone")
    args = parser.parse_args()
    if args.loo_only:
        path = Path(__file__).resolve().parent.parent / "attnlib" / "results"
        record = json.loads((path / "kernel_regression.json").read_text())
        record["loo"] = loo_rows((1000, 5000, 20000))
        record["targets"].update(loo_targets(record["loo"]))
        (path / "kernel_regression.json").write_text(
            json.dumps(record, indent=1) + "\n"
        )
        return
    if args.memory_only:
        path = Path(__file__).resolve().parent.parent / "attnlib" / "results"
        peak = update_memory(
            args.memory_queries, args.n_train, path / "kernel_regression.json"
        )
        print(f"peak memory, fresh process: +{peak:.1f} MiB")
        return
    if args.quick:
        args.n_train, args.n_query, args.keops_queries, args.sdpa_queries = (
            10_000,
            200,
            50,
            50,
        )
        args.accuracy_queries, args.memory_queries, args.repeats = 20, 100, 1
    cores = len(os.sched_getaffinity(0))
    default_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    keops, keops_note = keops_method()
    print(keops_note, flush=True)
    limits = exp_limits(7 if not args.quick else 1)
    print(
        "exp limits (G/s): "
        + ", ".join(f"{k} {v / 1e9:.2f}" for k, v in limits.items()),
        flush=True,
    )

    rows = []
    for d in (1, 8):
        xq, xt, y, h = problem(args.n_train, args.n_query, d)
        nw = lambda q, xt=xt, y=y, h=h: nadaraya_watson(q, xt, y, bandwidth=h)  # noqa: E731
        nw(xq[:2])  # loads (or, once, compiles) the kernel
        ref = reference(xq[: args.accuracy_queries], xt, y, h)
        methods = [("attnlib nadaraya_watson (fused)", 1, args.n_query, nw)]
        if keops is not None:
            methods.append(
                (
                    "keops sumsoftmaxweight",
                    1,
                    args.keops_queries,
                    lambda q, xt=xt, y=y, h=h: keops(q, xt, y, h),
                )
            )
        methods.append(
            (
                "torch sdpa (augmented vectors)",
                1,
                args.sdpa_queries,
                lambda q, xt=xt, y=y, h=h: sdpa(q, xt, y, h),
            )
        )
        methods.append(
            (
                f"attnlib nadaraya_watson (fused), {cores} threads",
                cores,
                args.n_query,
                nw,
            )
        )
        for name, threads, n_q, fn in methods:
            torch.set_num_threads(threads)
            q = xq[:n_q]
            fn(xq[:2])
            if threads == 1:
                seconds, _ = median_cpu_seconds(lambda fn=fn, q=q: fn(q), args.repeats)
                clock = "cpu (process_time)"
            else:
                start = time.perf_counter()
                fn(q)
                seconds, clock = time.perf_counter() - start, "wall (perf_counter)"
            error = float((fn(xq[: args.accuracy_queries]).double() - ref).abs().max())
            torch.set_num_threads(1)
            pairs = n_q * args.n_train / seconds
            rows.append(
                {
                    "d": d,
                    "n_train": args.n_train,
                    "queries_timed": n_q,
                    "bandwidth": round(h, 4),
                    "dtype": "float32",
                    "method": name,
                    "threads": threads,
                    "clock": clock,
                    "seconds": round(seconds, 4),
                    "pairs_per_s": float(f"{pairs:.4g}"),
                    "fraction_of_torch_exp": round(pairs / limits["torch.exp"], 3),
                    "fraction_of_attnlib_exp": round(pairs / limits["attnlib exp"], 3),
                    "max_abs_error_vs_float64": float(f"{error:.3g}"),
                }
            )
            print(
                f"d={d} {name:48s} {pairs / 1e6:10.1f} M pairs/s ({clock}), max error "
                f"{error:.2e}",
                flush=True,
            )
        if keops is None:
            rows.append(
                {
                    "d": d,
                    "n_train": args.n_train,
                    "method": "keops sumsoftmaxweight",
                    "note": keops_note,
                }
            )

    loo = loo_rows((1000, 2000) if args.quick else (1000, 5000, 20000), args.repeats)
    peak = fresh_peak_mib(args.memory_queries, args.n_train)
    print(
        f"peak memory of nadaraya_watson, {args.memory_queries} x {args.n_train} "
        f"(1-D): +{peak:.1f} MiB"
    )
    torch.set_num_threads(default_threads)

    by = {(r["d"], r["method"]): r for r in rows if "pairs_per_s" in r}
    ours = {d: by[d, "attnlib nadaraya_watson (fused)"]["pairs_per_s"] for d in (1, 8)}
    summary = {}
    for d in (1, 8):
        row = {
            "attnlib_pairs_per_s": ours[d],
            "sdpa_over_attnlib_time": round(
                ours[d] / by[d, "torch sdpa (augmented vectors)"]["pairs_per_s"], 2
            ),
        }
        if (d, "keops sumsoftmaxweight") in by:
            row["keops_over_attnlib_time"] = round(
                ours[d] / by[d, "keops sumsoftmaxweight"]["pairs_per_s"], 2
            )
        row["fraction_of_torch_exp"] = by[d, "attnlib nadaraya_watson (fused)"][
            "fraction_of_torch_exp"
        ]
        summary[f"d={d}"] = row
    met = {
        "keops_over_attnlib_time_1d": summary["d=1"].get("keops_over_attnlib_time"),
        "keops_over_attnlib_time_8d": summary["d=8"].get("keops_over_attnlib_time"),
    }
    targets = {
        "attnlib >= 10x KeOps's throughput, 1-D": {
            "target": TARGETS["keops_over_attnlib_time_1d"],
            "value": met["keops_over_attnlib_time_1d"],
            "met": None
            if met["keops_over_attnlib_time_1d"] is None
            else met["keops_over_attnlib_time_1d"] >= 10,
        },
        "attnlib >= 3x KeOps's throughput, 8-D": {
            "target": TARGETS["keops_over_attnlib_time_8d"],
            "value": met["keops_over_attnlib_time_8d"],
            "met": None
            if met["keops_over_attnlib_time_8d"] is None
            else met["keops_over_attnlib_time_8d"] >= 3,
        },
        f"peak memory <= 1024 MiB at {args.memory_queries} x {args.n_train}": {
            "target": 1024,
            "value": round(peak, 1),
            "met": bool(peak <= 1024),
        },
    }
    targets.update(loo_targets(loo))
    for name, t in targets.items():
        verdict = (
            "met" if t["met"] else "NOT met" if t["met"] is False else "not measured"
        )
        print(f"{name}: {t['value']} ({verdict})")
    record = {
        "benchmark": "fused Nadaraya-Watson kernel sums (attnlib) vs KeOps and torch "
        "SDPA, Gaussian kernel, float32",
        "machine": machine(pykeops=keops_note),
        "command": "python benchmarks/kernel_regression.py"
        + (" --quick" if args.quick else ""),
        "exp_limits_per_s": {k: float(f"{v:.4g}") for k, v in limits.items()},
        "memory_method": MEMORY_METHOD,
        "peak_memory_mib": {
            "n_query": args.memory_queries,
            "n_train": args.n_train,
            "d": 1,
            "dtype": "float32",
            "value": round(peak, 1),
        },
        "rows": rows,
        "loo": loo,
        "summary": summary,
        "targets": targets,
    }
    print(f"wrote {write_result('kernel_regression', record, args.quick)}")


if __name__ == "__main__":
    main()
