"""Tests of attnlib.denoise.experiments.tables against loops over the raw rows."""

import numpy as np
import pytest

from attnlib import results
from attnlib.denoise.experiments.tables import psnr_table, quality_table, speed_table


def test_quality_table_is_every_row_in_place():
    """Each cell is the median (or min, max) over seeds of the committed rows of that
    method and noise, restated here with NumPy; no (method, noise) pair is lost."""
    result = results.load("denoise")
    rows = result["quality_rows"]
    methods = list(dict.fromkeys(r["method"] for r in rows))  # first-seen order
    noises = sorted({r["noise"] for r in rows})
    assert len({r.get("seed", 0) for r in rows}) >= 5  # the sweep runs over seeds
    for stat, reduce in (("median", np.median), ("min", np.min), ("max", np.max)):
        psnr, settings = quality_table(result, stat=stat)
        assert list(psnr.index) == methods == list(settings.index)
        assert list(psnr.columns) == noises
        for m in methods:
            for noise in noises:
                own = [
                    r["psnr_db"]
                    for r in rows
                    if (r["method"], r["noise"]) == (m, noise)
                ]
                assert own, (m, noise)
                assert psnr.loc[m, noise] == pytest.approx(reduce(own), abs=1e-12)


def test_speed_table_reads_attnlib_rows_of_one_thread_count():
    result = results.load("denoise")
    for threads in (1, 2):
        table = speed_table(result, threads)
        ours = [
            r
            for r in result["rows"]
            if r["method"].startswith("attnlib") and r["threads"] == threads
        ]
        assert table.notna().sum().sum() == len(ours) > 0
        for r in ours:
            ratio = table.loc[(r["image"], r["sigma"]), r["dtype"]]
            assert ratio == r["time / skimage fast"]


def test_a_small_handmade_result():
    result = {
        "quality_rows": [
            {"method": "b", "noise": 0.1, "psnr_db": 20.0, "setting": "x"},
            {"method": "a", "noise": 0.1, "psnr_db": 21.0, "setting": "y"},
            {"method": "b", "noise": 0.2, "psnr_db": 18.0, "setting": "z"},
            {"method": "a", "noise": 0.2, "psnr_db": 19.5, "setting": "y"},
        ]
    }
    psnr, settings = quality_table(result)
    assert list(psnr.index) == ["b", "a"]  # the benchmark's order, not sorted
    assert psnr.loc["a"].tolist() == [21.0, 19.5]
    assert settings.tolist() == ["x / z", "y / y"]


def test_bad_inputs():
    with pytest.raises(ValueError, match="result"):
        quality_table({"rows": []})
    with pytest.raises(ValueError, match="result"):
        quality_table([1, 2])
    with pytest.raises(ValueError, match="missing"):
        quality_table({"quality_rows": [{"method": "a", "noise": 0.1}]})
    with pytest.raises(ValueError, match="threads"):
        speed_table(results.load("denoise"), threads=7)


def test_psnr_table_puts_each_one_thread_row_in_its_column():
    result = results.load("denoise")
    table = psnr_table(result)
    assert list(table.columns) == [
        "attnlib float32",
        "attnlib float64",
        "skimage fast",
        "skimage slow",
    ]
    n = 0
    for r in result["rows"]:
        if r["method"].startswith("attnlib") and r["threads"] != 1:
            continue
        column = (
            f"attnlib {r['dtype']}"
            if r["method"].startswith("attnlib")
            else ("skimage fast" if "fast_mode=True" in r["method"] else "skimage slow")
        )
        assert table.loc[(r["image"], r["sigma"]), column] == r["psnr_db"]
        n += 1
    assert table.size == n
    with pytest.raises(ValueError, match="threads"):
        psnr_table(result, threads=3)


def test_baseline_table_splits_sweep_and_longer_run():
    from attnlib.denoise.experiments.tables import baseline_table

    rows = [
        {"run": r, "seed": s, "method": m, "parameters": p, "psnr_db": v}
        for r, s, off in [("sweep", 0, 0.0), ("sweep", 1, 1.0), ("long", 0, 0.5)]
        for m, p, v in [("NLM", 0, 20.0), ("CNN", 9, 21.0), ("x", 1, 3.0)]
        for v in [v + off]
        if not (r == "long" and m == "x")
    ]
    per_seed, params, conv = baseline_table({"baseline_rows": rows})
    assert list(per_seed.columns) == ["NLM", "CNN", "x"]
    assert list(per_seed.index) == [0, 1]
    assert per_seed.loc[1, "CNN"] == 22.0 and params["CNN"] == 9
    assert conv[["NLM", "CNN"]].to_dict() == {"NLM": 0.5, "CNN": 0.5}
    assert conv.isna()["x"]
    with pytest.raises(ValueError, match="baseline_rows"):
        baseline_table({"quality_rows": rows})
