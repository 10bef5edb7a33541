"""Each chapter is a lesson first (issue 47): its core, then "Going further".

Read from the notebooks' sources (the built page's measures are in test_site.py):

* a chapter ends with ``## Summary``, ``## Exercises``, ``## Going further`` and
  ``## Notes on the sources``, in that order; engineering, solvers, robustness over
  seeds and the sources' errors sit under "Going further";
* its core (everything before the summary) holds 1,000 to 3,000 words of prose, maths,
  code and directive lines aside (d2l's Nadaraya–Watson section is about 1,500);
* every exercise is titled with its difficulty and kind (``★★ · derive``), at least a
  third of the book's ask for a derivation, a design, a build or a project step, and
  each chapter holds one step of the project that runs across the book,
  ``ex-NN-project``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]*_*.ipynb"))
TAIL = ["Summary", "Exercises", "Going further", "Notes on the sources"]
KINDS = ("check", "derive", "design", "build", "project")
TITLE = re.compile(r"^:::\{exercise\} (★{1,3}) · (" + "|".join(KINDS) + r")( · .+)?$")
CORE_WORDS = (1000, 3000)


def prose_words(md: str) -> int:
    """Words of prose in markdown: maths, code, comments and directive lines aside."""
    md = re.sub(r"<!--.*?-->", " ", md, flags=re.S)
    md = re.sub(r"\$\$.*?\$\$", " ", md, flags=re.S)
    md = re.sub(r"\$[^$\n]*\$", " ", md)
    md = re.sub(r"```.*?```", " ", md, flags=re.S)
    lines = [ln for ln in md.splitlines() if not re.match(r"\s*(:::|:\w+:|#)", ln)]
    return len(" ".join(lines).split())


def shape(cells: list[dict], number: str) -> list[str]:
    """What breaks the lesson's shape in a chapter's cells (empty when none)."""
    md = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    heads = [h.strip() for s in md for h in re.findall(r"^## (.+)$", s, re.M)]
    problems = []
    if heads[-len(TAIL) :] != TAIL:
        problems.append(f"the chapter ends with {heads[-len(TAIL) :]}, not {TAIL}")
    core = 0
    for s in md:
        before, summary, _ = s.partition("## Summary")
        core += prose_words(before)
        if summary:
            break
    if not CORE_WORDS[0] <= core <= CORE_WORDS[1]:
        problems.append(f"its core holds {core} words of prose, not {CORE_WORDS}")
    kinds = []
    for s in md:
        first = s.lstrip().splitlines()[0] if s.strip() else ""
        if not first.startswith(":::{exercise}"):
            continue
        m = TITLE.match(first.strip())
        if m is None:
            problems.append(f"an exercise without difficulty and kind: {first!r}")
        else:
            kinds.append((m.group(2), re.search(r":label: (\S+)", s)))
    projects = [
        label.group(1) if label else None for kind, label in kinds if kind == "project"
    ]
    if projects != [f"ex-{number}-project"]:
        problems.append(
            f"project steps {projects}, not one labelled ex-{number}-project"
        )
    return problems


def _kinds(cells):
    md = ("".join(c["source"]).strip() for c in cells if c["cell_type"] == "markdown")
    return [
        m.group(2) for s in md if (m := TITLE.match(s.splitlines()[0] if s else ""))
    ]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_is_a_lesson_then_going_further(path):
    number = path.stem.split("_")[0]
    assert shape(json.loads(path.read_text())["cells"], number) == []


def test_a_third_of_the_exercises_ask_for_more_than_a_check():
    kinds = [k for p in CHAPTERS for k in _kinds(json.loads(p.read_text())["cells"])]
    assert len(kinds) >= 3 * len(CHAPTERS)
    assert sum(k != "check" for k in kinds) >= len(kinds) / 3, kinds


def _md(*sources):
    return [{"cell_type": "markdown", "source": s} for s in sources]


def test_the_shape_rule_flags_planted_faults():
    words = " ".join(["word"] * 1200)
    good = _md(
        f"# 09 · A chapter\n\n{words}",
        "## Summary\n\n- a point",
        "## Exercises",
        ":::{exercise} ★★ · derive\n:label: ex-09-1\nDerive it.\n:::",
        ":::{exercise} ★ · project · step nine\n:label: ex-09-project\nBuild it.\n:::",
        "## Going further\n\n### Speed",
        "## Notes on the sources",
    )
    assert shape(good, "09") == []
    short = [dict(c) for c in good]
    short[0] = {"cell_type": "markdown", "source": "# 09 · A chapter\n\nToo short."}
    assert any("core holds" in p for p in shape(short, "09"))
    untagged = good[:3] + _md(":::{exercise}\n:label: ex-09-1\nDo it.\n:::") + good[4:]
    assert any("without difficulty" in p for p in shape(untagged, "09"))
    no_further = [c for c in good if "Going further" not in c["source"]]
    assert any("ends with" in p for p in shape(no_further, "09"))
    assert any("project steps" in p for p in shape(good[:4] + good[5:], "09"))
    # Maths and code are not prose.
    assert prose_words("one $x + y = z$ two\n$$\na b c\n$$\n```\nx = 1\n```") == 2
