"""Execute a chapter with CUDA simulated on the CPU (tests/simulated_cuda.py).

The chapter's kernel starts with an IPython startup file that enters
:class:`simulated_cuda.SimulatedCuda`, so that the setup cell's ``get_device()``
picks the simulated ``cuda:0`` exactly as it would pick a GPU runtime's, and any
device mixing raises as it would there. Usage::

    python tools/simulated_chapter.py book/08_multiplexer.ipynb [--timeout 600]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests"
STARTUP = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from simulated_cuda import SimulatedCuda
_attnlib_simulated_cuda = SimulatedCuda().__enter__()
"""


def execute(path, timeout: int = 600):
    """Run the notebook at ``path`` under simulated CUDA; return the executed notebook.

    Raises ``nbclient.exceptions.CellExecutionError`` naming the failing cell.
    """
    path = pathlib.Path(path)
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as ipython_dir:
        startup = pathlib.Path(ipython_dir, "profile_default", "startup")
        startup.mkdir(parents=True)
        (startup / "00-simulated-cuda.py").write_text(STARTUP)
        saved = os.environ.get("IPYTHONDIR")
        os.environ["IPYTHONDIR"] = ipython_dir
        try:
            NotebookClient(
                nb,
                timeout=timeout,
                kernel_name="python3",
                resources={"metadata": {"path": str(path.parent)}},
            ).execute()
        finally:
            if saved is None:
                os.environ.pop("IPYTHONDIR", None)
            else:
                os.environ["IPYTHONDIR"] = saved
    return nb


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--timeout", type=int, default=600)
    status = 0
    for name in parser.parse_args().notebooks:
        try:
            nb = execute(name, parser.parse_args().timeout)
            print(f"PASS {name}")
        except Exception as err:  # report every chapter, then fail
            status = 1
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # no terminal colours
            print(
                f"FAIL {name}: {type(err).__name__}\n{text[:700]}\n...\n{text[-400:]}"
            )
    sys.exit(status)
