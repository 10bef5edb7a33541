"""Committed results are falsifiable: a test recomputes a slice of each sweep.

Each test reruns one seed at the smallest size with today's code and compares it with
the committed JSON within the tolerance the chapter relies on, so a change that alters a
committed number fails here.
"""

import importlib.util
from pathlib import Path

import pytest

from attnlib import results

ROOT = Path(__file__).resolve().parent.parent


def _benchmark(name):
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))   # for benchmarks/_common.py
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_denoise_baseline_seed0_smallest_cnn_is_reproduced():
    from attnlib.experiments.denoising import baseline_run

    bench = _benchmark("denoise")
    committed = {
        r["method"]: r["psnr_db"]
        for r in results.load("denoise")["baseline_rows"]
        if r["seed"] == 0 and r["run"] == "sweep"
    }
    if not committed:
        pytest.fail("the committed denoise.json has no baseline rows for seed 0")
    fresh = baseline_run(0, widths=(4,), heads=(), **bench.BASELINE)["psnr"]
    for method in ("Gaussian filter", "exact NLM", "CNN, width 4"):
        assert abs(fresh[method] - committed[method]) < 0.05, method


def test_denoise_quality_seed0_lowest_noise_is_reproduced():
    bench = _benchmark("denoise")
    committed = {
        r["method"]: r["psnr_db"]
        for r in results.load("denoise")["quality_rows"]
        if r.get("seed", 0) == 0 and r["noise"] == 0.05
    }
    rows = bench.quality_rows(False, (0,), (0.05,))
    fresh = {r["method"]: r["psnr_db"] for r in rows}
    assert set(fresh) == set(committed)
    for method, value in fresh.items():
        assert abs(value - committed[method]) < 0.05, method
