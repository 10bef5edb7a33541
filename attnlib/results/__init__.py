"""The committed results of the benchmark sweeps, shipped inside the package.

A chapter shows numbers that take longer to compute than a page may take to execute (the
full sweeps of ``benchmarks/``). Those results are package data, so that a chapter
opened alone (in Colab, with attnlib installed from the repository and no checkout
beside it) reads them exactly as the built website does. ``benchmarks/<name>.py`` writes
them here. The chapters state a sweep's result as its median and range over seeds
(``seeds``: :func:`seed_summary`, :func:`seed_table`).
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

from .seeds import seed_summary, seed_table

__all__ = ["RERUN_VARIABLE", "load", "names", "seed_summary", "seed_table"]

#: A folder of sweeps re-run at a reader's offset (``tools/unseen.py --sweeps``): where
#: it holds ``<name>.json``, :func:`load` reads that instead of the committed result.
RERUN_VARIABLE = "ATTNLIB_RESULTS_DIR"


def names() -> list[str]:
    """The names of every committed result.

    Returns
    -------
    list of str
        Sorted names, each one a valid argument of :func:`load`.
    """
    files = resources.files(__name__).iterdir()
    return sorted(f.name[: -len(".json")] for f in files if f.name.endswith(".json"))


def load(name: str) -> dict:
    """A committed benchmark result, as the dictionary its benchmark script wrote.

    Parameters
    ----------
    name : str
        The benchmark's name, e.g. ``"continuous"`` for ``benchmarks/continuous.py``.

    Returns
    -------
    dict
        The result: its ``date``, ``machine``, ``targets``, ``rows`` and whatever else
        the script recorded.

    Raises
    ------
    ValueError
        If ``name`` is not the name of a committed result.
    """
    available = names()
    if name not in available:
        raise ValueError(f"name must be one of {available}, got {name!r}")
    rerun = os.environ.get(RERUN_VARIABLE, "").strip()
    if rerun and (Path(rerun) / f"{name}.json").is_file():
        return json.loads((Path(rerun) / f"{name}.json").read_text())
    return json.loads(resources.files(__name__).joinpath(f"{name}.json").read_text())
