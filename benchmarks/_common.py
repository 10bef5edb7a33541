"""What every benchmark shares: the machine's description, timing, and where results go.

Full runs write ``attnlib/results/<name>.json``: committed package data, which the
chapters and the book's benchmarks appendix read with :func:`attnlib.results.load`, so
that a chapter opened alone in Colab has them too. ``--quick`` runs (tiny sizes, what CI
runs) write ``benchmarks/quick/<name>.quick.json``, which git ignores, so a quick run
never replaces the measured numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

RESULTS = Path(__file__).resolve().parent.parent / "attnlib" / "results"
QUICK_RESULTS = Path(__file__).resolve().parent / "quick"


def parser(description: str) -> argparse.ArgumentParser:
    """The command line every benchmark shares (a script may add its own options).

    ``--quick`` for a smoke run at tiny sizes; ``--seed-offset k`` shifts every seed of
    a sweep by ``k``, as ``ATTNLIB_SEED_OFFSET`` does for a chapter: the sweep draws its
    seeds from :func:`attnlib.utils.seeds`, and :func:`parse_args` sets the variable.
    """
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes; results go to <name>.quick.json",
    )
    p.add_argument(
        "--seed-offset",
        type=int,
        default=None,
        metavar="K",
        help="shift every seed by K (seed s becomes s + K); the run (--quick too)"
        " writes attnlib/results/<name>.unseen.json beside the committed result",
    )
    return p


def parse_args(description: str | argparse.ArgumentParser) -> argparse.Namespace:
    """Parse the command line; ``--seed-offset`` becomes ``ATTNLIB_SEED_OFFSET``.

    Also makes a ``ConvergenceWarning`` an error for the rest of the run.
    """
    p = parser(description) if isinstance(description, str) else description
    args = p.parse_args()
    # A solver that stops before its tolerance (scikit-learn's or attnlib's SSC) fails
    # the sweep rather than writing numbers it has not reached.
    warnings.simplefilter("error", ConvergenceWarning)
    if args.seed_offset is not None:
        os.environ["ATTNLIB_SEED_OFFSET"] = str(args.seed_offset)
    from attnlib.utils import seed_offset

    args.seed_offset = seed_offset()  # checked, and 0 when neither was given
    return args


def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo`` on Linux), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> list:
    """The 1, 5 and 15 minute load averages: how busy the machine was during the run."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine(**versions: str) -> dict:
    """Where the numbers were measured: platform, CPU, cores, threads, load, versions.

    The CPU by its model name.
    """
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average": load_average(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        **versions,
    }


def median_seconds(fn, repeats: int = 5, warmup: int = 0) -> tuple[float, object]:
    """Median wall time of ``fn()`` over ``repeats`` runs, and its last result.

    After ``warmup`` runs.
    """
    for _ in range(warmup):
        fn()
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


def median_cpu_seconds(fn, repeats: int = 3, warmup: int = 0) -> tuple[float, object]:
    """Median CPU time (``time.process_time``, all threads of this process) of ``fn()``,
    and its last result: on a shared machine, unlike wall time, it is not charged for
    other processes."""
    for _ in range(warmup):
        fn()
    times, out = [], None
    for _ in range(repeats):
        start = time.process_time()
        out = fn()
        times.append(time.process_time() - start)
    return float(np.median(times)), out


def unseen_folder() -> Path:
    """Where a run at a seed offset writes ``<name>.unseen.json``: the folder that
    ``ATTNLIB_RESULTS_OUT`` names (tools/unseen.py's re-runs at each of its offsets,
    which leave the committed files alone), else ``attnlib/results``."""
    out = os.environ.get("ATTNLIB_RESULTS_OUT", "").strip()
    return Path(out) if out else RESULTS


def write_result(name: str, payload: dict, quick: bool) -> Path:
    """Write ``payload`` where it belongs, with date and ``quick`` flag; return it.

    Returns the path.
    """
    from attnlib.utils import seed_offset

    offset = seed_offset()
    # A run on shifted seeds (an unseen-seed re-run, quick sizes allowed and recorded)
    # lands beside the committed result, which it never replaces.
    folder = QUICK_RESULTS if quick and not offset else unseen_folder()
    folder.mkdir(exist_ok=True)
    suffix = ".unseen" if offset else (".quick" if quick else "")
    path = folder / f"{name}{suffix}.json"
    payload = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "seed_offset": offset,
        **payload,
    }
    path.write_text(json.dumps(payload, indent=1, default=float) + "\n")
    return path
