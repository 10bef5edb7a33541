"""The chapters follow the house rules: stamped, stripped, listed in the table of
contents, ending with a summary and executable exercises. (nbmake executes them;
test_site builds them.)"""

import importlib
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))
import notebook_tools  # noqa: E402

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
TOC_FILES = [TOC["root"]] + [
    ch["file"] for part in TOC["parts"] for ch in part["chapters"]
]
NOTEBOOKS = notebook_tools.chapter_notebooks()


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _text(cell):
    return (
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    )


def test_there_are_chapters():
    assert any(p.name.startswith("01_") for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stamped_and_stripped(path):
    assert notebook_tools.problems(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_anatomy(path):
    cells = _cells(path)
    assert cells[0]["cell_type"] == "markdown" and _text(cells[0]).startswith("# "), (
        "a title first"
    )
    assert (
        cells[1]["cell_type"] == "code" and "setup" in cells[1]["metadata"]["tags"]
    ), "then the setup cell"
    markdown = "\n".join(_text(c) for c in cells if c["cell_type"] == "markdown")
    assert "## Summary" in markdown and "## Exercises" in markdown
    exercises = re.findall(r":label: (ex-[\w-]+)", markdown)
    solutions = re.findall(r"\{solution-start\} (ex-[\w-]+)", markdown)
    assert len(exercises) >= 4 and sorted(exercises) == sorted(solutions), (
        "at least 4 exercises, each solved"
    )
    assert markdown.index("## Summary") < markdown.index("## Exercises")


def test_exercise_labels_are_unique_across_the_book():
    labels = [
        label
        for path in NOTEBOOKS
        for cell in _cells(path)
        if cell["cell_type"] == "markdown"
        for label in re.findall(r":label: ([\w-]+)", _text(cell))
    ]
    assert len(labels) == len(set(labels))


def test_every_page_is_in_the_toc_and_exists():
    pages = {
        str(p.relative_to(ROOT).with_suffix(""))
        for p in ROOT.glob("book/*")
        if p.suffix in (".ipynb", ".md")
    }
    assert pages == set(TOC_FILES)


def test_setup_cell_comes_from_the_config():
    url, branch = CONFIG["repository"]["url"], CONFIG["repository"]["branch"]
    assert branch == "main"
    assert f"git+{url}.git@main" in notebook_tools.setup_cell_source()
    assert "/tmp/attnlib.whl" in notebook_tools.setup_cell_source("/tmp/attnlib.whl")


def test_book_configuration():
    assert CONFIG["only_build_toc_files"] is True
    assert (
        CONFIG["execute"]["timeout"] >= 300
        and CONFIG["execute"]["raise_on_error"] is True
    )
    assert {"amsmath", "dollarmath", "colon_fence"} <= set(
        CONFIG["parse"]["myst_enable_extensions"]
    )
    assert {"sphinx_proof", "sphinx_exercise", "sphinx_togglebutton"} <= set(
        CONFIG["sphinx"]["extra_extensions"]
    )
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert "://" not in CONFIG["sphinx"]["config"]["mathjax_path"], (
        "MathJax is served by the site itself"
    )


def test_every_module_is_in_the_api_reference():
    # one page per module under book/api/, listed by book/api.md
    api = "".join(p.read_text() for p in sorted((ROOT / "book" / "api").glob("*.md")))
    index = (ROOT / "book" / "api.md").read_text()
    pages = sorted(p.stem for p in (ROOT / "book" / "api").glob("*.md"))
    assert [p for p in pages if f"(api/{p}.md)" not in index] == []
    # Every public module and package of attnlib (no ``_`` in its path: the private
    # engines are documented by the ideas that call them) with public names that its
    # package does not re-export: a package (subspace, its experiments) documents its
    # modules.
    public = {}
    for p in sorted((ROOT / "attnlib").rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if any(part.startswith("_") for part in parts) or len(parts) < 2:
            continue
        name = ".".join(parts)
        public[name[len("attnlib.") :]] = set(
            getattr(importlib.import_module(name), "__all__", ())
        )
    modules = sorted(
        m
        for m, names in public.items()
        if names and not ("." in m and names <= public.get(m.rsplit(".", 1)[0], set()))
    )
    assert "subspace" in modules and "subspace.lasso" not in modules
    assert [m for m in modules if f".. automodule:: attnlib.{m}\n" not in api] == []


# Issue 47: the machinery off the reading path. Each chapter's opening links to the
# page "Running this book" in one line and no longer carries the seed-offset and GPU
# paragraphs; the departures box is the chapter's last section, "Notes on the sources".
RUNNING_LINK = "[Running this book](running.md)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_opening_links_to_running_this_book(path):
    opening = _text(_cells(path)[0])
    lines = [line for line in opening.splitlines() if RUNNING_LINK in line]
    assert len(lines) == 1, "one line of the opening links to Running this book"
    rest = "\n".join(line for line in opening.splitlines() if line not in lines)
    assert "ATTNLIB_SEED_OFFSET" not in rest and "GPU" not in rest, (
        "seeds and devices are explained on book/running.md, not in the opening"
    )
    assert (ROOT / "book" / "running.md").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notes_on_the_sources_close_the_chapter(path):
    cells = _cells(path)
    last = _text(cells[-1])
    assert last.startswith("## Notes on the sources\n"), "the last section"
    assert "{admonition} Where we depart" in last and ":class: departures" in last
    others = [c for c in cells[:-1] if "Where we depart" in _text(c)]
    assert others == [], "the departures box is only in the last section"
