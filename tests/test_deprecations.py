"""Deprecated parameters, the scikit-learn way: a FutureWarning when set, else none.

Each deprecated parameter keeps working until its removal version (named in the warning
and in the docstring's ``.. deprecated::`` note); its default never warns.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from attnlib.kernel_regression import MetricNadarayaWatson, NadarayaWatson


def _data(n=30, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)


def _no_future_warning(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        return fit()


def test_nadaraya_watson_chunk_size_warns_and_changes_nothing():
    X, y = _data()
    quiet = _no_future_warning(lambda: NadarayaWatson(bandwidth=0.5).fit(X, y))
    with pytest.warns(FutureWarning, match=r"chunk_size.*removed in 0\.3\.0"):
        old = NadarayaWatson(bandwidth=0.5, chunk_size=7).fit(X, y)
    np.testing.assert_array_equal(old.predict(X), quiet.predict(X))
    # Still checked while it lives: a bad value is an error naming it.
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="chunk_size"):
        NadarayaWatson(bandwidth=0.5, chunk_size=0).fit(X, y)
    # clone keeps the sentinel, so a cloned default estimator stays quiet.
    _no_future_warning(lambda: clone(NadarayaWatson(bandwidth=0.5)).fit(X, y))


def test_metric_nadaraya_watson_progress_warns_and_still_works(capsys):
    X, y = _data()
    short = dict(n_steps=3, lr=0.02)
    quiet = _no_future_warning(lambda: MetricNadarayaWatson(**short).fit(X, y))
    with pytest.warns(FutureWarning, match=r"progress.*removed in 0\.3\.0.*verbose"):
        old = MetricNadarayaWatson(**short, progress=False).fit(X, y)
    np.testing.assert_allclose(old.predict(X), quiet.predict(X), rtol=1e-12)
    assert capsys.readouterr().err == ""
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="progress"):
        MetricNadarayaWatson(**short, progress="yes").fit(X, y)


@pytest.mark.parametrize(
    "estimator, param",
    [(NadarayaWatson, "chunk_size"), (MetricNadarayaWatson, "progress")],
)
def test_deprecation_is_documented(estimator, param):
    doc = inspect.getdoc(estimator)
    entry = []
    for line in doc.split(f"\n{param} :", 1)[1].splitlines()[1:]:
        if line and not line.startswith(" "):  # the next parameter
            break
        entry.append(line)
    entry = "\n".join(entry)
    assert ".. deprecated:: 0.1.0" in entry and "removed in 0.3.0" in entry, entry
