import pytest
import torch


@pytest.fixture
def float64():
    """Run a test with float64 as PyTorch's default dtype, restoring float32 afterwards."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.fixture(autouse=True)
def _seeded():
    """Seed every generator before each test, so that a test draws the same numbers whatever
    ran before it on its xdist worker, and a failure reproduces when the test is run alone
    (models initialise their weights from torch's global generator)."""
    from attnlib.utils import set_seed

    set_seed(0)
