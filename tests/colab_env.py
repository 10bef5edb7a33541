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
    # Only now: what records glued values for the build, and nothing it would pull in.
    recorder = [f"{name}=={metadata.version(name)}" for name in GLUE_RECORDER]
    run(python, "-m", "pip", "install", "-q", "--no-deps", *recorder)
    return ColabEnvironment(folder, python, before, setup)


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

    setup = notebook_tools.setup_cell_source(str(wheel))
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
