"""The mutants of tools/mutants.py survive reformatting, and none is stale."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from mutants import MUTANTS, M, apply, locate, resolve  # noqa: E402


def test_every_snippet_is_found_exactly_once():
    stale = [m.name for m in MUTANTS if len(resolve(m, ROOT)[1]) != 1]
    assert not stale, stale


def test_a_mutant_placed_by_function_is_found_in_it_and_where_it_moved(tmp_path):
    code = (
        "def f(x):\n    return x + 1\n\n\n"
        "class C:\n    def g(self, x):\n        return x + 1\n"
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(code)
    in_g = M("g-off-by-one", "pkg/a.py", "x + 1", "x + 2", "t.py", where="C.g")
    assert len(locate(code, in_g.original)) == 2  # ambiguous in the file ...
    file, spans = resolve(in_g, tmp_path)  # ... unique in its method
    assert file == "pkg/a.py" and len(spans) == 1
    assert apply(code, in_g).count("x + 2") == 1
    assert "return x + 2" in apply(code, in_g).split("class C")[1]
    # The method moves to another module of the package: the mutant follows it.
    (tmp_path / "pkg" / "a.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "pkg" / "b.py").write_text(
        "class C:\n    def g(self, x):\n        return x + 1\n"
    )
    assert resolve(in_g, tmp_path)[0] == "pkg/b.py"
    # A function that is nowhere (or twice) is stale, not guessed.
    gone = M("h", "pkg/a.py", "x + 1", "x + 2", "t.py", where="h")
    assert resolve(gone, tmp_path)[1] == []
    (tmp_path / "pkg" / "c.py").write_text(
        "class C:\n    def g(self, x):\n        return x + 1\n"
    )
    assert resolve(in_g, tmp_path)[1] == []


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
