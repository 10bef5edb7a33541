"""The calibration of the claims (tools/calibrate.py, claims_lib.calibration).

Checked: the bookkeeping on a fake record (distinct fresh offsets counted once, the
authors' offsets never, a failure anywhere a failure; the bound against its definition
by the binomial distribution and, at zero failures, its closed form); that a claim
which re-reads a committed sweep is never counted at an offset, in the calibration or
in the ledger's words, unless that sweep was re-run there in full; which claims read
which sweeps; and the cheap runner on a planted chapter, whose fitted claim fails at
exactly the offsets a NumPy restatement of its draws predicts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import calibrate  # noqa: E402
import claims_lib  # noqa: E402

SETUP = "import numpy as np\nfrom attnlib.utils import seeds\nSEEDS = seeds(5)"
FITTED = min(np.random.default_rng(s).random() for s in range(5)) - 1e-3


def _cell(source, claim=None, cid="c", tags=()):
    meta = {"tags": [*tags, *(["claim"] if claim else [])]}
    if claim:
        meta["claim"] = claim
    return {
        "cell_type": "code",
        "id": cid,
        "metadata": meta,
        "source": source,
        "outputs": [],
        "execution_count": None,
    }


def _claim(statement, kind="experiment"):
    meta = {
        "statement": statement,
        "source": "this book",
        "reference": "a NumPy restatement in this cell",
        "tolerance": "exact",
        "kind": kind,
    }
    if kind == "experiment":
        meta["seeds"] = [0, 1, 2, 3, 4]
    return meta


def _notebook():
    return {
        "cells": [
            {"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# 99 · D"},
            _cell(SETUP, cid="setup", tags=["setup"]),
            _cell(
                "draws = [np.random.default_rng(s).random() for s in SEEDS]", cid="d"
            ),
            _cell("unrelated = np.ones(3)\nimport json", cid="u"),
            _cell(
                "from attnlib import results\n"
                "sweep = results.load('symmetry.unseen')\n"
                "def medians(r):\n    return [row for row in r['rows']]\n"
                "rows = []\nrows.extend(medians(sweep))\nnp.median([1.0])",
                cid="s",
            ),
            _cell(
                f"assert min(draws) > {FITTED!r}",
                _claim("Every draw exceeds the smallest of seeds 0-4"),
                cid="fragile",
            ),
            _cell(
                "assert len(rows) > 0 and unrelated.sum() == 3",
                _claim("The sweep has rows"),
                cid="reread",
            ),
            _cell(
                "grid = np.arange(5)\nassert grid.sum() == 10",
                _claim("0 + 1 + 2 + 3 + 4 = 10", kind="identity"),
                cid="exact",
            ),
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _breaks_fitted(offset: int) -> bool:
    """The NumPy restatement: does the fitted threshold fail at this offset?"""
    return min(np.random.default_rng(s + offset).random() for s in range(5)) <= FITTED


@pytest.fixture
def planted(tmp_path):
    path = tmp_path / "99_demo.ipynb"
    path.write_text(json.dumps(_notebook()))
    nb = json.loads(path.read_text())
    return path, nb, {c.cell_id: c for c in claims_lib.claims(nb, path)}


def _entry(c, offsets, fingerprints=None):
    entry = {"key": claims_lib.claim_key(c), "offsets": offsets}
    if fingerprints:
        entry["fingerprints"] = fingerprints
    return entry


def test_the_bound_is_the_clopper_pearson_bound():
    for n in (1, 3, 40, 200, 600):  # zero failures: 1 - 0.05 ** (1 / n), about 3 / n
        assert claims_lib.upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n))
    for k, n in [(1, 40), (3, 200), (7, 25)]:  # P(X <= k | n, bound) = 5 %
        p = claims_lib.upper_bound(k, n)
        assert stats.binom.cdf(k, n, p) == pytest.approx(0.05, rel=1e-6)
    assert claims_lib.upper_bound(0, 0) == 1.0 and claims_lib.upper_bound(4, 4) == 1.0
    assert claims_lib.upper_bound(0, 598) < 1 / 200 < claims_lib.upper_bound(0, 597)


def test_the_bookkeeping_counts_distinct_fresh_offsets(planted):
    path, nb, cs = planted
    fragile = cs["fragile"]
    record = {
        "runs": [
            {  # a cheap run; offset 7 is the authors' and never counts
                "sweeps": {},
                "claims": {
                    "99_demo.ipynb#fragile": _entry(
                        fragile, {"7": "failed", "20000": "held", "30000": "failed"}
                    )
                },
            },
            {  # a run of the claim before it was rewritten: not counted
                "sweeps": {},
                "claims": {
                    "99_demo.ipynb#fragile": {
                        "key": "0" * 16,
                        "offsets": {"40000": "failed"},
                    }
                },
            },
        ]
    }
    audits = {  # the same offset 20000 again, failed there this time: one failure
        "audits": [
            {
                "offsets": [20000, 50000],
                "chapters": {
                    "99_demo.ipynb": {
                        "20000": {
                            "claims": {
                                "fragile": {
                                    "key": claims_lib.claim_key(fragile),
                                    "outcome": "failed",
                                }
                            }
                        },
                        "50000": {
                            "claims": {
                                "fragile": {
                                    "key": claims_lib.claim_key(fragile),
                                    "outcome": "held",
                                }
                            }
                        },
                    }
                },
            }
        ]
    }
    cal = claims_lib.calibration(nb, path, record, audits)["fragile"]
    assert (cal.mode, cal.tried, cal.failures) == ("live", 3, 2)
    assert cal.bound == claims_lib.upper_bound(2, 3)
    text = claims_lib.calibration_text(cal)
    assert "live at 3 fresh offsets: 2 failed" in text


def test_a_claim_that_rereads_a_committed_sweep_is_never_counted(planted):
    path, nb, cs = planted
    reads = claims_lib.sweep_reads(nb, path)
    assert reads == {"fragile": set(), "reread": {"symmetry.unseen"}, "exact": set()}
    key = claims_lib.claim_key(cs["reread"])
    held = {"claims": {"reread": {"key": key, "outcome": "held"}}}
    audit = {
        "offsets": [20000, 30000, 40000],
        "chapters": {"99_demo.ipynb": {"20000": held, "30000": held, "40000": held}},
    }
    no_runs = {"runs": []}
    cal = claims_lib.calibration(nb, path, no_runs, {"audits": [audit]})["reread"]
    assert (cal.mode, cal.tried, cal.reread) == ("reread", 0, 3)
    assert claims_lib.unseen_counts(nb, path, {"audits": [audit]})["reread"] == (0, 0)
    assert "held" not in claims_lib.calibration_text(cal)
    assert "not calibrated" in claims_lib.calibration_text(cal)
    from claims import _kind_text  # the ledger's and the badge's words

    assert "held at" not in _kind_text(cs["reread"], cal)

    # a quick re-run (a smoke run at tiny sizes) counts for nothing either
    audit["sweeps"] = {"symmetry.unseen": {"quick": True, "offsets": [20000, 30000]}}
    cal = claims_lib.calibration(nb, path, no_runs, {"audits": [audit]})["reread"]
    assert cal.tried == 0
    # a full re-run counts exactly the offsets it was re-run at
    audit["sweeps"] = {"symmetry.unseen": {"quick": False, "offsets": [20000, 30000]}}
    cal = claims_lib.calibration(nb, path, no_runs, {"audits": [audit]})["reread"]
    assert (cal.mode, cal.tried, cal.reread) == ("rerun", 2, 1)
    assert claims_lib.unseen_counts(nb, path, {"audits": [audit]})["reread"] == (2, 2)
    assert "re-run at 2 fresh offsets" in claims_lib.calibration_text(cal)


def test_the_sweeps_the_books_claims_read_are_found():
    """The claims the referees named as re-reading committed sweeps are found so."""
    found = set()
    for p in claims_lib.chapter_notebooks():
        nb = claims_lib.load(p)
        key = p.stem.split("_", 1)[0]
        numbers = {c.cell_id: c.number for c in claims_lib.claims(nb, p)}
        for cid, names in claims_lib.sweep_reads(nb, p).items():
            # each result a claim reads is re-run by the audit, or says why not
            assert names <= set(calibrate.unseen.SWEEPS) | set(
                calibrate.unseen.NOT_RERUN
            ), (key, numbers[cid], names)
            if any(n.endswith(".unseen") for n in names):
                found.add(f"{key}.{numbers[cid]}")
    for chapter in ("06", "07b", "08"):  # each of these chapters has such claims
        assert any(f.startswith(chapter + ".") for f in found)
    every = sum(
        len(claims_lib.claims(claims_lib.load(p), p))
        for p in claims_lib.chapter_notebooks()
    )
    assert len(found) < every  # and not every claim of the book


def test_identical_values_at_two_offsets_mark_a_claim_offset_free(planted):
    path, nb, cs = planted
    record = {
        "runs": [
            {
                "claims": {
                    "99_demo.ipynb#exact": _entry(
                        cs["exact"],
                        {"20000": "held", "30000": "held"},
                        {"20000": "ab", "30000": "ab"},
                    ),
                    "99_demo.ipynb#fragile": _entry(
                        cs["fragile"],
                        {"20000": "held", "30000": "held"},
                        {"20000": "ab", "30000": "cd"},
                    ),
                }
            }
        ]
    }
    cals = claims_lib.calibration(nb, path, record, {"audits": []})
    assert cals["exact"].mode == "offset-free"
    assert cals["fragile"].mode == "live" and cals["fragile"].tried == 2


def test_a_claims_slice_holds_the_cells_its_names_come_from(planted):
    path, nb, cs = planted
    index = {cell["id"]: i for i, cell in enumerate(nb["cells"])}
    ids = {i: cid for cid, i in index.items()}
    sliced = [ids[i] for i in calibrate.claim_slice(nb, cs["fragile"].index)]
    assert sliced == ["setup", "d", "fragile"]
    sliced = [ids[i] for i in calibrate.claim_slice(nb, cs["reread"].index)]
    assert sliced == ["setup", "u", "s", "reread"]


def test_the_cheap_runner_finds_the_fitted_claims_false_alarms(planted):
    path, nb, cs = planted
    offsets = list(
        range(calibrate.unseen.UNSEEN_FLOOR, calibrate.unseen.UNSEEN_FLOOR + 40)
    )
    assert any(map(_breaks_fitted, offsets))  # the restatement: some offsets break it
    claims = [f"{path}#fragile", f"{path}#exact"]
    lines = calibrate.run_cheap(claims, offsets, budget_s=300, limit=60)
    run = calibrate.cheap_run_record(lines, 1.0, paths=[path])
    fragile = run["claims"]["99_demo.ipynb#fragile"]["offsets"]
    assert fragile == {
        str(k): "failed" if _breaks_fitted(k) else "held" for k in offsets
    }
    exact = run["claims"]["99_demo.ipynb#exact"]
    assert set(exact["offsets"].values()) == {"held"}
    cals = claims_lib.calibration(nb, path, {"runs": [run]}, {"audits": []})
    assert cals["exact"].mode == "offset-free"  # its values never moved
    assert cals["fragile"].tried == 40
    assert cals["fragile"].failures == sum(map(_breaks_fitted, offsets))


def test_a_rerun_sweep_is_what_the_chapter_reads(tmp_path, monkeypatch):
    """The audit's plumbing: a benchmark at an offset writes where the audit says, and
    ``attnlib.results.load`` reads the re-run there in place of the committed file."""
    from attnlib import results

    committed = results.load("symmetry.unseen")
    monkeypatch.setenv("ATTNLIB_RESULTS_OUT", str(tmp_path))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import _common

    assert _common.unseen_folder() == tmp_path
    monkeypatch.setenv("ATTNLIB_SEED_OFFSET", "123456")
    written = _common.write_result("symmetry", {"rows": []}, quick=True)
    assert written == tmp_path / "symmetry.unseen.json"
    monkeypatch.setenv(calibrate.unseen.RESULTS_VARIABLE, str(tmp_path))
    rerun = results.load("symmetry.unseen")
    assert rerun["seed_offset"] == 123456 and rerun["rows"] == []
    assert results.load("symmetry") == json.loads(
        (ROOT / "attnlib" / "results" / "symmetry.json").read_text()
    )  # not re-run here: the committed file
    monkeypatch.delenv(calibrate.unseen.RESULTS_VARIABLE)
    assert results.load("symmetry.unseen") == committed
    assert set(calibrate.unseen.SWEEPS) | {
        f"{n}.unseen" for n in calibrate.unseen.NOT_RERUN
    } >= {n for n in results.names() if n.endswith(".unseen")}


def test_a_chapter_run_fingerprints_its_claims(planted):
    """The chapter runner: a kernel executes the planted chapter at two fresh offsets;
    the fitted claim's outcomes follow the restatement, and only the claim whose
    values cannot move is offset-free."""
    path, nb, cs = planted
    floor = calibrate.unseen.UNSEEN_FLOOR
    broken = next(k for k in range(floor, 10**6) if _breaks_fitted(k))
    kept = next(k for k in range(floor, 10**6) if not _breaks_fitted(k))
    run = calibrate.run_chapters([path], [broken, kept], budget_s=600, timeout=120)
    fragile = run["claims"]["99_demo.ipynb#fragile"]
    assert fragile["offsets"] == {str(broken): "failed", str(kept): "held"}
    cals = claims_lib.calibration(nb, path, {"runs": [run]}, {"audits": []})
    assert cals["exact"].mode == "offset-free"
    assert (cals["fragile"].mode, cals["fragile"].failures) == ("live", 1)
    # the planted sweep reader re-read a committed file at both offsets: not counted
    assert (cals["reread"].mode, cals["reread"].tried) == ("reread", 0)
