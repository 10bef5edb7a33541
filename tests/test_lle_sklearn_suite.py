"""scikit-learn's own tests of ``LocallyLinearEmbedding``, pointed at attnlib's.

The test file is read from the installed scikit-learn at test time; a conftest written
beside it replaces ``sklearn.manifold.LocallyLinearEmbedding`` by attnlib's estimator
(which implements ``method="standard"`` only: the other methods' cases are skipped) and
runs every dtype case in float64 and float32.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sklearn.manifold.tests

CONFTEST = """
import numpy as np
import pytest
import sklearn.manifold as manifold

from attnlib.lle import LocallyLinearEmbedding as Ours


class LocallyLinearEmbedding(Ours):
    def __init__(self, n_neighbors=5, n_components=2, *, reg=1e-3, eigen_solver="auto",
                 tol=1e-6, max_iter=None, method="standard", random_state=None):
        if method != "standard":
            pytest.skip(f"attnlib implements method='standard' only, not {method!r}")
        super().__init__(n_neighbors, n_components, reg=reg, eigen_solver=eigen_solver,
                         tol=tol, max_iter=max_iter, method=method,
                         random_state=random_state)


manifold.LocallyLinearEmbedding = LocallyLinearEmbedding


@pytest.fixture(params=["float64", "float32"])
def global_dtype(request):
    return np.dtype(request.param).type
"""


def test_scikit_learns_lle_tests_pass_on_attnlibs_estimator(tmp_path):
    source = Path(sklearn.manifold.tests.__file__).parent / "test_locally_linear.py"
    (tmp_path / "test_locally_linear.py").write_text(source.read_text())
    (tmp_path / "conftest.py").write_text(CONFTEST)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         f"--basetemp={tmp_path / 'inner'}", "test_locally_linear.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    # 24 cases: the standard method's 11 pass (both dtypes, both eigensolvers, the
    # pipeline, integer input, feature names); the 13 of hessian, modified and ltsa
    # are skipped, as attnlib does not implement them
    assert "11 passed, 13 skipped" in run.stdout, run.stdout[-800:]
    assert run.stdout.count("implements method='standard' only") == 3  # the reasons
