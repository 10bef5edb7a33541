"""The unseen-seed audit (tools/unseen.py) catches a claim fitted to its five seeds.

A planted chapter holds two claims: one whose threshold was read off seeds 0-4 (the
five-seed coincidence the audit exists for) and one worded for the next seed. Executed
at offset 0 both hold; at offsets where a NumPy restatement of the draws shows the
fitted threshold broken, the audit reports that claim failed and the other held.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import unseen  # noqa: E402

claims_lib = unseen.claims_lib

SETUP = "import numpy as np\nfrom attnlib.utils import seeds\nSEEDS = seeds(5)"
DRAWS = "draws = [np.random.default_rng(s).random() for s in SEEDS]"
# The smallest draw of seeds 0-4, less a hair: a threshold fitted to the seeds at hand.
FITTED = min(np.random.default_rng(s).random() for s in range(5)) - 1e-3


def _cell(source, claim=None, cid="c"):
    meta = {"tags": ["claim"], "claim": claim} if claim else {}
    return {
        "cell_type": "code",
        "id": cid,
        "metadata": meta,
        "source": source,
        "outputs": [],
        "execution_count": None,
    }


def _claim(statement):
    return {
        "statement": statement,
        "source": "this book",
        "reference": "a NumPy restatement in this cell",
        "tolerance": "exact",
        "kind": "experiment",
        "seeds": [0, 1, 2, 3, 4],
    }


def _planted(folder: Path) -> Path:
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "t",
                "metadata": {},
                "source": "# 99 · Demo",
            },
            _cell(SETUP, cid="setup"),
            _cell(DRAWS, cid="draw"),
            _cell(
                f"assert min(draws) > {FITTED!r}",
                _claim("Every draw exceeds the smallest of seeds 0-4"),
                cid="fragile",
            ),
            _cell(
                "assert sum(d > 0.01 for d in draws) >= 1",
                _claim("At least 1 of 5 draws exceeds 0.01"),
                cid="robust",
            ),
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / "99_demo.ipynb"
    path.write_text(json.dumps(nb))
    return path


def _breaks_fitted(offset: int) -> bool:
    """The NumPy restatement: does the fitted threshold fail at this offset?"""
    draws = [np.random.default_rng(s + offset).random() for s in range(5)]
    return min(draws) <= FITTED


@pytest.fixture(scope="module")
def planted_audit(tmp_path_factory):
    path = _planted(tmp_path_factory.mktemp("book"))
    broken = next(k for k in range(unseen.UNSEEN_FLOOR, 10**6) if _breaks_fitted(k))
    runs = unseen.audit([path], [0, broken], workers=1, timeout=120)
    return path, broken, runs


def test_the_audit_catches_a_claim_fitted_to_five_seeds(planted_audit):
    path, broken, runs = planted_audit
    at_zero = runs[path.name]["0"]["claims"]
    at_broken = runs[path.name][str(broken)]["claims"]
    assert {c: o["outcome"] for c, o in at_zero.items()} == {
        "fragile": "held",
        "robust": "held",
    }
    assert at_broken["fragile"]["outcome"] == "failed"
    assert at_broken["fragile"]["error"].startswith("AssertionError")
    assert at_broken["robust"]["outcome"] == "held"
    text, n_bad = unseen.table(runs, [0, broken])
    assert n_bad == 1 and f"99.1 (experiment, cell fragile) at offset {broken}" in text


def test_the_record_counts_held_offsets_per_claim_as_it_is_now(planted_audit, tmp_path):
    path, broken, runs = planted_audit
    record = tmp_path / "audit.json"
    unseen.record(runs, [0, broken], path=record)
    rec = claims_lib.load_unseen_record(record)
    nb = json.loads(path.read_text())
    assert claims_lib.unseen_counts(nb, path, rec) == {
        "fragile": (1, 2),
        "robust": (2, 2),
    }
    nb["cells"][4]["source"] = "assert sum(d > 0.02 for d in draws) >= 1"  # rewritten
    assert claims_lib.unseen_counts(nb, path, rec)["robust"] == (0, 0)
    assert unseen.used_offsets(rec) == {0, broken}


def test_an_error_outside_a_claim_is_reported(tmp_path):
    nb = {
        "cells": [_cell("raise RuntimeError('solver did not converge')", cid="x")],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    nb["cells"][0]["outputs"] = [
        {
            "output_type": "error",
            "ename": "RuntimeError",
            "evalue": "no",
            "traceback": [],
        }
    ]
    nb["cells"][0]["execution_count"] = 1
    out = unseen.read_outcomes(nb, tmp_path / "99_demo.ipynb")
    assert out["claims"] == {} and out["errors"][0]["error"] == "RuntimeError: no"


def test_offsets_are_drawn_above_the_writing_range_and_fresh():
    drawn = unseen.draw_offsets(50, avoid={10_000})
    assert len(set(drawn)) == 50
    assert all(unseen.UNSEEN_FLOOR <= k <= unseen.UNSEEN_CEILING for k in drawn)
    assert 10_000 not in drawn


IMPORTS = "from attnlib import results\nfrom attnlib.utils import seed_offset"
FAKE_SWEEP = """
import sys
sys.path.insert(0, {benchmarks!r})
from _common import parse_args, write_result
args = parse_args("a fake sweep")
write_result("symmetry", {{"rows": [], "offset_seen": args.seed_offset}}, args.quick)
"""


def test_a_claim_on_a_sweep_is_checked_on_its_rerun(tmp_path, monkeypatch):
    """``--sweeps``: the sweep a claim reads is re-run at the audit's offset, the
    chapter reads the re-run, and only then does the ledger count the offset."""
    script = tmp_path / "fake_sweep.py"
    script.write_text(FAKE_SWEEP.format(benchmarks=str(ROOT / "benchmarks")))
    monkeypatch.setitem(unseen.SWEEPS, "symmetry.unseen", str(script))
    book = tmp_path / "book"
    book.mkdir()
    nb = {
        "cells": [
            _cell(SETUP + "\n" + IMPORTS, cid="setup"),
            _cell("sweep = results.load('symmetry.unseen')", cid="load"),
            _cell(
                "assert sweep['seed_offset'] == seed_offset()",
                _claim("The sweep read is the one at this offset"),
                cid="on-sweep",
            ),
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = book / "99_demo.ipynb"
    path.write_text(json.dumps(nb))
    assert unseen.sweeps_read([path]) == ["symmetry.unseen"]
    offset = unseen.draw_offsets(1)[0]
    folders, sweeps = unseen.rerun_all(
        ["symmetry.unseen"], [offset], tmp_path / "scratch", quick=False, timeout=120
    )
    assert sweeps["symmetry.unseen"]["offsets"] == [offset]
    rerun = json.loads((folders[offset] / "symmetry.unseen.json").read_text())
    assert rerun["offset_seen"] == offset
    runs = unseen.audit([path], [offset], workers=1, timeout=120, folders=folders)
    assert runs[path.name][str(offset)]["claims"]["on-sweep"]["outcome"] == "held"
    # without the re-run the chapter re-reads the committed file, and the claim fails
    bare = unseen.audit([path], [offset], workers=1, timeout=120)
    assert bare[path.name][str(offset)]["claims"]["on-sweep"]["outcome"] == "failed"
    record = tmp_path / "audit.json"
    unseen.record(runs, [offset], path=record, sweeps=sweeps)
    unseen.record(bare, [offset], path=record)
    rec = claims_lib.load_unseen_record(record)
    assert claims_lib.unseen_counts(nb, path, rec) == {"on-sweep": (1, 1)}
