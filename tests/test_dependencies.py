"""Every module a chapter or attnlib imports is either the standard library, attnlib
itself, or a dependency that `pyproject.toml` declares (issue 38: pandas was imported by
every chapter and declared nowhere). The website's build runs each chapter in an
environment built from `pyproject.toml` (tests/colab_env.py), to which only myst-nb and
docutils are added for the glue; this reads every import statement, including those
inside functions, so that an undeclared one fails in a second, even one of those two.

The core (what ``import attnlib`` loads: the attention function, the modules, the
normalisers, their foundation) is found by following its module-level imports from
``attnlib/__init__.py``; what it imports, at any depth, must be exactly the slim
install's dependencies (``pip install attnlib``: torch and NumPy), the ``gpu`` extra's
Triton aside (imported only where it is installed). The rest is ``attnlib[book]``.
"""

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


def module_level_imports(source: str, path: Path) -> set:
    """The attnlib modules (files) that ``source`` at ``path`` imports when it is itself
    imported: its module-level imports (a function's body runs later, if ever)."""
    found = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(child, ast.ImportFrom):
                found.update(_attnlib_files(child, path))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "attnlib":
                        found.update(_files(ROOT.joinpath(*alias.name.split("."))))
            visit(child)

    visit(ast.parse(source))
    return found


def _files(stem: Path) -> set:
    """The module file of ``stem`` (a package's ``__init__.py``), if there is one."""
    if (stem / "__init__.py").exists():
        return {stem / "__init__.py"}
    return {stem.with_suffix(".py")} if stem.with_suffix(".py").exists() else set()


def _attnlib_files(node: ast.ImportFrom, path: Path) -> set:
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        stem = base.joinpath(*(node.module or "").split(".")) if node.module else base
    elif node.module.split(".")[0] == "attnlib":
        stem = ROOT.joinpath(*node.module.split("."))
    else:
        return set()
    found = _files(stem)
    for alias in node.names:  # ``from . import attention``: a submodule
        found |= _files(stem / alias.name)
    return found


def core_modules() -> set:
    """The files ``import attnlib`` loads, following module-level imports."""
    todo, seen = [ROOT / "attnlib" / "__init__.py"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        parents = [
            p / "__init__.py"
            for p in path.parents
            if p.is_relative_to(ROOT / "attnlib")
        ]
        todo += [p for p in parents if p.exists()]  # a package's __init__ runs first
        todo += module_level_imports(path.read_text(), path)
    return seen


def core_imports(files=None) -> dict:
    """Third-party packages imported anywhere in the core -> the files importing."""
    found = {}
    for module in sorted(files if files is not None else core_modules()):
        names = imported(module.read_text()) - set(sys.stdlib_module_names)
        where = module.relative_to(ROOT) if module.is_relative_to(ROOT) else module
        for name in names - {"attnlib"}:
            found.setdefault(name, set()).add(where.as_posix())
    return found


def test_the_core_is_the_attention_function_the_modules_and_the_normalisers():
    names = {p.relative_to(ROOT / "attnlib").as_posix() for p in core_modules()}
    assert {
        "__init__.py",
        "layers/__init__.py",
        "errors.py",
        "utils/__init__.py",
    } <= names
    assert any(n.startswith("normalizers/") for n in names), sorted(names)
    ideas = ("kernel_regression", "lle", "denoise", "subspace", "plotting", "training")
    assert not [n for n in names if n.startswith(ideas)], sorted(names)


def test_the_cores_imports_are_exactly_the_slim_dependencies():
    """A planted ``import scipy`` in a core module fails here (tools/mutants.py)."""
    found = core_imports()
    names = {DISTRIBUTION.get(name, name).lower() for name in found}
    gpu = declared(extras=("gpu",)) - declared()
    assert names - gpu == declared() == {"torch", "numpy"}, {
        name: sorted(files) for name, files in found.items()
    }


def test_a_planted_import_in_the_core_is_seen(tmp_path):
    """The reader follows a relative import into a module and sees what it imports."""
    package = tmp_path / "attnlib"
    package.mkdir()
    (package / "__init__.py").write_text("from .layers import X\n")
    (package / "layers.py").write_text("import torch\ndef f():\n    import scipy\n")
    files = module_level_imports(
        (package / "__init__.py").read_text(), package / "__init__.py"
    )
    assert files == {package / "layers.py"}
    assert set(core_imports(files)) == {"torch", "scipy"}


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
    allowed = declared(extras=("book", "gpu"))
    missing = {
        name: sorted(files - KERNEL_ONLY.get(name, set()))
        for name, files in found.items()
        if DISTRIBUTION.get(name, name).lower() not in allowed
        and files - KERNEL_ONLY.get(name, set())
    }
    assert not missing, f"attnlib imports undeclared packages: {missing}"


def declared(extras=()) -> set:
    """pyproject's dependencies (the slim install's), with those of ``extras``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    optional = project["optional-dependencies"]
    requirements += [r for extra in extras for r in optional[extra]]
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


def test_the_chapters_import_something():
    assert {"attnlib", "torch", "numpy"} <= chapter_imports()


def test_every_chapter_import_is_declared_or_stdlib():
    third_party = {
        name
        for name in chapter_imports()
        if name not in sys.stdlib_module_names and name != "attnlib"
    }
    book = declared(extras=("book",))  # the setup cell installs attnlib[book]
    missing = {name for name in third_party if DISTRIBUTION.get(name, name) not in book}
    assert not missing, f"chapters import undeclared packages: {sorted(missing)}"


def test_pandas_is_declared():
    assert "pandas" in declared(extras=("book",))
