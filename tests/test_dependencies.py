"""Every module a chapter imports is either the standard library, attnlib itself, or a
dependency that `pyproject.toml` declares (issue 38: pandas was imported by every
chapter and declared nowhere). The website's build runs each chapter in an environment
built from `pyproject.toml` alone (tests/colab_env.py); this reads the chapters' import
statements, and says which one is missing in a second instead of a chapter's
traceback."""

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Import name -> distribution name, where they differ.
DISTRIBUTION = {"sklearn": "scikit-learn", "skimage": "scikit-image"}


def chapter_imports():
    found = set()
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            # IPython magics and shell lines are not Python.
            lines = source.splitlines()
            source = "\n".join(
                line for line in lines if not line.lstrip().startswith(("%", "!"))
            )
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    found.add(node.module.split(".")[0])
    return found


def declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in project["dependencies"]:
        names.add(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower())
    return names


def test_the_chapters_import_something():
    assert {"attnlib", "torch", "numpy"} <= chapter_imports()


def test_every_chapter_import_is_declared_or_stdlib():
    third_party = {
        name
        for name in chapter_imports()
        if name not in sys.stdlib_module_names and name != "attnlib"
    }
    missing = {
        name for name in third_party if DISTRIBUTION.get(name, name) not in declared()
    }
    assert not missing, f"chapters import undeclared packages: {sorted(missing)}"


def test_pandas_is_declared():
    assert "pandas" in declared()
