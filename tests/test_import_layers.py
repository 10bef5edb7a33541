"""The house's layers: imports run one way, and nothing hides a dependency.

book-facing (notebook, plotting, results) > ideas (each with its core, its private
engines and its ``experiments``) > layers > attention > normalizers > data > foundation
(training, utils, errors), declared as import-linter contracts in pyproject.toml, with
a private module imported only inside its parent package. The AST checks below catch
what an import graph cannot see: an import by name, an import inside a function, a
private name borrowed from another package, a registration at import time, an idea's
core that imports its own experiments.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "attnlib"
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [str(LINT), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _modules():
    for path in sorted(LIB.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, ".".join(parts), ast.parse(path.read_text())


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _package(module: str) -> str:
    """``attnlib.X`` for every module inside ``attnlib/X`` (or ``attnlib/X.py``)."""
    return ".".join(module.split(".")[:2])


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")
def test_the_layer_contracts_hold():
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")
def test_a_planted_upward_import_breaks_the_contracts(tmp_path):
    shutil.copytree(LIB, tmp_path / "attnlib", ignore=shutil.ignore_patterns("*.json"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    utils = tmp_path / "attnlib" / "utils" / "__init__.py"
    utils.write_text(
        utils.read_text() + "\nfrom ..mux.experiments import routing  # planted\n"
    )
    run = _lint(tmp_path)
    assert run.returncode != 0
    assert "BROKEN" in run.stdout and "attnlib.utils -> attnlib.mux" in run.stdout


def test_every_module_of_attnlib_sits_in_a_layer():
    text = (ROOT / "pyproject.toml").read_text()
    layers = text.split("[tool.importlinter]", 1)[1]
    named = {
        w.strip('",') for w in layers.split() if w.strip('",').startswith("attnlib.")
    }
    for _, module, _ in _modules():
        top = _package(module)
        if top != "attnlib":
            assert top in named, f"{top} is in no layer of pyproject.toml"


def test_no_import_by_name_and_no_registration_at_import_time():
    for _, module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                assert name not in ("import_module", "__import__"), (
                    f"{module} imports by name (line {node.lineno})"
                )
        for stmt in tree.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                f = stmt.value.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                assert not name.startswith("register"), (
                    f"{module} registers at import time (line {stmt.lineno})"
                )


def test_no_import_of_attnlib_inside_a_function():
    for path, module, tree in _modules():
        for top in tree.body:
            for node in ast.walk(top):
                if node is top or not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                if isinstance(node, ast.ImportFrom):
                    is_pkg = path.name == "__init__.py"
                    target = _resolve(module, node, is_pkg)
                else:
                    target = node.names[0].name
                assert not target.startswith("attnlib"), (
                    f"{module} imports {target} inside a function (line {node.lineno})"
                )


def test_no_private_name_crosses_a_package():
    crossings = []
    for path, module, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(module, node, path.name == "__init__.py")
            if not target.startswith("attnlib") or _package(target) == _package(module):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    crossings.append(f"{module} imports {target}.{alias.name}")
    assert not crossings, crossings


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")
def test_a_planted_import_of_another_ideas_engine_breaks_the_contracts(tmp_path):
    shutil.copytree(LIB, tmp_path / "attnlib", ignore=shutil.ignore_patterns("*.json"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    mux = tmp_path / "attnlib" / "mux" / "experiments" / "__init__.py"
    mux.write_text(mux.read_text() + "\nfrom ...denoise import _nlm  # planted\n")
    run = _lint(tmp_path)
    assert run.returncode != 0
    assert "BROKEN" in run.stdout and "attnlib.denoise._nlm" in run.stdout


def _imports(path: Path, module: str, tree: ast.Module):
    """Every attnlib module that ``module`` imports (a name imported from a package
    counts as the submodule it may be)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, path.name == "__init__.py")
            yield target
            yield from (f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_no_idea_imports_its_own_experiments():
    """An idea's ``experiments`` (module or package) sit above its core: the core (every
    other module of the idea) never imports them."""
    for path, module, tree in _modules():
        idea = _package(module)
        experiments = f"{idea}.experiments"
        if module.startswith(experiments):
            continue
        bad = [t for t in _imports(path, module, tree) if t.startswith(experiments)]
        assert not bad, f"{module} imports {bad[0]}: the core imports its experiments"


def test_the_experiments_check_bites():
    module, path = "attnlib.mux.models", LIB / "mux" / "models.py"
    tree = ast.parse("from .experiments import routing\n")
    assert any(
        t.startswith("attnlib.mux.experiments") for t in _imports(path, module, tree)
    )
