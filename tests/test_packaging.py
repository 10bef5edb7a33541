"""The installable package: built as sdist and wheel, validated by twine, and its
metadata says what is true (the Python versions that are tested, the committed results
shipped).

The tested versions are 3.11 (this environment, `make test`) and 3.12
(`make test-latest`); `pyproject.toml` must name exactly those in its classifiers, with
3.11 as the lower bound.
"""

import email
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text()


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """Build the sdist and the wheel once, without network, from a copy of the files git
    knows (as a fresh clone has them: no stale build/ or egg-info of the working
    tree)."""
    clone, out = tmp_path_factory.mktemp("clone"), tmp_path_factory.mktemp("dist")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--sdist",
            "--wheel",
            "--outdir",
            str(out),
            str(clone),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return out


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(zf.read(name))


def test_twine_check_passes(dist):
    files = sorted(str(p) for p in dist.iterdir())
    assert any(f.endswith(".whl") for f in files) and any(
        f.endswith(".tar.gz") for f in files
    ), files
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == len(files), check.stdout


def test_supported_pythons_are_the_tested_ones(dist):
    meta = _metadata(next(dist.glob("*.whl")))
    classified = {
        c.rsplit("::", 1)[1].strip()
        for c in meta.get_all("Classifier")
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    latest = re.search(
        r"python(3\.\d+)",
        MAKEFILE.split("test-latest:")[0].split("PYTHON_LATEST ?=")[1],
    ).group(1)
    assert here == "3.11", (
        f"make test is expected to run on 3.11 (requirements.txt's torch), not {here}"
    )
    assert classified == {here, latest}, classified
    assert (
        meta["Requires-Python"]
        == f">={min(classified, key=lambda v: tuple(map(int, v.split('.'))))}"
    )


def test_wheel_ships_the_library_and_its_committed_results(dist):
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as zf:
        names = set(zf.namelist())
    # Every source file of the package: its modules in every subpackage, and the C
    # source that attnlib.normalizers._entmax_loops compiles on first use.
    modules = {
        p.relative_to(ROOT).as_posix()
        for pattern in ("*.py", "*.c")
        for p in (ROOT / "attnlib").rglob(pattern)
        if "__pycache__" not in p.parts
    }
    assert "attnlib/normalizers/_entmax_loops.c" in modules
    results = {
        f"attnlib/results/{p.name}"
        for p in (ROOT / "attnlib" / "results").glob("*.json")
    }
    assert results, "no committed results found"
    assert modules | results <= names, sorted((modules | results) - names)
    assert not any(n.startswith(("tests/", "book/", "benchmarks/")) for n in names)


def test_sdist_has_the_readme_as_description(dist):
    meta = _metadata(next(dist.glob("*.whl")))
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# Attention Before Attention")
    with tarfile.open(next(dist.glob("*.tar.gz"))) as tf:
        assert any(n.endswith("/README.md") for n in tf.getnames())


def test_the_wheel_is_typed_and_slim(dist):
    """PEP 561's ``py.typed`` marker ships in the wheel (and the sdist); the wheel
    requires torch and NumPy alone, the chapters' stack coming with ``[book]``."""
    wheel = next(dist.glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        assert "attnlib/py.typed" in zf.namelist()
    with tarfile.open(next(dist.glob("*.tar.gz"))) as tf:
        assert any(n.endswith("/attnlib/py.typed") for n in tf.getnames())
    requires = _metadata(wheel).get_all("Requires-Dist")
    plain = {r.split(">")[0].split("=")[0] for r in requires if "extra ==" not in r}
    book = {r.split(">")[0].split("=")[0] for r in requires if 'extra == "book"' in r}
    assert plain == {"torch", "numpy"}, requires
    assert {"scipy", "scikit-learn", "numba", "matplotlib", "pandas"} <= book, requires


def test_the_setup_cell_installs_the_book_extras():
    sys.path.insert(0, str(ROOT / "book"))
    import notebook_tools

    assert (
        'ATTNLIB = (\n    "attnlib[book] @ git+' in notebook_tools.setup_cell_source()
    )
    assert notebook_tools.install_spec().startswith("attnlib @ git+")  # the README's
