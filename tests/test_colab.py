"""The Colab launch button, proven as far as this machine allows, for every chapter.

A wheel of attnlib is built; a fresh virtual environment receives torch (pinned, so
that pip takes the CPU build) and the Jupyter kernel, and nothing else. Each chapter is
copied ALONE into an empty folder, as Colab opens it (no checkout beside it: committed
results must come from the installed package), and executed there with its setup cell
installing the local wheel instead of the repository URL, while pretending to be Colab.
The setup cell runs twice, to show that it is idempotent.

Everything else a chapter imports must arrive with that install, as one of attnlib's
declared dependencies: so this is also each chapter run in an environment built from
``pyproject.toml`` alone (issue 38: pandas, imported by every chapter and declared
nowhere, passed while this environment installed it itself). A Colab runtime ships
more (numpy, pandas, scikit-learn...), which only spares the install some downloads.

This is the suite's execution of the chapters (nbmake is not run as well); the site
build executes them a second time, in the project's environment, with every claim and
glue.
"""

import json
import os
import subprocess
import sys
import venv
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))
import notebook_tools  # noqa: E402

CHAPTERS = notebook_tools.chapter_notebooks()
# The fresh environment before the setup cell: torch pinned as the project pins it (the
# CPU wheel; unpinned, pip takes the CUDA build) and what runs a notebook, nothing else.
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
    "import nbclient, nbformat\nnb = nbformat.read('chapter.ipynb', "
    "as_version=4)\nnbclient.NotebookClient(nb, timeout=600, "
    "kernel_name='python3').execute()\nprint(''.join(o.get('text', '') for c in "
    "nb.cells[:5] for o in c.get('outputs', [])))"
)


def _run(*args, **kwargs):
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, **kwargs
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, args))} "
        f"failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("colab")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "-q",
        "-w",
        tmp / "dist",
        ROOT,
    )
    wheel = next((tmp / "dist").glob("attnlib-*.whl"))
    venv.create(tmp / "venv", with_pip=True)
    python = tmp / "venv" / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", *FRESH_STACK)
    missing = subprocess.run(
        [python, "-c", "import attnlib"], capture_output=True, cwd=tmp
    )
    assert missing.returncode != 0, (
        "the fresh environment must not have attnlib before the setup cell runs"
    )
    return python, wheel, tmp


@pytest.fixture(scope="module")
def colab_kernel(colab_python):
    python, wheel, tmp = colab_python
    _run(
        python,
        "-m",
        "ipykernel",
        "install",
        "--prefix",
        tmp / "venv",
        "--name",
        "python3",
    )
    return python, wheel, tmp


def _execute(chapter, python, wheel, tmp) -> subprocess.CompletedProcess:
    """Run ``chapter`` alone in an empty folder of the fresh environment."""
    nb = json.loads(chapter.read_text())
    code = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    setup = nb["cells"][code[0]]
    setup["source"] = notebook_tools.setup_cell_source(str(wheel))
    cell = lambda src, id: {
        "cell_type": "code",
        "id": id,
        "metadata": {},
        "source": src,
        "outputs": [],
        "execution_count": None,
    }  # noqa: E731
    # pretend to be Colab, run the setup cell twice, check where attnlib came from, then
    # the chapter
    nb["cells"][code[0] : code[0] + 1] = [
        cell(PRETEND_COLAB, "pretend-colab"),
        setup,
        dict(setup, id="setup-again"),
        cell(CHECK_INSTALLED, "check-installed"),
    ]
    work = tmp / chapter.stem  # an empty folder holding the notebook alone
    work.mkdir()
    (work / "chapter.ipynb").write_text(json.dumps(nb))
    return subprocess.run(
        [str(python), "-c", EXECUTE],
        capture_output=True, text=True, cwd=work, env=_clean_env(tmp),
    )  # fmt: skip


@pytest.fixture(scope="module")
def executions(colab_kernel, request):
    """The selected chapters' executions, started together: the first alone (its setup
    cell installs attnlib into the fresh environment; the others' find it there and
    install nothing), then two at a time, since each uses one core and this file often
    runs last, beside an idle worker."""
    chosen = [
        item.callspec.params["chapter"]
        for item in request.session.items
        if getattr(item, "module", None) is request.module
        and "chapter" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    if not chosen or request.config.getoption("dist", "no") not in ("no", "loadfile"):
        yield {}  # xdist may split this file: each test runs its chapter itself
        return
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(_execute, chosen[0], *colab_kernel)

        def after_first(chapter):
            wait([first])
            return _execute(chapter, *colab_kernel)

        runs = {chosen[0]: first}
        runs.update({ch: pool.submit(after_first, ch) for ch in chosen[1:]})
        yield runs
        for run in runs.values():
            run.cancel()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_alone_in_a_fresh_colab_like_environment(
    colab_kernel, executions, chapter
):
    run = executions.get(chapter)
    done = run.result() if run else _execute(chapter, *colab_kernel)
    assert done.returncode == 0, (
        f"{chapter.name} failed alone in the fresh environment:\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


def _clean_env(tmp):
    """A fresh machine's environment: no project venv on PATH, no repo on sys.path."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{tmp / 'venv' / 'bin'}:/usr/bin:/bin"
    env["JUPYTER_PATH"] = str(tmp / "venv" / "share" / "jupyter")
    return env
