"""The vectorised exponential (attnlib.utils.fastexp) and the fused kernel sums
(attnlib.kernel_regression._kernelsums)."""

import numpy as np
import pytest

from attnlib.kernel_regression import _kernelsums as ks
from attnlib.utils import fastexp


@pytest.mark.parametrize(
    "dtype, low, rtol", [(np.float32, -87.0, 2.5e-7), (np.float64, -708.0, 4e-16)]
)
def test_exp_matches_numpy_to_a_few_ulps(dtype, low, rtol):
    x = np.concatenate(
        [np.linspace(low, 0, 1_000_003), -np.geomspace(1e-12, 1, 1001), [0.0]]
    ).astype(dtype)
    ours = fastexp.exp_nonpositive(x).astype(np.float64)
    np.testing.assert_allclose(ours, np.exp(x.astype(np.float64)), rtol=rtol, atol=0)
    assert ours[-1] == 1.0


def test_exp_flushes_below_the_normal_range_to_the_smallest_normal():
    out = fastexp.exp_nonpositive(np.array([-200.0, -1e30], dtype=np.float32))
    assert np.all(out > 0) and np.all(out <= 2 * np.finfo(np.float32).tiny)


def test_exp_bad_input():
    with pytest.raises(ValueError, match="x must be"):
        fastexp.exp_nonpositive(np.zeros((2, 2)))


def test_nadaraya_watson_sums_match_numpy_and_reject_mixed_dtypes():
    rng = np.random.default_rng(0)
    xq, xt, y = rng.random((7, 2)), rng.random((2500, 2)), rng.random((2500, 3))
    w = np.exp(-((xq[:, None] - xt[None]) ** 2).sum(-1) / (2 * 0.1**2))
    for threads in (1, 3):
        out = ks.nadaraya_watson_sums(xq, xt, y, 0.1, threads=threads)
        np.testing.assert_allclose(out, w @ y / w.sum(1, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="x_query, x_train and y_train"):
        ks.nadaraya_watson_sums(xq.astype(np.float32), xt, y, 0.1)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_one_feature_path_across_blocks_and_tiles(dtype, rtol, np_softmax):
    # 20 000 sorted keys span several key blocks and 150 queries three query tiles;
    # queries near the last keys meet their nearest key only in the last block, far
    # closer than the first block's keys (the case where a block is summed again with
    # its own minimum).
    rng = np.random.default_rng(1)
    xt = np.sort(rng.random(20_000))[:, None]
    xq = np.concatenate([rng.random(140), 1 - rng.random(10) * 1e-3])[:, None]
    y = np.cos(9 * xt)
    for h in (0.2, 0.003):
        ref = np_softmax(-((xq - xt.T) ** 2) / (2 * h * h), axis=1) @ y
        out = ks.nadaraya_watson_sums(
            xq.astype(dtype), xt.astype(dtype), y.astype(dtype), h
        )
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol)
