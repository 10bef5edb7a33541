"""The code passes ``ruff check`` and ``ruff format --check`` with pyproject's settings.

88 columns (the width a code cell shows), rules E, F, W, I, B, UP and NPY. The
chapters' notebooks are not in the run: their cells' width has its own test
(test_notebooks), and their teaching style (several short statements on a line,
closures called at once in a loop) is deliberate.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "pyproject.toml"


def _paths() -> list[str]:
    scripts = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("book/*.py"))
    return ["attnlib", "tests", "benchmarks", "tools", "book/_ext", *scripts]


def ruff_findings(paths, config: Path = CONFIG) -> str:
    """What ``ruff check`` and ``ruff format --check`` say about ``paths`` ("": clean).

    Both run as ``python -m ruff`` from this interpreter's environment, in the
    repository's root, with ``config``.
    """
    report = []
    for args in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):
        run = subprocess.run(
            [sys.executable, "-m", "ruff", *args, "--config", str(config), *paths],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            report.append(f"$ ruff {' '.join(args)}\n{run.stdout}{run.stderr}")
    return "\n".join(report)


def test_ruff_is_installed():
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True
    )
    assert run.returncode == 0, "ruff is missing: pip install -r requirements.txt"


def test_the_tree_passes_ruff():
    findings = ruff_findings(_paths())
    assert not findings, findings


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1  # " + "a long comment " * 6 + "\n", "E501"),
        ("import os\n", "F401"),
        ("x = [1,2]\n", "would be reformatted"),
    ],
    ids=["long-line", "unused-import", "unformatted"],
)
def test_a_planted_finding_fails(tmp_path, source, expected):
    planted = tmp_path / "planted.py"
    planted.write_text(source)
    findings = ruff_findings([str(planted)])
    assert expected in findings, findings


def _modules_without_all(root: Path) -> list[str]:
    """The modules under ``root`` that name no ``__all__`` (a module's interface)."""
    import ast

    missing = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        names = {
            target.id
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (
                node.targets if isinstance(node, ast.Assign) else [node.target]
            )
            if isinstance(target, ast.Name)
        }
        if "__all__" not in names:
            missing.append(str(path.relative_to(root)))
    return missing


def test_every_module_of_attnlib_names_its_interface():
    """Every module, private engines included, says in ``__all__`` what it offers, so
    that what other modules may import from it is written down (issue 51)."""
    assert _modules_without_all(ROOT / "attnlib") == []


def test_the_interface_rule_flags_a_planted_module(tmp_path):
    (tmp_path / "a.py").write_text('__all__ = ["f"]\n\n\ndef f():\n    return 1\n')
    (tmp_path / "b.py").write_text("def g():\n    return 2\n")
    assert _modules_without_all(tmp_path) == ["b.py"]
