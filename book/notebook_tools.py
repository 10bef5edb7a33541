"""Keep the chapters' notebooks consistent: stamp the setup cell, strip outputs.

The repository URL lives in ``_config.yml`` alone; every chapter's first code cell is
rendered from it here, so moving the repository is a one-line change plus
``make stamp``.

    python book/notebook_tools.py stamp   # rewrite every setup cell from _config.yml
    python book/notebook_tools.py strip   # remove outputs and execution counts
    python book/notebook_tools.py check   # exit 1 if a notebook is stale or has outputs
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# hide-cell: the setup (code and its one printed line) folds into one toggle, so that a
# chapter's first screen on a phone shows its title and opening.
SETUP_TAGS = ["setup", "hide-cell"]

# Its last line fits 88 columns in the chapters; only the doubled braces make it longer
# here (hence the noqa).
SETUP_TEMPLATE = """\
# Setup, stamped from _config.yml by book/notebook_tools.py (edit the template there).
import sys
import warnings

# In Colab, install attnlib with the chapters' extras from its repository, once.
ATTNLIB = (
    "{install_spec}"
)
if "google.colab" in sys.modules:
    import importlib.util
    import subprocess

    if importlib.util.find_spec("attnlib") is None:
        pip = [sys.executable, "-m", "pip", "install", "-q", ATTNLIB]
        subprocess.run(pip, check=True)
        importlib.invalidate_caches()

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

import attnlib
from attnlib.notebook import glue
from attnlib.plotting import use_book_style
from attnlib.utils import get_device, seed_offset, seeds, set_seed

# Every random draw of the chapter follows from its seeds; ATTNLIB_SEED_OFFSET=k
# re-runs it on seeds nobody chose (seed s becomes s + k).
OFFSET = seed_offset()
set_seed(OFFSET)
# A solver that stops short of its tolerance stops the chapter, not just warns.
warnings.simplefilter("error", ConvergenceWarning)
use_book_style()
device = get_device()
print(f"attnlib {{attnlib.__version__}}, torch {{torch.__version__}}, device: {{device}},"
      f" seed offset {{OFFSET}}")"""  # noqa: E501


def install_spec(config_path: Path = ROOT / "_config.yml", extras: str = "") -> str:
    """The pip requirement installing attnlib from the book's repository and branch.

    ``extras`` (e.g. ``"book"``) names optional dependencies to install with it.
    """
    repo = yaml.safe_load(config_path.read_text())["repository"]
    name = f"attnlib[{extras}]" if extras else "attnlib"
    url = repo["url"].rstrip("/")
    return f"{name} @ git+{url}.git@{repo.get('branch', 'main')}"


def setup_cell_source(spec: str | None = None) -> str:
    """The setup cell's code, installing ``spec`` in Colab.

    ``spec`` defaults to the one from ``_config.yml`` with the chapters' extras,
    ``attnlib[book]`` (``pip install attnlib`` alone brings the core's torch and NumPy).
    """
    return SETUP_TEMPLATE.format(install_spec=spec or install_spec(extras="book"))


def chapter_notebooks() -> list[Path]:
    """Every notebook of the book (``book/*.ipynb``), sorted by name."""
    return sorted((ROOT / "book").glob("*.ipynb"))


def _setup_cell(nb: dict) -> dict:
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    if not code:
        raise ValueError("the notebook has no code cell to hold the setup")
    return code[0]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def problems(path: Path) -> list[str]:
    """What is wrong with a committed notebook: a stale setup cell, outputs left in."""
    nb = json.loads(path.read_text())
    found = []
    cell = _setup_cell(nb)
    if (
        _source(cell) != setup_cell_source()
        or cell.get("metadata", {}).get("tags") != SETUP_TAGS
    ):
        found.append(f"{path.name}: the setup cell is stale (run `make stamp`)")
    if any(
        c.get("outputs") or c.get("execution_count")
        for c in nb["cells"]
        if c["cell_type"] == "code"
    ):
        found.append(f"{path.name}: outputs are committed (run `make strip`)")
    return found


def _rewrite(path: Path, stamp: bool) -> None:
    nb = json.loads(path.read_text())
    if stamp:
        cell = _setup_cell(nb)
        # In the form the notebook holds it (Jupyter saves a list of lines), so that a
        # re-stamp changes only the lines that changed.
        source = setup_cell_source()
        was_list = isinstance(cell.get("source"), list)
        cell["source"] = source.splitlines(keepends=True) if was_list else source
        cell.setdefault("metadata", {})["tags"] = SETUP_TAGS
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            c["outputs"], c["execution_count"] = [], None
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "check"
    if command in ("stamp", "strip"):
        for path in chapter_notebooks():
            _rewrite(path, stamp=command == "stamp")
        return 0
    if command == "check":
        found = [p for path in chapter_notebooks() for p in problems(path)]
        print("\n".join(found) or "every notebook is stamped and stripped")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
