"""A fresh Colab-like environment: what a chapter opened alone in Colab runs on.

A wheel of attnlib is built; a fresh virtual environment receives torch (pinned, so
that pip takes the CPU build) and the Jupyter kernel, and nothing else. Then a chapter's
setup cell, run while pretending to be Colab, installs attnlib from the wheel, as it
installs it from the repository in Colab: everything else a chapter imports must
arrive with that install, as one of attnlib's declared dependencies (issue 38: pandas,
imported by every chapter and declared nowhere, passed while the project's environment
held it). The setup cell runs twice, to show that it can be run again.

The environment's kernel is then the one that executes every chapter in the website's
build (conftest's ``built_book``), each alone in an empty temporary folder
(``run_in_temp`` in ``_config.yml``): no checkout beside it, so that committed results
must come from the installed package. For the build, and after the setup cell, the
environment also receives myst-nb and docutils without their dependencies: with them
``attnlib.notebook.glue`` records the values that the prose quotes (tests/
test_dependencies.py checks that nothing else imports them, and test_glue.py the glue
without them, as in Colab). Each start of that kernel writes a line to ``kernel_log``
(its Python, its folder and what the folder held), from which tests/test_colab.py reads
that every page ran there, alone.

A Colab runtime ships more (numpy, pandas, scikit-learn...), which only spares the
install some downloads.

Beside it, the slim install (``pip install attnlib``, no extras) is proven in a second
venv, cheaply: torch and NumPy are linked in from the first environment (their files,
found from their installed metadata, not installed again: some 40 s saved) and the
wheel is installed with ``--no-deps``. There ``import attnlib``, ``attnlib.attention(q,
k, v)``, the modules and the normalisers must run with none of the book's extras
importable, and an idea that needs them must say ``pip install 'attnlib[book]'``
(``SLIM_CHECK``).
"""

import dataclasses
import json
import os
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))
import notebook_tools  # noqa: E402

# torch pinned as the project pins it (the CPU wheel; unpinned, pip takes the CUDA
# build) and what runs a notebook, nothing else.
FRESH_STACK = ["torch==2.13.0", "ipykernel", "nbclient", "nbformat"]
PRETEND_COLAB = (
    'import sys, types\nsys.modules["google.colab"] = types.ModuleType("google.colab")'
)
CHECK_INSTALLED = (
    "import importlib.metadata, attnlib\n"
    "assert 'site-packages' in attnlib.__file__, attnlib.__file__\n"
    "print('attnlib', importlib.metadata.version('attnlib'), 'from', attnlib.__file__)"
)
EXECUTE = (
    "import nbclient, nbformat\nnb = nbformat.read('setup.ipynb', as_version=4)\n"
    "nbclient.NotebookClient(nb, timeout=600, kernel_name='python3').execute()\n"
    "print(''.join(o.get('text', '') for c in nb.cells for o in c.get('outputs', [])))"
)
#: The book's extras that the slim install must not bring (import names).
BOOK_EXTRAS = ("scipy", "sklearn", "skimage", "numba", "matplotlib", "pandas", "PIL")
SLIM_CHECK = f"""\
import importlib.util, os, sys
import torch
import attnlib
from attnlib import MultiHeadAttention, TransformerEncoderLayer, normalizers

assert "site-packages" in attnlib.__file__, attnlib.__file__
absent = [m for m in {BOOK_EXTRAS!r} if importlib.util.find_spec(m) is not None]
assert not absent, f"the slim install brought {{absent}}"
q = torch.randn(2, 4, 8)
out = attnlib.attention(q, q, q)
out = out[0] if isinstance(out, tuple) else out
assert out.shape == (2, 4, 8) and torch.isfinite(out).all()
for name in ("softmax", "sparsemax", "entmax"):
    p = getattr(normalizers, name)(torch.randn(3, 7))
    torch.testing.assert_close(p.sum(-1), torch.ones(3))
mha = MultiHeadAttention(8, 2)
layer = TransformerEncoderLayer(8, 2)
mha(q, q, q)
layer(q)
try:
    import attnlib.kernel_regression
except ImportError as err:
    assert "attnlib[book]" in str(err), err
else:
    raise AssertionError("attnlib.kernel_regression imported without scikit-learn")
third = sorted(m.split(".")[0] for m in sys.modules if not m.startswith("_"))
print("loaded", sorted(set(third) - set(sys.stdlib_module_names)))
"""
# What attnlib.notebook.glue records values with when myst-nb is importable (in Colab it
# is not, and glue records nothing): the build's versions, added after the setup cell,
# without their dependencies (Sphinx, PyYAML...), which therefore stay missing.
GLUE_RECORDER = ("myst-nb", "docutils")
# An IPython start-up file of the environment's kernel: where each kernel ran, and what
# its folder held when it started. It runs in the chapter's namespace, so it leaves no
# name there (a chapter using ``json`` unimported would pass here and fail in Colab).
KERNEL_LOG = "kernel.log"
LOG_START = """\
def _log_start():
    import json, os, sys

    start = [sys.executable, os.getcwd(), sorted(os.listdir())]
    with open(os.environ["ATTNLIB_KERNEL_LOG"], "a") as log:
        log.write(json.dumps(start) + "\\n")


_log_start()
del _log_start
"""


def environ(folder: Path, python: Path) -> dict:
    """A fresh machine's environment variables, with the kernel of the environment in
    ``folder``: no project venv first on PATH, no repository on sys.path."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{python.parent}:/usr/bin:/bin"
    env["JUPYTER_PATH"] = str(folder / "venv" / "share" / "jupyter")
    return env


@dataclasses.dataclass
class ColabEnvironment:
    """The environment's folder and Python, and what its set-up found."""

    folder: Path
    python: Path
    #: ``import attnlib`` before the setup cell ran (it must fail)
    before: subprocess.CompletedProcess
    #: the setup cell's two runs under Colab's pretence, then CHECK_INSTALLED
    setup: subprocess.CompletedProcess
    #: SLIM_CHECK's run in the slim environment
    slim: subprocess.CompletedProcess
    #: bytes of the slim environment's site-packages besides torch and its dependencies
    slim_bytes: int

    @property
    def kernel_log(self) -> Path:
        """One line per start of the environment's kernel: its Python and folder."""
        return self.folder / KERNEL_LOG

    def environ(self) -> dict:
        """The variables under which a program uses this environment's kernel."""
        return environ(self.folder, self.python)


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    """Run ``args``; fail with its output if it fails."""
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, **kwargs
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, args))} failed:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


def create(folder: Path) -> ColabEnvironment:
    """Build the wheel and the environment in ``folder``; run the setup cell there."""
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", folder, ROOT)
    wheel = next(folder.glob("attnlib-*.whl"))
    venv.create(folder / "venv", with_pip=True)
    python = folder / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", *FRESH_STACK)
    _install_kernel(python, folder)
    env = environ(folder, python)
    before = subprocess.run(
        [python, "-c", "import attnlib"], capture_output=True, text=True, cwd=folder,
        env=env,
    )  # fmt: skip
    setup = _run_setup_cell(folder, python, wheel, env)
    (folder / KERNEL_LOG).unlink(missing_ok=True)  # the setup's kernel is no chapter
    slim, slim_bytes = _slim(folder, python, wheel)
    # Only now: what records glued values for the build, and nothing it would pull in.
    recorder = [f"{name}=={metadata.version(name)}" for name in GLUE_RECORDER]
    run(python, "-m", "pip", "install", "-q", "--no-deps", *recorder)
    return ColabEnvironment(folder, python, before, setup, slim, slim_bytes)


# Run by the Colab-like environment's Python: the top-level entries of site-packages
# that hold the files of torch and its dependencies (``torch``) and of NumPy.
_CLOSURE = """\
import json
from importlib import metadata

from pip._vendor.packaging.requirements import Requirement  # pip is in every venv

def closure(name):
    todo, seen = [name], set()
    while todo:
        dist = metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        for req in map(Requirement, dist.requires or []):
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen

def entries(names):
    found = set()
    for name in names:
        for f in metadata.distribution(name).files or []:
            if not str(f).startswith(".."):
                found.add(str(f).split("/")[0])
    return sorted(found)

print(json.dumps({"torch": entries(closure("torch")), "numpy": entries({"numpy"})}))
"""


def _slim(folder: Path, python: Path, wheel: Path):
    """The slim install in ``folder/slim``: torch and NumPy linked from the Colab-like
    environment, attnlib's wheel without its extras; SLIM_CHECK's run there, and the
    bytes of site-packages besides torch and its dependencies."""
    site = Path(
        run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        ).stdout.strip()
    )
    entries = json.loads(run(python, "-c", _CLOSURE).stdout)
    slim = folder / "slim"
    venv.create(slim, with_pip=False)  # the installs below use the outer pip
    slim_python = slim / "bin" / "python"
    slim_site = Path(
        run(
            slim_python,
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ).stdout.strip()
    )
    for entry in entries["torch"] + entries["numpy"]:
        (slim_site / entry).symlink_to(site / entry)
    env = environ(slim.parent, slim_python)  # no PYTHONPATH: no checkout's egg-info
    run(sys.executable, "-m", "pip", "--python", slim_python, "install", "-q",
        "--no-deps", "--no-index", wheel, env=env)  # fmt: skip
    # attnlib's own files and its declared dependencies; torch's closure aside
    besides = [
        slim_site / e for e in os.listdir(slim_site) if e not in entries["torch"]
    ]
    size = sum(
        f.stat().st_size
        for p in besides
        for f in ([p] if p.is_file() else p.resolve().rglob("*"))
        if f.is_file()
    )
    done = subprocess.run(
        [slim_python, "-c", SLIM_CHECK], capture_output=True, text=True, cwd=slim,
        env=env,
    )  # fmt: skip
    return done, size


def _install_kernel(python: Path, folder: Path) -> None:
    """The environment's ``python3`` kernel, logging each start to ``KERNEL_LOG``."""
    prefix = folder / "venv"
    run(python, "-m", "ipykernel", "install", "--prefix", prefix, "--name", "python3")
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-log-start.py").write_text(LOG_START)
    spec = prefix / "share" / "jupyter" / "kernels" / "python3" / "kernel.json"
    kernel = json.loads(spec.read_text())
    kernel["env"] = {
        "IPYTHONDIR": str(folder / "ipython"),
        "ATTNLIB_KERNEL_LOG": str(folder / KERNEL_LOG),
    }
    spec.write_text(json.dumps(kernel, indent=1))


def _run_setup_cell(folder, python, wheel, env) -> subprocess.CompletedProcess:
    """Pretend to be Colab, run the setup cell twice (installing ``wheel``), then
    check where attnlib came from; in an empty folder."""

    def cell(source, id):
        return {
            "cell_type": "code",
            "id": id,
            "metadata": {},
            "source": source,
            "outputs": [],
            "execution_count": None,
        }

    # the wheel with the chapters' extras, as the setup cell installs the repository
    setup = notebook_tools.setup_cell_source(f"attnlib[book] @ {wheel.as_uri()}")
    nb = {
        "cells": [
            cell(PRETEND_COLAB, "pretend-colab"),
            cell(setup, "setup"),
            cell(setup, "setup-again"),
            cell(CHECK_INSTALLED, "check-installed"),
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    work = folder / "setup"  # an empty folder holding the notebook alone
    work.mkdir()
    (work / "setup.ipynb").write_text(json.dumps(nb))
    return subprocess.run(
        [str(python), "-c", EXECUTE], capture_output=True, text=True, cwd=work, env=env
    )
