"""SSC on the synthetic protocol of You et al. (2016): attnlib vs column-wise Lasso.

Data: 5 random 6-dimensional subspaces of R^9, no noise, N points in total (N/5 per
subspace). Ours: :func:`attnlib.subspace.self_expressive` with the default active-set
solver (exact homotopy on working sets, certified by a duality gap) + spectral
clustering. Peer: what most users write, ``sklearn.linear_model.Lasso`` fitted once per
sample, twice: with its default ``tol`` and with ``tol=1e-6``, which reaches our
objective to 1e-6 relative (equal objective). The peer is timed on a random subset of
samples and its time multiplied by N / (subset size); objectives are compared on that
same subset.

1. Sweep (tuning seeds 101-105, N = 1000): λ and the affinity's row normalisation; the
   combination with the best median accuracy is used below (ties: the larger λ).
2. Rows (evaluation seeds 0, 1, 2): accuracy median over the seeds, our time median over
   the seeds, the peer on seed 0.
3. The same comparison at lam = 0.05 (seed 0 only), the λ of the earlier table: the
   peer's coordinate descent is much faster at a larger λ, so the speed-up is smaller
   there.
4. The λ of LSR and LRSC swept the same way (they fail on this protocol, whose subspaces
   together fill R^9, at every λ), and ``SubspaceClustering()`` with its defaults (which
   attnlib.subspace.DEFAULT_LAM takes from these sweeps; K-subspaces refinement on) and
   with ``refine=False`` (the paper's SSC) on the evaluation seeds, and at N = 1000 on
   ten more seeds (400-409) that no choice of the library was made on.

    python benchmarks/subspace.py           # N = 1000, 5000, 10000 (~15 minutes)
    python benchmarks/subspace.py --quick   # tiny sizes, < 30 s
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import sklearn

# benchmarks/ is on sys.path when a script runs
from _common import machine, parse_args, write_result
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from attnlib.data import union_of_subspaces
from attnlib.subspace import (
    SubspaceClustering,
    affinity,
    clustering_accuracy,
    self_expressive,
    spectral_clustering,
)
from attnlib.utils import seeds as shifted

PEER_TOLS = {"default": 1e-4, "equal": 1e-6}
REF_LAM = 0.05


def ours(X, lam, normalize):
    """Coefficients and labels by attnlib; the times of both stages."""
    start = time.perf_counter()
    C, info = self_expressive(X, "ssc", lam, return_info=True)
    t_coef = time.perf_counter() - start
    labels = spectral_clustering(affinity(C, normalize=normalize), 5)
    return C, info, labels, t_coef, time.perf_counter() - start


PEER_MAX_ITER = 100_000


def sklearn_rows(X, rows, lam, tol):
    """Rows of C by scikit-learn's Lasso (alpha = lam / D matches ours), the time, and
    how many rows stopped at ``PEER_MAX_ITER``.

    The peer is measured, not trusted: a row it leaves unconverged is counted (and its
    objective shows in the gap columns) instead of stopping the sweep, as a
    ConvergenceWarning from our own solvers would. A capped row makes the peer look
    faster, so it can only shrink the speed-up.
    """
    N, D = X.shape
    coefs, capped = np.zeros((len(rows), N)), 0
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # counted below instead
        for r, i in enumerate(rows):
            others = np.arange(N) != i
            model = Lasso(
                alpha=lam / D, fit_intercept=False, tol=tol, max_iter=PEER_MAX_ITER
            )
            coefs[r, others] = model.fit(X[others].T, X[i]).coef_
            capped += int(model.n_iter_ >= PEER_MAX_ITER)
    return coefs, time.perf_counter() - start, capped


def row_objectives(X, rows, coefs, lam):
    R = X[rows] - coefs @ X
    return 0.5 * (R * R).sum(1) + lam * np.abs(coefs).sum(1)


def sweep(N, seeds, lams, normalizations=(None, "l1")):
    """Median accuracy over the tuning seeds for every (λ, normalisation)."""
    acc = {(lam, norm): [] for lam in lams for norm in normalizations}
    for seed in seeds:
        data = union_of_subspaces(5, 6, 9, N // 5, seed=seed)
        for lam in lams:
            C = self_expressive(data.X, "ssc", lam)
            for norm in normalizations:
                labels = spectral_clustering(affinity(C, normalize=norm), 5)
                acc[lam, norm].append(clustering_accuracy(data.labels, labels))
    return [
        {
            "lam": lam,
            "normalize": str(norm),
            "accuracy_median": float(np.median(a)),
            "accuracies": a,
        }
        for (lam, norm), a in acc.items()
    ]


def sweep_closed(N, seeds, lams):
    """LSR and LRSC: median accuracy over tuning seeds for each λ, and the chosen λ."""
    out = {}
    for method in ("lsr", "lrsc"):
        acc = {lam: [] for lam in lams}
        for seed in seeds:
            data = union_of_subspaces(5, 6, 9, N // 5, seed=seed)
            for lam in lams:
                labels = spectral_clustering(
                    affinity(self_expressive(data.X, method, lam)), 5
                )
                acc[lam].append(clustering_accuracy(data.labels, labels))
        table = [
            {"lam": lam, "accuracy_median": float(np.median(a)), "accuracies": a}
            for lam, a in acc.items()
        ]
        out[method] = {
            "table": table,
            "chosen": max(table, key=lambda r: (r["accuracy_median"], r["lam"]))["lam"],
        }
    return out


def defaults(sizes, seeds):
    """``SubspaceClustering(n_clusters=5)`` with every other parameter at its default
    (``accuracy``), and the same spectral labels before the refinement (``ssc``)."""
    rows = []
    for N in sizes:
        accs, ssc = [], []
        for seed in seeds:
            data = union_of_subspaces(5, 6, 9, N // 5, seed=seed)
            model = SubspaceClustering(5).fit(data.X)
            accs.append(clustering_accuracy(data.labels, model.labels_))
            ssc.append(clustering_accuracy(data.labels, model.spectral_labels_))
        rows.append({
            "N": N, "seeds": list(seeds), "accuracy": float(np.median(accs)),
            "accuracies": accs, "accuracy_ssc": float(np.median(ssc)),
            "accuracies_ssc": ssc,
        })  # fmt: skip
    return rows


def run(N, lam, normalize, seeds, n_peer):
    accs, t_coefs, t_totals = [], [], []
    for seed in seeds:
        data = union_of_subspaces(5, 6, 9, N // 5, seed=seed)
        C, info, labels, t_coef, t_total = ours(data.X, lam, normalize)
        accs.append(clustering_accuracy(data.labels, labels))
        t_coefs.append(t_coef)
        t_totals.append(t_total)
        if seed == seeds[0]:
            X, C0, info0 = data.X, C, info
    rows = np.random.default_rng(0).choice(N, size=min(n_peer, N), replace=False)
    C_rows = C0[rows].toarray() if hasattr(C0, "toarray") else C0[rows]
    ours_obj = row_objectives(X, rows, C_rows, lam)
    t_coef = float(np.median(t_coefs))
    row = {
        "N": N, "per_subspace": N // 5, "lam": lam, "normalize": str(normalize),
        "accuracy": float(np.median(accs)), "accuracies": accs,
        "ours_coef_s": t_coef, "ours_total_s": float(np.median(t_totals)),
        "ours_rel_gap": info0.rel_gap, "ours_rounds": info0.n_rounds,
        "peer_rows_timed": int(len(rows)),
    }  # fmt: skip
    for name, tol in PEER_TOLS.items():
        peer, t_peer, capped = sklearn_rows(X, rows, lam, tol)
        row[f"peer_{name}_rows_at_max_iter"] = capped
        peer_obj = row_objectives(X, rows, peer, lam)
        t_full = t_peer * N / len(rows)
        row[f"peer_{name}_tol"] = tol
        row[f"peer_{name}_coef_s_extrapolated"] = t_full
        row[f"speedup_{name}"] = t_full / t_coef
        # (peer − ours) / ours on the subset: total, and the worst single row
        row[f"objective_gap_{name}"] = float(
            (peer_obj.sum() - ours_obj.sum()) / ours_obj.sum()
        )
        row[f"objective_gap_{name}_worst_row"] = float(
            np.max((peer_obj - ours_obj) / ours_obj)
        )
    return row


def main():
    args = parse_args(__doc__.splitlines()[0])
    if args.quick:
        sizes, eval_seeds, tune_seeds, lams, tune_N = (
            {250: 20, 500: 10},
            (0,),
            (101,),
            (0.005, 0.05),
            250,
        )
        fresh_N, fresh_seeds = 250, (400, 401)
        ref_sizes = {250: 10}
        closed_lams = (0.01, 1.0)
    else:
        sizes, eval_seeds, tune_seeds, lams, tune_N = (
            {1000: 100, 5000: 30, 10000: 20},
            (0, 1, 2),
            (101, 102, 103, 104, 105),
            (0.002, 0.005, 0.01, 0.02, 0.05, 0.1),
            1000,
        )
        ref_sizes = {1000: 100, 5000: 30, 10000: 20}
        closed_lams = (0.001, 0.01, 0.1, 1.0, 10.0)
        fresh_N, fresh_seeds = 1000, tuple(range(400, 410))
    # --seed-offset shifts every seed (ATTNLIB_SEED_OFFSET); the committed run: 0
    eval_seeds, tune_seeds, fresh_seeds = map(
        shifted, (eval_seeds, tune_seeds, fresh_seeds)
    )
    table = sweep(tune_N, tune_seeds, lams)
    for r in table:
        print(
            f"sweep N={tune_N} lam={r['lam']:<6} normalize={r['normalize']:<4} median "
            f"acc={r['accuracy_median']:.4f}",
            flush=True,
        )
    best = max(
        table, key=lambda r: (r["accuracy_median"], r["lam"], r["normalize"] == "None")
    )
    lam, normalize = (
        best["lam"],
        None if best["normalize"] == "None" else best["normalize"],
    )
    print(f"chosen: lam={lam}, normalize={normalize}", flush=True)
    closed = sweep_closed(tune_N, tune_seeds, closed_lams)
    for method, r in closed.items():
        print(
            f"sweep {method}: "
            + ", ".join(f"{t['lam']}: {t['accuracy_median']:.3f}" for t in r["table"]),
            flush=True,
        )
    default_rows = defaults(list(sizes), eval_seeds)
    fresh_rows = defaults([fresh_N], fresh_seeds)
    for r in default_rows + fresh_rows:
        print(
            f"defaults N={r['N']} seeds={r['seeds']} accuracy={r['accuracy']:.4f} "
            f"(refine=False: {r['accuracy_ssc']:.4f})",
            flush=True,
        )
    rows, ref_rows = [], []
    jobs = [(rows, N, lam, normalize, eval_seeds, n) for N, n in sizes.items()]
    jobs += [
        (ref_rows, N, REF_LAM, None, eval_seeds[:1], n) for N, n in ref_sizes.items()
    ]
    for out, N, lam_, norm_, seeds, n_peer in jobs:
        r = run(N, lam_, norm_, seeds, n_peer)
        out.append(r)
        print(
            f"lam={lam_} N={N:6d} acc={r['accuracy']:.4f} "
            f"ours={r['ours_coef_s']:.2f}s (+spectral {r['ours_total_s']:.2f}s) "
            f"gap={r['ours_rel_gap']:.1e} | peer equal-objective "
            f"~{r['peer_equal_coef_s_extrapolated']:.0f}s "
            f"({r['speedup_equal']:.0f}x, obj {r['objective_gap_equal']:+.1e}) | peer "
            f"default ~{r['peer_default_coef_s_extrapolated']:.0f}s "
            f"({r['speedup_default']:.0f}x, obj {r['objective_gap_default']:+.1e})",
            flush=True,
        )
    result = {
        "benchmark": "SSC (attnlib.subspace, exact active set) vs column-by-column "
        "sklearn Lasso",
        "machine": machine(sklearn=sklearn.__version__),
        "protocol": (
            "You et al. (2016): 5 subspaces of dim 6 in R^9, no noise; N = total "
            "points (N/5 per subspace); accuracy = median over seeds "
            f"{list(eval_seeds)}; lam and normalisation chosen by the sweep on seeds "
            f"{list(tune_seeds)}; peer timed on 'peer_rows_timed' random samples of "
            "seed 0 and scaled by N / that number"
        ),
        "sweep": {
            "N": tune_N,
            "seeds": list(tune_seeds),
            "table": table,
            "chosen": {"lam": lam, "normalize": str(normalize)},
        },
        "sweep_closed": {"N": tune_N, "seeds": list(tune_seeds), **closed},
        "defaults": default_rows,
        "defaults_fresh": fresh_rows[0],
        "rows": rows,
        f"rows_lam_{REF_LAM}": ref_rows,
        "targets": {
            "accuracy_N1000": 0.97,
            "accuracy_N10000": 0.99,
            "seconds_N10000": 60,
            "speedup": 10,
        },
    }
    print(f"wrote {write_result('subspace', result, args.quick)}")


if __name__ == "__main__":
    main()
