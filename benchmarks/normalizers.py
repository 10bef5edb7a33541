"""Benchmark attnlib.normalizers against the entmax package and torch.softmax.

Forward + backward, float32, CPU, on the shapes of the issue at score scales 1 and 10.
Every candidate runs on the same input in one process, interleaved, and the table reports
median times and the ratios attnlib / entmax package and attnlib / torch.softmax.

    python benchmarks/normalizers.py           # the full run, writes benchmarks/results/normalizers.json
    python benchmarks/normalizers.py --quick   # tiny sizes, a smoke test (< 30 s), to normalizers.quick.json
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import entmax as E
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, write_result  # noqa: E402

from attnlib.normalizers import entmax, sparsemax  # noqa: E402

SHAPES = [(4096, 1024), (256, 16384), (65536, 64)]
QUICK_SHAPES = [(64, 128), (8, 1024), (512, 16)]
SCALES = [1.0, 10.0]
#: (name, attnlib map, entmax-package map)
METHODS = [
    ("sparsemax", sparsemax, lambda x: E.sparsemax(x, -1)),
    ("entmax15", lambda x: entmax(x, 1.5), lambda x: E.entmax15(x, -1)),
    ("entmax_bisect a=1.5", lambda x: entmax(x, 1.5), lambda x: E.entmax_bisect(x, 1.5, -1)),
    ("entmax_bisect a=1.25", lambda x: entmax(x, 1.25), lambda x: E.entmax_bisect(x, 1.25, -1)),
]
TARGETS = {"max_ratio_to_entmax": 0.5, "max_ratio_to_softmax": 4.0}


def fwd_bwd(fn, x, g):
    x = x.detach().requires_grad_()
    fn(x).backward(g)
    return x.grad


def median_times(fns: dict, x, g, repeats: int) -> dict:
    """Median seconds of forward+backward per function, run interleaved so that load hits all alike."""
    times = {name: [] for name in fns}
    ours = fwd_bwd(fns["attnlib"], x, g)
    for name, fn in fns.items():  # warm-up, checking that the packages' gradients agree with ours
        grad = fwd_bwd(fn, x, g)
        if name != "softmax":
            torch.testing.assert_close(grad, ours, atol=1e-3, rtol=1e-3)
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fwd_bwd(fn, x, g)
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def main(quick: bool = False, repeats: int | None = None, shapes=None, methods=None) -> dict:
    torch.manual_seed(0)
    # One thread: the benchmark machines are shared, and a single thread gives stabler ratios.
    torch.set_num_threads(1)
    repeats = repeats or (3 if quick else 5)
    rows = []
    for shape in shapes or (QUICK_SHAPES if quick else SHAPES):
        for scale in SCALES:
            x = torch.randn(*shape) * scale
            g = torch.randn(*shape)
            for name, ours, theirs in [m for m in METHODS if methods is None or m[0] in methods]:
                torch.testing.assert_close(ours(x), theirs(x), atol=1e-4, rtol=0)  # the same answer first
                t = median_times({"attnlib": ours, "entmax": theirs, "softmax": lambda x: torch.softmax(x, -1)}, x, g, repeats)
                row = {
                    "method": name,
                    "shape": list(shape),
                    "scale": scale,
                    "attnlib_ms": 1e3 * t["attnlib"],
                    "entmax_ms": 1e3 * t["entmax"],
                    "softmax_ms": 1e3 * t["softmax"],
                    "ratio_to_entmax": t["attnlib"] / t["entmax"],
                    "ratio_to_softmax": t["attnlib"] / t["softmax"],
                }
                rows.append(row)
                print(
                    f"{name:22s} {str(shape):14s} scale {scale:4.0f}: attnlib {row['attnlib_ms']:8.2f} ms  "
                    f"entmax {row['entmax_ms']:8.2f} ms  softmax {row['softmax_ms']:7.2f} ms  "
                    f"ratio/entmax {row['ratio_to_entmax']:.2f}  ratio/softmax {row['ratio_to_softmax']:.2f}",
                    flush=True,
                )
    return {
        "benchmark": "normalizers: forward + backward, float32, CPU; medians of interleaved repeats",
        "machine": machine(entmax=E.__version__),
        "repeats": repeats,
        "rows": rows,
        "targets": TARGETS,
    }


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    result = main(args.quick)
    worst_e = max(r["ratio_to_entmax"] for r in result["rows"])
    worst_s = max(r["ratio_to_softmax"] for r in result["rows"])
    print(
        f"worst ratio to entmax {worst_e:.2f} (target {TARGETS['max_ratio_to_entmax']}), "
        f"to softmax {worst_s:.2f} (target {TARGETS['max_ratio_to_softmax']})"
    )
    print("wrote", write_result("normalizers", result, args.quick))
