"""The mutants of tools/mutants.py survive reformatting, and none is stale."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from mutants import MUTANTS, M, apply, locate  # noqa: E402


def test_every_snippet_is_found_exactly_once():
    stale = [
        m.name
        for m in MUTANTS
        if len(locate((ROOT / m.file).read_text(), m.original)) != 1
    ]
    assert not stale, stale


def test_a_snippet_survives_reformatting():
    m = M("x", "f.py", "out = f(a, b=2)  # why", "out = f(b, a=2)")
    one_line = "y = 1\nout = f(a, b=2)  # why\n"
    wrapped = (
        "y = 1\nout = f(\n    a,\n    # a comment the formatter moved\n    b=2,\n)\n"
    )
    for text in (one_line, wrapped):
        assert len(locate(text, m.original)) == 1
        assert apply(text, m).startswith("y = 1\nout = f(b, a=2)")
    # A different expression is not matched, however it is formatted.
    assert locate("out = f(a, b=3)\n", m.original) == []
    assert locate("out = f(ab=2)\n", m.original) == []
