"""Every combination of ``attention()``'s mask arguments, on the path that forms the
weights and on the path that does not, against a NumPy restatement (issue 52, item 4).

SDPA refuses ``is_causal`` together with ``attn_mask``, so the paths that combine them
were never compared with a peer; here the reference is written out in NumPy: scores,
``-inf`` where a key is masked (bool mask False, causal above the diagonal, a float
mask's ``-inf``), the float mask's finite part added, the normaliser per row over the
keys left (softmax; sparsemax by sorting; 1.5-entmax by the ``entmax`` package), and
zero weights on a row with no key left.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from entmax import entmax15

from attnlib import attention

N_Q, N_K, D = 5, 6, 4


def _sparsemax_np(z):
    out = np.zeros_like(z)
    for i, row in enumerate(z):
        finite = np.isfinite(row)
        s = np.sort(row[finite])[::-1]
        cums = np.cumsum(s)
        k = np.arange(1, len(s) + 1)
        support = 1 + k * s > cums
        kk = k[support][-1]
        tau = (cums[kk - 1] - 1) / kk
        out[i, finite] = np.maximum(row[finite] - tau, 0)
    return out


def _entmax_peer(z):
    """1.5-entmax of each row's unmasked scores by the ``entmax`` package."""
    out = np.zeros_like(z)
    for i, row in enumerate(z):
        finite = np.isfinite(row)
        out[i, finite] = entmax15(torch.tensor(row[finite]), dim=-1).numpy()
    return out


def _reference(q, k, v, bool_mask, float_mask, causal, scale, normalizer, softmax):
    s = q @ k.T * scale
    keep = np.ones_like(s, dtype=bool)
    if bool_mask is not None:
        keep &= bool_mask
    if causal:
        keep &= np.tril(np.ones_like(keep))
    if float_mask is not None:
        keep &= ~np.isneginf(float_mask)
        s = s + np.where(np.isneginf(float_mask), 0, float_mask)
    s = np.where(keep, s, -np.inf)
    w = np.zeros_like(s)
    rows = keep.any(1)
    norm = {"softmax": softmax, "sparsemax": _sparsemax_np, "entmax": _entmax_peer}
    w[rows] = norm[normalizer](s[rows])
    return w @ v, w


def _masks(seed):
    rng = np.random.default_rng(seed)
    bool_mask = rng.random((N_Q, N_K)) > 0.4
    bool_mask[1] = False  # a row with no key
    float_mask = rng.normal(size=(N_Q, N_K))
    float_mask[:, 2] = -np.inf
    float_mask[3] = -np.inf  # another row with no key
    return bool_mask, float_mask


COMBOS = [
    (kind, causal, need_weights, normalizer, name)
    for kind, causal, need_weights, normalizer, name in itertools.product(
        [None, "bool", "float"],  # mask kind
        [False, True],  # is_causal
        [False, True],  # need_weights
        ["softmax", "sparsemax", "entmax"],
        ["mask", "attn_mask"],  # which of the two names carries it
    )
    if kind is not None or name == "mask"  # without a mask, one name suffices
]


@pytest.mark.parametrize("kind, causal, need_weights, normalizer, name", COMBOS)
def test_every_mask_combination_on_both_paths(
    kind, causal, need_weights, normalizer, name, np_softmax
):
    g = np.random.default_rng(7)
    q, k, v = (g.normal(size=(n, D)) for n in (N_Q, N_K, N_K))
    bool_mask, float_mask = _masks(3)
    mask = {None: None, "bool": bool_mask, "float": float_mask}[kind]
    kw = {} if mask is None else {name: torch.tensor(mask)}
    got = attention(
        *map(torch.tensor, (q, k, v)), normalizer=normalizer, is_causal=causal,
        need_weights=need_weights, **kw,
    )  # fmt: skip
    ref, ref_w = _reference(
        q, k, v, bool_mask if kind == "bool" else None,
        float_mask if kind == "float" else None, causal, D**-0.5, normalizer,
        np_softmax,
    )  # fmt: skip
    if need_weights:
        np.testing.assert_allclose(got.weights.numpy(), ref_w, atol=1e-12)
    assert (got.weights is None) != need_weights
    np.testing.assert_allclose(got.output.numpy(), ref, atol=1e-12)
