"""Chapter 03's committed denoising results as tables: PSNR per noise, time per image.

``benchmarks/denoise.py`` writes one flat row per measurement into
``attnlib/results/denoise.json``; the chapter reads two tables from them. Building the
tables here keeps the notebook to one call each and lets the tables be tested.
"""

from __future__ import annotations

__all__ = ["baseline_table", "quality_table", "speed_table", "psnr_table"]


def _rows(result, key, columns):
    if not isinstance(result, dict) or not isinstance(result.get(key), list):
        raise ValueError(
            f"result must be the dictionary of results.load('denoise') with a list "
            f"{key!r}, got {type(result).__name__}"
        )
    import pandas as pd

    rows = pd.DataFrame(result[key])
    missing = set(columns) - set(rows.columns)
    if rows.empty or missing:
        raise ValueError(
            f"result[{key!r}] must be non-empty rows with {sorted(columns)}, "
            f"missing {sorted(missing)}"
        )
    return rows


def quality_table(result, stat: str = "median"):
    """PSNR of every method at every noise level of the validated sweep.

    Parameters
    ----------
    result : dict
        ``results.load("denoise")``; its ``"quality_rows"`` hold ``method``, ``noise``,
        ``psnr_db`` and ``setting`` (the setting validation chose at that noise), and
        ``seed`` when the sweep ran over several seeds.
    stat : {"median", "min", "max"}
        How the seeds are summarised.

    Returns
    -------
    psnr : pandas.DataFrame
        PSNR in dB (``stat`` over the seeds), one row per method (in the benchmark's
        order), one column per noise.
    settings : pandas.Series
        Each method's chosen settings, joined over the noise levels with ``" / "``
        (where the seeds chose differently, the settings of every seed, joined with
        ``","``).
    """
    if stat not in ("median", "min", "max"):
        raise ValueError(f"stat must be 'median', 'min' or 'max', got {stat!r}")
    rows = _rows(result, "quality_rows", ("method", "noise", "psnr_db", "setting"))
    order = rows["method"].unique()
    psnr = rows.pivot_table(
        index="method", columns="noise", values="psnr_db", aggfunc=stat
    ).reindex(order)
    per_noise = rows.groupby(["method", "noise"], sort=False)["setting"].agg(
        lambda s: ",".join(dict.fromkeys(s))
    )
    settings = per_noise.groupby(level="method", sort=False).agg(" / ".join)
    return psnr, settings.reindex(order)


def speed_table(result, threads: int = 1):
    """attnlib's NLM time over scikit-image's fast mode, per image and noise, per dtype.

    Parameters
    ----------
    result : dict
        ``results.load("denoise")``; its ``"rows"`` hold ``method``, ``image``,
        ``sigma``, ``dtype``, ``threads`` and ``"time / skimage fast"``.
    threads : int
        The thread count whose rows are read.

    Returns
    -------
    pandas.DataFrame
        Index ``(image, sigma)``, one column per dtype: attnlib's time ratio.
    """
    columns = ("method", "image", "sigma", "dtype", "threads", "time / skimage fast")
    rows = _rows(result, "rows", columns)
    ours = rows[rows["method"].str.startswith("attnlib") & (rows["threads"] == threads)]
    if ours.empty:
        raise ValueError(
            f"threads must be a thread count of the result's rows "
            f"{sorted(set(rows['threads']))}, got {threads!r}"
        )
    return ours.pivot(
        index=["image", "sigma"], columns="dtype", values="time / skimage fast"
    )


def psnr_table(result, threads: int = 1):
    """PSNR of scikit-image's two modes and of attnlib per dtype, per image and noise.

    Parameters
    ----------
    result : dict
        ``results.load("denoise")``; its ``"rows"`` hold ``method``, ``image``,
        ``sigma``, ``dtype``, ``threads`` and ``psnr_db``.
    threads : int
        The thread count of the attnlib rows read (their PSNR does not depend on it).

    Returns
    -------
    pandas.DataFrame
        Index ``(image, sigma)``; columns ``"skimage slow"``, ``"skimage fast"`` and
        ``"attnlib <dtype>"`` for each dtype, in dB.
    """
    columns = ("method", "image", "sigma", "dtype", "threads", "psnr_db")
    rows = _rows(result, "rows", columns)
    ours = rows["method"].str.startswith("attnlib")
    if not (ours & (rows["threads"] == threads)).any():
        raise ValueError(
            f"threads must be a thread count of the result's rows "
            f"{sorted(set(rows['threads']))}, got {threads!r}"
        )
    rows = rows[~ours | (rows["threads"] == threads)]
    ours = rows["method"].str.startswith("attnlib")
    # "skimage slow (fast_mode=False)" -> "skimage slow"; attnlib's rows by their dtype
    column = rows["method"].str.split(" ").str[:2].str.join(" ")
    rows = rows.assign(column=column.where(~ours, "attnlib " + rows["dtype"]))
    table = rows.pivot(index=["image", "sigma"], columns="column", values="psnr_db")
    return table.rename_axis(columns=None)


def baseline_table(result):
    """Chapter 03's CNN baseline sweep: PSNR per seed, parameters, convergence.

    Parameters
    ----------
    result : dict
        ``results.load("denoise")``; its ``"baseline_rows"`` hold ``run``, ``seed``,
        ``method``, ``parameters`` and ``psnr_db``; ``run`` is ``"sweep"`` for the
        sweep and anything else for a seed repeated with more steps.

    Returns
    -------
    per_seed : pandas.DataFrame
        PSNR in dB, one row per seed, one column per method (in the sweep's order).
    parameters : pandas.Series
        Trainable parameters of each method (0 for the methods that learn nothing).
    convergence : pandas.Series
        PSNR with more steps minus PSNR at the sweep's steps, per method, on the
        repeated seed (NaN for methods not repeated).
    """
    import pandas as pd

    rows = _rows(
        result, "baseline_rows", ("run", "seed", "method", "parameters", "psnr_db")
    )
    order = rows["method"].unique()
    sweep = rows[rows["run"] == "sweep"]
    per_seed = sweep.pivot(index="seed", columns="method", values="psnr_db")[order]
    parameters = sweep.groupby("method", sort=False)["parameters"].first()
    longer = rows[rows["run"] != "sweep"]
    convergence = pd.Series(dtype=float)
    if len(longer):
        seed = longer["seed"].iloc[0]
        convergence = longer.set_index("method")["psnr_db"] - per_seed.loc[seed]
    return per_seed, parameters.reindex(order), convergence.reindex(order)
