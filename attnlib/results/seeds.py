"""Medians and ranges over seeds: how the chapters state an experiment's result.

A claim about a trained or randomised experiment holds over several seeds (each one
drawing the data and initialising the models); a chapter reports its median and its
range (min-max) and asserts on them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["seed_summary", "seed_table"]


def seed_summary(records, columns=None) -> pd.DataFrame:
    """Median, min and max over seeds of each column of ``records``.

    Parameters
    ----------
    records : list of dict, or DataFrame
        One row per seed; a ``"seed"`` key, if present, is left out.
    columns : sequence of str, optional
        The columns to summarise, in this order (default: every numeric column).

    Returns
    -------
    DataFrame
        Index: the columns; columns ``median``, ``min``, ``max`` and ``seeds`` (how many
        finite values each had).
    """
    frame = pd.DataFrame(records)
    if frame.empty:
        raise ValueError("records must hold at least one seed's row")
    frame = frame.drop(columns=["seed"], errors="ignore")
    if columns is not None:
        missing = [c for c in columns if c not in frame]
        if missing:
            raise ValueError(f"columns {missing} are not in records")
        frame = frame[list(columns)]
    frame = frame.select_dtypes("number")
    return pd.DataFrame(
        {
            "median": frame.median(),
            "min": frame.min(),
            "max": frame.max(),
            "seeds": frame.notna().sum(),
        }
    )


def seed_table(records, columns=None, *, label: str = "", precision: int = 3):
    """The summary as a page-ready table: words for headers, no numeric index.

    Parameters
    ----------
    records, columns
        As in :func:`seed_summary`.
    label : str
        Header of the first column (the names of the quantities).
    precision : int
        Decimals shown.

    Returns
    -------
    pandas Styler
        Columns ``label``, ``median``, ``range (min–max)`` and ``seeds``.
    """
    s = seed_summary(records, columns)
    fmt = f"{{:.{int(precision)}f}}"
    rng = [
        f"{fmt.format(a)}–{fmt.format(b)}" if np.isfinite(a) else "—"
        for a, b in zip(s["min"], s["max"])
    ]
    table = pd.DataFrame(
        {
            label or "quantity": s.index,
            "median": s["median"].to_numpy(),
            "range (min–max)": rng,
            "seeds": s["seeds"].to_numpy(),
        }
    )
    return table.style.hide(axis="index").format(precision=int(precision), na_rep="—")
