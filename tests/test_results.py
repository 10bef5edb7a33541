"""Committed sweeps are falsifiable: each test recomputes one slice from today's code.

A slice is one seed at the smallest size; it must match the committed numbers within the
tolerance the chapter relies on, so a change that alters a committed result fails here.
"""

import numpy as np
import pytest

from attnlib import results
from attnlib.data import union_of_subspaces
from attnlib.experiments import routing_runs, self_expression_runs
from attnlib.subspace import SubspaceClustering, clustering_accuracy

pytestmark = pytest.mark.usefixtures("one_thread")  # the sweeps ran with one thread


def _close(fresh: dict, committed: dict, atol: float):
    for key, value in fresh.items():
        assert np.isclose(value, committed[key], atol=atol, equal_nan=True), key


def test_subspace_fresh_seed_400_at_n_1000():
    fresh = results.load("subspace")["defaults_fresh"]
    data = union_of_subspaces(5, 6, 9, 200, seed=fresh["seeds"][0])
    model = SubspaceClustering(5).fit(data.X)
    assert clustering_accuracy(data.labels, model.labels_) == fresh["accuracies"][0]
    ssc = clustering_accuracy(data.labels, model.spectral_labels_)
    assert ssc == pytest.approx(fresh["accuracies_ssc"][0], abs=1e-9)


def test_self_expression_normalized_seed_0():
    committed = results.load("self_expression")["normalized"][0]
    assert committed["seed"] == 0
    _close(self_expression_runs.normalized_run(0), committed, atol=0.01)


def test_mux_weekday_seed_0():
    committed = results.load("mux")["weekday"][0]
    assert committed["seed"] == 0
    _close(routing_runs.weekday_run(0), committed, atol=0.01)


def test_mux_wide_stack_seed_0_two_layers():
    committed = results.load("mux")["wide_stacks"][0]
    assert committed["seed"] == 0
    assert routing_runs.wide_stack_run(0, 2) == pytest.approx(committed["2"], abs=0.01)
