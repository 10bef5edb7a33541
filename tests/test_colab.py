"""The Colab launch button, proven as far as this machine allows, for every chapter.

tests/colab_env.py builds a fresh Colab-like environment (torch and the Jupyter kernel,
nothing else) and runs the chapters' setup cell there while pretending to be Colab: it
installs ``attnlib[book]`` from a wheel of this checkout, with the declared dependencies
and nothing more, then runs again without error. Beside it, a slim environment holds
the wheel without extras (``pip install attnlib``), where the core must run alone. The
website's build (conftest's ``built_book``) then executes every chapter with that
environment's kernel, each alone
in an empty temporary folder: the suite's one execution of the chapters, so that a
chapter importing an undeclared package, or reading a file of the checkout, fails the
build (both were planted and failed it). The kernel also has myst-nb and docutils, for
the glue; test_dependencies.py fails any other import of them. Checked here: the setup,
and that the build's kernels really were that environment's, one per executed page,
each in a folder of its own that was empty, outside the checkout.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))
import notebook_tools  # noqa: E402

#: What the build executes: the chapters, and the pages written as MyST notebooks (a
#: ``kernelspec`` in their front matter: the benchmarks appendix).
EXECUTED = notebook_tools.chapter_notebooks() + [
    page
    for page in sorted((ROOT / "book").glob("*.md"))
    if page.read_text().startswith("---")
    and "kernelspec:" in page.read_text().split("---")[1]
]


def test_the_fresh_environment_has_no_attnlib_before_the_setup_cell(colab_environment):
    before = colab_environment.before
    assert before.returncode != 0 and "attnlib" in before.stderr, (
        "the fresh environment must not have attnlib before the setup cell runs:\n"
        + before.stdout
        + before.stderr
    )


def test_the_setup_cell_installs_attnlib_from_its_wheel_and_is_idempotent(
    colab_environment,
):
    done = colab_environment.setup
    assert done.returncode == 0, (
        "the setup cell failed in the fresh environment (run twice, as in Colab):\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    installed = [line for line in done.stdout.splitlines() if "from" in line]
    assert installed and "site-packages" in installed[-1], done.stdout[-3000:]


def test_the_slim_install_runs_the_core_without_the_books_extras(colab_environment):
    """``pip install attnlib`` without extras (tests/colab_env.py's SLIM_CHECK): import
    attnlib, attention(q, k, v), the modules and the normalisers run, none of the book's
    extras is importable, and an idea that needs them names ``attnlib[book]``."""
    done = colab_environment.slim
    assert done.returncode == 0, (
        f"the slim install failed its check:\n{done.stdout[-3000:]}\n"
        f"{done.stderr[-3000:]}"
    )
    loaded = next(
        line for line in done.stdout.splitlines() if line.startswith("loaded")
    )
    assert "'torch'" in loaded and "'numpy'" in loaded, loaded
    # NumPy (~75 MB) and attnlib (~3 MB) besides torch's own files; the book's extras
    # were ~570 MB
    megabytes = colab_environment.slim_bytes / 1e6
    print(f"slim install besides torch and its dependencies: {megabytes:.1f} MB")
    assert megabytes < 150, megabytes


def test_every_chapter_ran_alone_on_that_environments_kernel(
    colab_environment, built_book
):
    assert built_book["site_returncode"] == 0, (
        "the book did not build:\n" + built_book["site_report"]
    )
    starts = [
        json.loads(line)
        for line in colab_environment.kernel_log.read_text().splitlines()
    ]
    assert len(starts) == len(EXECUTED), (
        f"{len(starts)} kernels of the Colab-like environment started for "
        f"{len(EXECUTED)} executed pages: did the build execute some elsewhere?"
    )
    for python, folder, held in starts:
        assert Path(python) == colab_environment.python, python
        assert not Path(folder).is_relative_to(ROOT), (
            f"a page ran in {folder}, inside the checkout, not alone"
        )
        assert held == [], f"a page ran beside {held} in {folder}, not alone"
    folders = [folder for _, folder, _ in starts]
    assert len(set(folders)) == len(folders), f"pages shared a folder: {folders}"
