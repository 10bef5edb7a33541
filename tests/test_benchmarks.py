"""Every benchmark still runs (in its quick mode, as `make bench QUICK=1` does), writes
a well-formed result beside the committed one without replacing it, and has its
section in the book's benchmarks appendix. The full runs are not repeated here; they
are too slow for CI and their timings would mean little on a shared machine."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("[a-z]*.py"))
RESULTS = ROOT / "attnlib" / "results"
QUICK_RESULTS = ROOT / "benchmarks" / "quick"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_runs_in_quick_mode(script):
    committed = RESULTS / f"{script.stem}.json"
    before = committed.read_bytes()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert committed.read_bytes() == before, (
        "a quick run must not replace the committed results"
    )
    quick = json.loads((QUICK_RESULTS / f"{script.stem}.quick.json").read_text())
    assert quick["quick"] is True and quick["machine"]["cpu_count"] and quick["date"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_committed_result_is_a_full_run_shown_in_the_appendix(script):
    result = json.loads((RESULTS / f"{script.stem}.json").read_text())
    assert result["quick"] is False, "commit the full run, not the quick one"
    assert result["rows"] and result["targets"] and result["machine"] and result["date"]
    assert f'load("{script.stem}")' in (ROOT / "book" / "benchmarks.md").read_text()


def _flagged_targets_met(result):
    """Targets recorded with their own verdict, ``{"value": ..., "met": bool}``."""
    return {
        name: t["met"]
        for name, t in result["targets"].items()
        if isinstance(t, dict) and "met" in t
    }


#: The targets each committed result is shown meeting in the book, checked on its rows.
TARGETS_MET = {
    "continuous": lambda r, t: [
        all(row["speedup"] >= t["speedup"] for row in r["rows"]),
        all(row["accuracy_ratio"] >= t["accuracy_ratio"] for row in r["rows"]),
        all(row["closed_max_rel_err"] <= 1e-7 for row in r["rows"]),
    ],
    "lle": lambda r, t: [
        all(row["ratio_to_sklearn"] <= t["max_ratio_to_sklearn"] for row in r["rows"]),
        all(
            row["max_abs_embedding_difference"] <= t["max_abs_embedding_difference"]
            for row in r["rows"]
        ),
    ],
    "normalizers": lambda r, t: [
        all(row["ratio_to_entmax"] <= t["max_ratio_to_entmax"] for row in r["rows"]),
        all(row["ratio_to_softmax"] <= t["max_ratio_to_softmax"] for row in r["rows"]),
    ],
    "subspace": lambda r, t: [
        all(
            row["accuracy"] >= t["accuracy_N1000"]
            for row in r["rows"]
            if row["N"] == 1000
        ),
        all(
            row["accuracy"] >= t["accuracy_N10000"]
            for row in r["rows"]
            if row["N"] == 10000
        ),
        all(
            row["ours_total_s"] <= t["seconds_N10000"]
            for row in r["rows"]
            if row["N"] == 10000
        ),
        all(row["speedup_equal"] >= t["speedup"] for row in r["rows"]),
    ],
    "symmetry": lambda r, t: [
        all(
            ratio > 1
            for n, ratio in t["median_ratio_mha_over_ka"]["quadratic"].items()
            if int(n) >= 8
        ),
    ],
}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_committed_result_meets_the_targets_the_book_shows_it_meeting(script):
    """A committed run that misses a target the appendix or a chapter reports as met
    fails here, not only on the page (where a reader would have to notice it)."""
    result = json.loads((RESULTS / f"{script.stem}.json").read_text())
    flagged = _flagged_targets_met(result)
    checked = TARGETS_MET.get(script.stem, lambda r, t: [])(result, result["targets"])
    assert flagged or checked, f"{script.stem}: no target is checked"
    assert all(flagged.values()), (
        f"{script.stem}: targets missed: {[k for k, v in flagged.items() if not v]}"
    )
    assert all(checked), (
        f"{script.stem}: a target the book shows as met is missed: {checked}"
    )


def test_the_target_check_can_fail():
    result = json.loads((RESULTS / "lle.json").read_text())
    result["rows"][0]["ratio_to_sklearn"] = (
        2 * result["targets"]["max_ratio_to_sklearn"]
    )
    assert not all(TARGETS_MET["lle"](result, result["targets"]))
    result = json.loads((RESULTS / "denoise.json").read_text())
    next(iter(result["targets"].values()))["met"] = False
    assert not all(_flagged_targets_met(result).values())
