"""Checks that need a real CUDA device; `make test-gpu` runs them on a GPU machine.

Skipped, and reported as skipped (not passed), where CUDA is absent: CPU-only CI covers
device mixing with the simulated device of tests/test_devices.py instead.
"""

import pytest
import torch
from torch import nn

from attnlib import attention
from attnlib.normalizers import entmax, sparsemax
from attnlib.training import train

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA device: these run in `make test-gpu` on a GPU machine",
)
CUDA = torch.device("cuda")


def test_cuda_agrees_with_the_cpu_in_float64():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 7, 5, dtype=torch.float64, generator=g) for _ in "qkv")
    mask = torch.rand(2, 7, 7, generator=g) > 0.3
    mask[..., 0] = True
    for normalizer in ("softmax", "sparsemax", "entmax"):
        here = attention(q, k, v, mask=mask, normalizer=normalizer)
        there = attention(
            q.to(CUDA),
            k.to(CUDA),
            v.to(CUDA),
            mask=mask.to(CUDA),
            normalizer=normalizer,
        )
        torch.testing.assert_close(there.output.cpu(), here.output, atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scale", [1, 10])
@pytest.mark.parametrize("shape", [(4096, 1024), (65536, 64), (131072, 512)])
def test_engine_exact_to_the_entmax_package_on_cuda(dtype, scale, shape):
    entmax_pkg = pytest.importorskip("entmax")
    x = (scale * torch.randn(shape, device=CUDA)).to(dtype)
    atol = 1e-6 if dtype == torch.float32 else 8e-3
    ref_x = x.float()
    torch.testing.assert_close(
        sparsemax(x).float(), entmax_pkg.sparsemax(ref_x, -1), atol=atol, rtol=0
    )
    torch.testing.assert_close(
        entmax(x, 1.5).float(), entmax_pkg.entmax15(ref_x, -1), atol=atol, rtol=0
    )


def test_no_host_device_synchronisation_on_valid_input():
    q, k, v = (torch.randn(4, 64, 32, device=CUDA, requires_grad=True) for _ in "qkv")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any synchronising call raises
    try:
        for normalizer in ("softmax", "sparsemax", "entmax"):
            attention(q, k, v, normalizer=normalizer).output.sum().backward()
        entmax(q, 1.3).sum().backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_train_on_cuda_keeps_the_model_there():
    model = nn.Linear(3, 1).to(CUDA)
    x = torch.randn(32, 3)
    y = x.sum(-1, keepdim=True)
    history = train(
        model,
        lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
        [(x, y)],
        n_steps=30,
        lr=0.1,
        progress=False,
    )
    assert next(model.parameters()).is_cuda and history[-1] < history[0]
