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
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).resolve().parent.parent / "attnlib" / "results"
QUICK_RESULTS = Path(__file__).resolve().parent / "quick"


def parse_args(description: str) -> argparse.Namespace:
    """The command line of every benchmark: ``--quick`` for a smoke run, tiny sizes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes; results go to <name>.quick.json",
    )
    return parser.parse_args()


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


def write_result(name: str, payload: dict, quick: bool) -> Path:
    """Write ``payload`` where it belongs, with date and ``quick`` flag; return it.

    Returns the path.
    """
    folder = QUICK_RESULTS if quick else RESULTS
    folder.mkdir(exist_ok=True)
    path = folder / (f"{name}.quick.json" if quick else f"{name}.json")
    payload = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        **payload,
    }
    path.write_text(json.dumps(payload, indent=1, default=float) + "\n")
    return path
