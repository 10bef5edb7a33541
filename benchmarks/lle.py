"""Benchmark attnlib.lle against scikit-learn's LocallyLinearEmbedding (arpack solver).

Swiss roll, K = 12 neighbours, 2 components, float64, CPU. Both estimators fit the same
input in one process, interleaved, and the table reports median times, the ratio
attnlib / scikit-learn, and how closely the two embeddings agree (largest entry-wise
difference after matching column signs, and the reconstruction errors).

    # the full run, writes attnlib/results/lle.json
    python benchmarks/lle.py
    # tiny sizes, a smoke test (< 30 s), to lle.quick.json
    python benchmarks/lle.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy
import sklearn
import torch

# benchmarks/ is on sys.path when a script runs
from _common import machine, write_result
from sklearn.datasets import make_swiss_roll
from sklearn.manifold import LocallyLinearEmbedding as SklearnLLE
from threadpoolctl import threadpool_limits

from attnlib.lle import LocallyLinearEmbedding
from attnlib.utils import seeds

SIZES = [2000, 10000]
QUICK_SIZES = [300, 600]
N_NEIGHBORS = 12
TARGETS = {"max_ratio_to_sklearn": 1.0, "max_abs_embedding_difference": 1e-6}


def estimators(n_neighbors: int) -> dict:
    kw = dict(
        n_neighbors=n_neighbors, n_components=2, eigen_solver="arpack", random_state=0
    )
    return {
        "attnlib": LocallyLinearEmbedding(**kw),
        "sklearn": SklearnLLE(method="standard", **kw),
    }


def median_times(fits: dict, X, repeats: int) -> tuple[dict, dict]:
    """Median seconds of ``fit`` per estimator, and the fitted ones.

    Interleaved, so that load hits both alike.
    """
    times = {name: [] for name in fits}
    for _ in range(repeats):
        for name, est in fits.items():
            t0 = time.perf_counter()
            est.fit(X)
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}, fits


def main(quick: bool = False, repeats: int | None = None) -> dict:
    # One thread (PyTorch and BLAS, for both): the machines are shared, and a single
    # thread gives stabler ratios.
    torch.set_num_threads(1)
    threadpool_limits(1)
    repeats = repeats or (3 if quick else 7)
    rows = []
    for n in QUICK_SIZES if quick else SIZES:
        X, _ = make_swiss_roll(n, random_state=seeds([0])[0])  # ATTNLIB_SEED_OFFSET
        t, fitted = median_times(estimators(N_NEIGHBORS), X, repeats)
        ours, theirs = fitted["attnlib"], fitted["sklearn"]
        signs = np.sign((ours.embedding_ * theirs.embedding_).sum(0))
        row = {
            "n_samples": n,
            "n_neighbors": N_NEIGHBORS,
            "attnlib_s": t["attnlib"],
            "sklearn_s": t["sklearn"],
            "ratio_to_sklearn": t["attnlib"] / t["sklearn"],
            "max_abs_embedding_difference": float(
                np.abs(ours.embedding_ - theirs.embedding_ * signs).max()
            ),
            "attnlib_reconstruction_error": ours.reconstruction_error_,
            "sklearn_reconstruction_error": float(theirs.reconstruction_error_),
        }
        rows.append(row)
        print(
            f"n = {n:6d}, K = {N_NEIGHBORS}: attnlib {row['attnlib_s']:7.3f} s  "
            f"sklearn {row['sklearn_s']:7.3f} s  ratio {row['ratio_to_sklearn']:.2f}  "
            f"max |Δ embedding| {row['max_abs_embedding_difference']:.1e}",
            flush=True,
        )
    return {
        "benchmark": "lle: LocallyLinearEmbedding.fit on a swiss roll, K = 12, 2 "
        "components, arpack; medians of interleaved repeats",
        "machine": machine(
            scipy=scipy.__version__, sklearn=sklearn.__version__, blas_threads="1"
        ),
        "repeats": repeats,
        "rows": rows,
        "targets": TARGETS,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    result = main(args.quick, args.repeats)
    worst = max(r["ratio_to_sklearn"] for r in result["rows"])
    print(
        f"worst ratio to sklearn {worst:.2f} (target {TARGETS['max_ratio_to_sklearn']})"
    )
    print(f"wrote {write_result('lle', result, args.quick)}")
