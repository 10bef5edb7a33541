"""Streaming Nadaraya–Watson against a dense implementation and PyTorch's fused attention.

    python benchmarks/kernel_regression.py            # the issue's sizes: 10^6 train x 10^4 queries
    python benchmarks/kernel_regression.py --quick    # tiny sizes, < 30 s (CI)
    python benchmarks/kernel_regression.py --n-query 1000 --repeats 1

Three ways of computing the same Gaussian-kernel predictions, in one process, in float32:

* ``streaming``: :func:`attnlib.kernel_regression.nadaraya_watson_streaming` (online softmax
  over blocks of the training set);
* ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` on the augmented vectors
  ``q = [x, 1]``, ``k = [x_j, -||x_j||²/2]`` with ``scale = 1/σ²`` — the scores differ from
  ``-||x - x_j||²/(2σ²)`` by ``-||x||²/(2σ²)``, constant along each row, so the softmax is
  the same;
* ``dense``: :func:`attnlib.kernel_regression.nadaraya_watson` (the full weight matrix via
  ``attention()``), applied to ``--dense-queries`` queries at a time so that it fits.

Peak memory is the growth of the process's peak resident set (``VmHWM`` in
``/proc/self/status``, reset through ``/proc/self/clear_refs`` before each call) over the
resident set before the call: everything the method allocates, inputs excluded.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlib.kernel_regression import nadaraya_watson, nadaraya_watson_streaming

from _common import machine, write_result  # benchmarks/ is on sys.path when a script runs

TARGETS = {"peak_memory_mib": 1024, "streaming_over_sdpa_time": 1.5}


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(fn, repeats: int):
    """Median seconds over ``repeats`` calls, peak extra resident memory (MiB), and the last result."""
    times, peaks, out = [], [], None
    for _ in range(repeats):
        del out
        before = _status_mib("VmRSS")
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        except OSError:
            pass
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
        peaks.append(_status_mib("VmHWM") - before)
    return statistics.median(times), max(peaks), out


def problem(n_train: int, n_query: int, d: int, seed: int = 0):
    """A smooth function of the inputs on the unit cube, with a bandwidth that keeps ~100s of neighbours."""
    g = torch.Generator().manual_seed(seed)
    x_train, x_query = torch.rand(n_train, d, generator=g), torch.rand(n_query, d, generator=g)
    y = torch.sin(2 * math.pi * x_train.sum(1)) + 0.1 * torch.randn(n_train, generator=g)
    bandwidth = 0.05 * math.sqrt(d)
    return x_query, x_train, y, bandwidth


def sdpa(x_query, x_train, y, bandwidth, block: int):
    """PyTorch's fused attention on the augmented vectors, in blocks of queries: on the CPU it
    materialises the scores (about 4 GB per 500 queries at 10^6 keys)."""
    q = torch.cat([x_query, torch.ones_like(x_query[:, :1])], 1)
    k = torch.cat([x_train, -0.5 * (x_train * x_train).sum(1, keepdim=True)], 1)[None, None]
    v = y[None, None, :, None]
    return torch.cat([
        F.scaled_dot_product_attention(q[None, None, i : i + block], k, v, scale=1 / bandwidth**2)[0, 0, :, 0]
        for i in range(0, len(q), block)
    ])


def dense(x_query, x_train, y, bandwidth, block: int):
    return torch.cat([nadaraya_watson(x_query[i : i + block], x_train, y, bandwidth=bandwidth)[0] for i in range(0, len(x_query), block)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--n-train", type=int, default=1_000_000)
    parser.add_argument("--n-query", type=int, default=10_000)
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--dense-queries", type=int, default=64, help="queries per dense call")
    parser.add_argument("--sdpa-queries", type=int, default=500, help="queries per SDPA call")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if args.quick:
        args.n_train, args.n_query, args.repeats = 10_000, 100, 3

    rows = []
    for d in args.dims:
        xq, xt, y, h = problem(args.n_train, args.n_query, d)
        methods = {
            "streaming": lambda: nadaraya_watson_streaming(xq, xt, y, bandwidth=h),
            "sdpa": lambda: sdpa(xq, xt, y, h, args.sdpa_queries),
            "dense": lambda: dense(xq, xt, y, h, args.dense_queries),
        }
        results = {name: measure(fn, args.repeats) for name, fn in methods.items()}
        reference = results["sdpa"][2]
        t_stream = results["streaming"][0]
        for name, (seconds, peak, out) in results.items():
            rows.append(
                {
                    "d": d, "n_train": args.n_train, "n_query": args.n_query, "bandwidth": h, "method": name,
                    "median_s": round(seconds, 3), "peak_extra_mib": round(peak, 1),
                    "time_over_streaming": round(seconds / t_stream, 3),
                    "max_abs_diff_vs_sdpa": float((out - reference).abs().max()),
                }
            )
            print(f"d={d:2d} {name:10s} {seconds:9.3f} s  peak +{peak:8.1f} MiB  time/streaming {seconds / t_stream:6.2f}  "
                  f"max|Δ| vs sdpa {rows[-1]['max_abs_diff_vs_sdpa']:.2e}", flush=True)

    by = {(r["d"], r["method"]): r for r in rows}
    summary = {
        f"d={d}": {
            "streaming_over_sdpa_time": round(by[d, "streaming"]["median_s"] / by[d, "sdpa"]["median_s"], 3),
            "dense_over_streaming_time": round(by[d, "dense"]["median_s"] / by[d, "streaming"]["median_s"], 3),
            "streaming_peak_extra_mib": by[d, "streaming"]["peak_extra_mib"],
        }
        for d in args.dims
    }
    print(json.dumps(summary, indent=1))
    record = {
        "benchmark": "streaming Nadaraya-Watson (attnlib) vs dense attention() and torch SDPA, Gaussian kernel, float32",
        "machine": machine(),
        "command": "python benchmarks/kernel_regression.py " + ("--quick" if args.quick else f"--n-query {args.n_query} --repeats {args.repeats}"),
        "memory_method": "growth of VmHWM over VmRSS, VmHWM reset via /proc/self/clear_refs before each call",
        "rows": rows,
        "summary": summary,
        "targets": TARGETS,
    }
    print(f"wrote {write_result('kernel_regression', record, args.quick)}")


if __name__ == "__main__":
    main()
