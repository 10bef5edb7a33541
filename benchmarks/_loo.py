"""The leave-one-out bandwidth choice of ``NadarayaWatson().fit``, timed (issue 50).

Called by benchmarks/kernel_regression.py (its ``loo`` section). The default fit (30
candidate bandwidths, Gaussian kernel, float64) at n = 1 000, 5 000 and 20 000 points in
d = 3, on one thread: median CPU time of 3 fits, and the peak of the memory that NumPy
and the fit allocate (``tracemalloc``, which sees NumPy's buffers). Beside it, where it
fits (n ≤ 5 000), the old selection: one masked attention call per candidate
(``attnlib.kernel_regression.core._loo``), with the bandwidth it chooses, which must be
the streamed one's.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import torch
from _common import median_cpu_seconds

from attnlib.kernel_regression import NadarayaWatson
from attnlib.kernel_regression._bandwidth import _default_bandwidths
from attnlib.kernel_regression.core import _loo
from attnlib.utils import seeds

#: The issue's targets: seconds at n = 5 000 and 20 000 (one core).
TARGETS = {5000: 3.0, 20000: 60.0}


def loo_problem(n: int, d: int = 3):
    rng = np.random.default_rng(seeds([0])[0])
    X = rng.uniform(-1, 1, (n, d))
    return X, np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def per_candidate_choice(X, y) -> float:
    """The old selection: one masked attention call per candidate."""
    grid = _default_bandwidths(X)
    keys, values = torch.from_numpy(X), torch.from_numpy(y[:, None])
    mse = [((_loo(keys, values, "gaussian", h).numpy()[:, 0] - y) ** 2).mean()
           for h in grid]  # fmt: skip
    return float(grid[int(np.argmin(mse))])


def peak_mib(fn) -> float:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def loo_rows(sizes, repeats: int = 3, old_up_to: int = 5000) -> list[dict]:
    """One row per size: the streamed fit's seconds and memory, the old one's time."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the engine splits its rows over torch's threads
    try:
        NadarayaWatson().fit(*loo_problem(50))  # loads (or, once, compiles) the loops
        rows = []
        for n in sizes:
            X, y = loo_problem(n)
            seconds, model = median_cpu_seconds(
                lambda X=X, y=y: NadarayaWatson().fit(X, y), repeats
            )
            row = {
                "n": n,
                "d": 3,
                "candidates": len(model.bandwidths_),
                "threads": 1,
                "streamed_seconds": round(seconds, 3),
                "streamed_peak_mib": round(
                    peak_mib(lambda X=X, y=y: NadarayaWatson().fit(X, y)), 1
                ),
                "bandwidth": float(f"{model.bandwidth_:.6g}"),
            }
            if n <= old_up_to:
                old, h_old = median_cpu_seconds(
                    lambda X=X, y=y: per_candidate_choice(X, y), 1
                )
                row.update(
                    per_candidate_seconds=round(old, 3),
                    per_candidate_over_streamed=round(old / seconds, 1),
                    same_bandwidth=bool(h_old == model.bandwidth_),
                )
            print(
                f"loo n={n}: streamed {seconds:.3f} s, peak {row['streamed_peak_mib']}"
                f" MiB" + (f", per candidate {old:.2f} s" if n <= old_up_to else ""),
                flush=True,
            )
            rows.append(row)
        return rows
    finally:
        torch.set_num_threads(threads)


def loo_targets(rows) -> dict:
    by = {r["n"]: r for r in rows}
    return {
        f"NadarayaWatson().fit, n = {n}, d = 3, one core: <= {limit} s": {
            "target": limit,
            "value": by[n]["streamed_seconds"] if n in by else None,
            "met": bool(by[n]["streamed_seconds"] <= limit) if n in by else None,
        }
        for n, limit in TARGETS.items()
    }
