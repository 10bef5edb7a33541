"""Tests of attnlib.results.seeds (medians and ranges over seeds)."""

import numpy as np
import pytest

from attnlib.results.seeds import seed_summary, seed_table


def test_seed_summary_matches_numpy():
    rows = [{"seed": s, "a": float(s) ** 2, "b": 1.0 - s} for s in range(5)]
    s = seed_summary(rows)
    a = np.arange(5.0) ** 2
    assert list(s.index) == ["a", "b"]
    assert s.loc["a", "median"] == np.median(a) and s.loc["a", "max"] == a.max()
    assert s.loc["b", "min"] == -3 and s.loc["a", "seeds"] == 5


def test_seed_table_has_words_and_no_index():
    html = seed_table([{"x": 0.1234}, {"x": 0.5}], label="quantity").to_html()
    assert "0.123–0.500" in html and "quantity" in html and "median" in html


@pytest.mark.parametrize(
    "records, columns, match", [([], None, "records"), ([{"a": 1}], ["b"], "columns")]
)
def test_seed_summary_bad_input(records, columns, match):
    with pytest.raises(ValueError, match=match):
        seed_summary(records, columns)
