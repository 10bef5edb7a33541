"""Comparing what seeded experiments drew: every tensor or array in a nested result.

The seed tests of the experiment modules (issue 38) record what a run handed its
helpers (``record_calls`` in ``conftest.py``) and compare it between runs: the same
seed must give the same draws, bit for bit, and another seed other draws, each one
apart (a run whose inputs changed with the seed but whose targets' rule did not would
pass a test that compared the draws as one).
"""

from __future__ import annotations

import numpy as np
import torch


def arrays(x) -> list[np.ndarray]:
    """Every tensor and array in ``x`` (nested dicts, tuples, named tuples, lists), in
    order, as NumPy arrays."""
    if isinstance(x, torch.Tensor):
        return [x.detach().cpu().numpy()]
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, dict):
        return [a for v in x.values() for a in arrays(v)]
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in arrays(v)]
    return []


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(
        np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    )


def equal(a, b) -> bool:
    """The same arrays, bit for bit (NaN equal to NaN)."""
    xa, xb = arrays(a), arrays(b)
    return bool(xa) and len(xa) == len(xb) and all(_same(x, y) for x, y in zip(xa, xb))


def differ(a, b) -> bool:
    """Every array of ``a`` differs from its counterpart in ``b``."""
    xa, xb = arrays(a), arrays(b)
    return (
        bool(xa) and len(xa) == len(xb) and not any(_same(x, y) for x, y in zip(xa, xb))
    )


def same_numbers(a, b) -> bool:
    """Two results (dicts of floats, arrays...) are equal, NaN equal to NaN."""
    try:
        np.testing.assert_equal(a, b)
    except AssertionError:
        return False
    return True


def inits_differ(a, b) -> bool:
    """Two initialisations (state dicts) differ in every drawn tensor: each one with
    more than one distinct value (a constant, a zero bias or a fixed step size, is the
    same for every seed by design)."""
    pairs = [
        (x, y)
        for x, y in zip(arrays(a), arrays(b), strict=True)
        if np.unique(x).size > 1
    ]
    return bool(pairs) and not any(_same(x, y) for x, y in pairs)
