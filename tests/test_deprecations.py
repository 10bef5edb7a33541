"""No deprecation shims in a 0.1.0 library: the old spellings are gone, not kept.

The parameters and aliases deprecated before the first release were removed (issue 28);
these tests keep them from coming back unnoticed.
"""

import inspect

import pytest

from attnlib import kernel_regression
from attnlib.kernel_regression import MetricNadarayaWatson, NadarayaWatson


@pytest.mark.parametrize(
    "estimator, param",
    [(NadarayaWatson, "chunk_size"), (MetricNadarayaWatson, "progress")],
)
def test_removed_parameters_are_refused(estimator, param):
    assert param not in inspect.signature(estimator).parameters
    with pytest.raises(TypeError, match=param):
        estimator(**{param: 1})


def test_the_streaming_alias_is_gone():
    assert not hasattr(kernel_regression, "nadaraya_watson_streaming")


def test_no_library_code_warns_of_a_deprecation():
    from pathlib import Path

    root = Path(kernel_regression.__file__).resolve().parents[1]
    hits = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "DeprecationWarning" in p.read_text() or ".. deprecated::" in p.read_text()
    ]
    assert not hits, hits
