import pytest
import torch


@pytest.fixture
def float64():
    """Run a test with float64 as PyTorch's default dtype, restoring float32 afterwards."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)
