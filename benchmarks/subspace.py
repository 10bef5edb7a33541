"""SSC on the synthetic protocol of You et al. (2016): attnlib against column-by-column Lasso.

Data: 5 random 6-dimensional subspaces of R^9, no noise, N points in total (N/5 per
subspace). Ours: :func:`attnlib.subspace.self_expressive` (FISTA on working sets, all
samples at once, stopped by a certified duality gap) + spectral clustering. Peer: what most
users write, ``sklearn.linear_model.Lasso`` fitted once per sample. The peer is timed on a
random subset of samples and extrapolated to N (said so in the table); objectives are
compared on that same subset.

    python benchmarks/subspace.py           # N = 1000, 5000, 10000 (minutes)
    python benchmarks/subspace.py --quick   # tiny sizes, < 30 s
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import sklearn
from sklearn.linear_model import Lasso

from _common import machine, write_result  # benchmarks/ is on sys.path when a script runs
from attnlib.data import union_of_subspaces
from attnlib.subspace import affinity, clustering_accuracy, self_expressive, spectral_clustering

LAM = 0.05


def sklearn_rows(X, rows, lam):
    """Rows of C by scikit-learn's Lasso (alpha = lam / D matches our objective), and the time."""
    N, D = X.shape
    coefs = np.zeros((len(rows), N))
    start = time.perf_counter()
    for r, i in enumerate(rows):
        others = np.arange(N) != i
        coefs[r, others] = Lasso(alpha=lam / D, fit_intercept=False).fit(X[others].T, X[i]).coef_
    return coefs, time.perf_counter() - start


def row_objective(X, rows, coefs, lam):
    R = X[rows] - coefs @ X
    return float(0.5 * (R * R).sum() + lam * np.abs(coefs).sum())


def run(N, n_peer, seed=0, tol=1e-5):
    data = union_of_subspaces(5, 6, 9, N // 5, seed=seed)
    start = time.perf_counter()
    C, info = self_expressive(data.X, "ssc", LAM, solver="fista", working_set=64, tol=tol, return_info=True)
    t_coef = time.perf_counter() - start
    labels = spectral_clustering(affinity(C), 5)
    t_total = time.perf_counter() - start
    rows = np.random.default_rng(seed).choice(N, size=min(n_peer, N), replace=False)
    peer, t_peer = sklearn_rows(data.X, rows, LAM)
    ours_obj = row_objective(data.X, rows, C[rows].toarray(), LAM)
    peer_obj = row_objective(data.X, rows, peer, LAM)
    t_peer_full = t_peer * N / len(rows)
    return {
        "N": N,
        "per_subspace": N // 5,
        "accuracy": clustering_accuracy(data.labels, labels),
        "ours_coef_s": t_coef,
        "ours_total_s": t_total,
        "ours_rel_gap": info.rel_gap,
        "ours_rounds": info.n_rounds,
        "peer_rows_timed": int(len(rows)),
        "peer_coef_s_extrapolated": t_peer_full,
        "speedup_coef": t_peer_full / t_coef,
        "objective_ours_on_subset": ours_obj,
        "objective_peer_on_subset": peer_obj,
        "objective_rel_diff": (ours_obj - peer_obj) / peer_obj,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes, n_peer = ((250, 500), 50) if args.quick else ((1000, 5000, 10000), 300)
    rows = []
    for N in sizes:
        rows.append(run(N, n_peer))
        r = rows[-1]
        print(
            f"N={N:6d} acc={r['accuracy']:.4f} ours={r['ours_coef_s']:.1f}s (+spectral {r['ours_total_s']:.1f}s) "
            f"gap={r['ours_rel_gap']:.1e} peer~{r['peer_coef_s_extrapolated']:.1f}s speedup={r['speedup_coef']:.1f}x "
            f"obj diff={r['objective_rel_diff']:+.2e}",
            flush=True,
        )
    result = {
        "benchmark": "SSC (attnlib.subspace, FISTA on working sets) vs column-by-column sklearn Lasso",
        "machine": machine(sklearn=sklearn.__version__, OPENBLAS_NUM_THREADS=str(os.environ.get("OPENBLAS_NUM_THREADS"))),
        "protocol": "You et al. (2016): 5 subspaces of dim 6 in R^9, no noise; N = total points (N/5 per subspace); lam = 0.05",
        "rows": rows,
        "targets": {"accuracy_N1000": 0.97, "accuracy_N10000": 0.99, "seconds_N10000": 60, "speedup": 10},
    }
    print(f"wrote {write_result('subspace', result, args.quick)}")


if __name__ == "__main__":
    main()
