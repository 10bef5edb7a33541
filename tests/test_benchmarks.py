"""Every benchmark still runs (in its quick mode, as `make bench QUICK=1` does), writes a
well-formed result beside the committed one without replacing it, and has its section in
the book's benchmarks appendix. The full runs are not repeated here; they are too slow for
CI and their timings would mean little on a shared machine."""

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
    done = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert committed.read_bytes() == before, "a quick run must not replace the committed results"
    quick = json.loads((QUICK_RESULTS / f"{script.stem}.quick.json").read_text())
    assert quick["quick"] is True and quick["machine"]["cpu_count"] and quick["date"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_committed_result_is_a_full_run_shown_in_the_appendix(script):
    result = json.loads((RESULTS / f"{script.stem}.json").read_text())
    assert result["quick"] is False, "commit the full run, not the quick one"
    assert result["rows"] and result["targets"] and result["machine"] and result["date"]
    assert f'load("{script.stem}")' in (ROOT / "book" / "benchmarks.md").read_text()
