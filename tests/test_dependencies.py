"""Every module a chapter or attnlib imports is either the standard library, attnlib
itself, or a dependency that `pyproject.toml` declares (issue 38: pandas was imported by
every chapter and declared nowhere). The website's build runs each chapter in an
environment built from `pyproject.toml` (tests/colab_env.py), to which only myst-nb and
docutils are added for the glue; this reads every import statement, including those
inside functions, so that an undeclared one fails in a second, even one of those two."""

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Import name -> distribution name, where they differ.
DISTRIBUTION = {"sklearn": "scikit-learn", "skimage": "scikit-image", "PIL": "pillow"}


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
            found |= imported(source)
    return found


def imported(source: str) -> set:
    """The top-level packages that ``source`` imports absolutely, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def library_imports() -> dict:
    """Third-party packages imported anywhere in attnlib -> the files importing them."""
    found = {}
    for module in sorted((ROOT / "attnlib").rglob("*.py")):
        names = imported(module.read_text()) - set(sys.stdlib_module_names)
        for name in names - {"attnlib"}:
            found.setdefault(name, set()).add(module.relative_to(ROOT).as_posix())
    return found


#: Imports allowed outside the declared dependencies, and where: attnlib.notebook runs
#: in a Jupyter kernel (IPython) and records values with myst-nb only if it is there.
KERNEL_ONLY = {"IPython": {"attnlib/notebook.py"}, "myst_nb": {"attnlib/notebook.py"}}


def test_every_library_import_is_declared_or_stdlib():
    found = library_imports()
    assert {"torch", "numpy", "triton", "myst_nb"} <= set(found), sorted(found)
    allowed = declared(extras=True)
    missing = {
        name: sorted(files - KERNEL_ONLY.get(name, set()))
        for name, files in found.items()
        if DISTRIBUTION.get(name, name).lower() not in allowed
        and files - KERNEL_ONLY.get(name, set())
    }
    assert not missing, f"attnlib imports undeclared packages: {missing}"


def declared(extras: bool = False) -> set:
    """pyproject's dependencies, with ``extras`` its optional ones but the tests'."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    if extras:
        optional = project["optional-dependencies"]
        requirements += [
            r for extra in optional if extra != "test" for r in optional[extra]
        ]
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


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
