"""The learning-curve sweep of chapter 06: what orthogonal equivariance buys in samples.

Two teachers with the same symmetries label Gaussian token sequences: a quadratic-score
KnowledgeAttention layer (inside the KnowledgeAttention learner's class) and an
RBF-score one (outside it). Seven learners are fitted to each, for a range of
training-set sizes and several seeds: a mean and a ridge baseline, an MLP with and
without weight decay, one standard MultiHeadAttention head, KnowledgeAttention with a
linear value map (an ablation) and KnowledgeAttention itself. Each is scored on clean
test sequences of the training length and of lengths never seen in training (see
attnlib.experiments.symmetry). The chapter runs a small slice of this live and displays
the committed result of the full run.

    python benchmarks/symmetry.py          # full sweep, writes
    attnlib/results/symmetry.json python benchmarks/symmetry.py --quick  # tiny sizes,
    for CI (< 30 s): symmetry.quick.json
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from _common import machine, parse_args, write_result

from attnlib.experiments.symmetry import LEARNERS, TEACHERS, sample_efficiency


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    if args.quick:
        config = dict(sizes=[4, 16], seeds=[0], n_steps=30, n_test=64)
    else:
        config = dict(
            sizes=[4, 8, 16, 32, 64, 128, 256, 512],
            seeds=[0, 1, 2, 3, 4],
            n_steps=300,
            n_test=256,
        )
    config["teachers"], config["learners"] = list(TEACHERS), list(LEARNERS)
    rows = []
    for teacher in TEACHERS:
        rows += sample_efficiency(
            config["sizes"],
            config["seeds"],
            teacher=teacher,
            learners=list(LEARNERS),
            n_steps=config["n_steps"],
            n_test=config["n_test"],
        )
    df = pd.DataFrame(rows)
    medians = (
        df.groupby(["teacher", "model", "n_train"])["test_n6"]
        .median()
        .unstack("n_train")
    )
    print(medians.round(4).to_string())
    ratio = medians.xs("MultiHeadAttention", level="model") / medians.xs(
        "KnowledgeAttention", level="model"
    )
    print("\nmedian test error ratio MultiHeadAttention / KnowledgeAttention:")
    print(ratio.round(2).to_string())
    result = {
        "benchmark": "symmetry: learning curves on a quadratic and an RBF teacher, "
        "seven learners",
        "machine": machine(),
        "config": config,
        "rows": [
            {
                k: (None if isinstance(v, float) and np.isnan(v) else v)
                for k, v in r.items()
            }
            for r in rows
        ],
        "targets": {
            "median_ratio_mha_over_ka": {
                t: {str(k): float(v) for k, v in ratio.loc[t].items()} for t in TEACHERS
            },
        },
    }
    print(f"wrote {write_result('symmetry', result, args.quick)}")


if __name__ == "__main__":
    main()
