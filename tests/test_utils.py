import random

import numpy as np
import pytest
import torch

from attnlib.utils import (
    as_float_array,
    as_tensor,
    check_in_range,
    check_int,
    check_positive,
    get_device,
    set_seed,
)


def _draws():
    # the global generators that set_seed seeds (hence the legacy NumPy call)
    return random.random(), np.random.rand(), torch.rand(1).item()  # noqa: NPY002


def test_set_seed_makes_every_generator_repeat():
    # The global generators are the ones set_seed seeds (NPY002 does not apply).
    set_seed(3)
    a = _draws()
    set_seed(3)
    assert _draws() == a
    # each of the three generators, seeded with the seed given (a no-op or a fixed seed
    # fails here): the first draws of fresh generators seeded with 3, and not with 4
    expected = (
        random.Random(3).random(),
        np.random.RandomState(3).random_sample(),
        torch.rand(1, generator=torch.Generator().manual_seed(3)).item(),
    )
    assert a == expected
    set_seed(4)
    assert all(x != y for x, y in zip(_draws(), expected))


def test_get_device():
    assert get_device("cpu") == torch.device("cpu")
    assert get_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_as_tensor_dtypes_and_devices():
    assert as_tensor([1, 2], "x").dtype == torch.get_default_dtype()
    assert as_tensor(np.zeros(2, np.float64), "x").dtype == torch.float64
    assert as_tensor(torch.zeros(2, dtype=torch.float16), "x").dtype == torch.float16
    assert (
        as_tensor(torch.zeros(2, dtype=torch.int64), "x").dtype
        == torch.get_default_dtype()
    )
    assert as_tensor([1.0], "x", dtype=torch.float64).dtype == torch.float64
    # no float32 detour
    assert as_tensor(0.3, "x", min_ndim=0, dtype=torch.float64).item() == 0.3
    assert torch.isinf(as_tensor([1.0, -np.inf], "x", allow_inf=True)).any()


@pytest.mark.parametrize(
    "x, kwargs, message",
    [
        ([], {}, "keys must not be empty"),
        ([1.0, np.nan], {}, "keys contains NaN"),
        ([1.0, np.inf], {}, "keys contains NaN or infinite"),
        ([1.0, np.nan], {"allow_inf": True}, "keys contains NaN"),
        ([1.0], {"ndim": 2}, "keys must have 2 dimensions"),
        ([1.0], {"min_ndim": 2}, "keys must have at least 2 dimensions"),
        (["a"], {}, "keys must hold numbers, got strings"),
        ([["0.5", "1"]], {}, "keys must hold numbers, got strings"),
        ([object()], {}, "keys must be array-like of numbers"),
    ],
)
def test_as_tensor_rejects_bad_input(x, kwargs, message):
    # a name other than the usual "x", so that a message naming a fixed word fails
    with pytest.raises(ValueError, match=message):
        as_tensor(x, "keys", **kwargs)


def test_as_float_array():
    A = as_float_array([[1, 2], [3, 4]])
    assert A.dtype == np.float64 and A.shape == (2, 2)
    for bad, message in [
        ([1, 2], "X must have 2 dimensions"),
        (np.zeros((0, 3)), "X must have at least 1 samples"),
        ([[np.nan]], "X contains NaN"),
    ]:
        with pytest.raises(ValueError, match=message):
            as_float_array(bad)
    with pytest.raises(ValueError, match="Y must have at least 3 samples"):
        as_float_array(np.zeros((2, 2)), "Y", min_samples=3)


def test_scalar_checks():
    assert (
        check_positive(2, "h") == 2.0 and check_positive(0, "h", allow_zero=True) == 0.0
    )
    assert (
        check_in_range(0.5, "p", 0, 1) == 0.5
        and check_int(3, "k", minimum=1, maximum=3) == 3
    )
    for call, match in (
        (lambda: check_positive(0, "width"), "width must be a finite positive"),
        (
            lambda: check_positive(-1, "width", allow_zero=True),
            "width must be a finite non-negative",
        ),
        (lambda: check_positive(float("nan"), "h0"), "h0 must be a finite positive"),
        (lambda: check_positive("1", "h1"), "h1 must be a finite positive"),
        (lambda: check_in_range(2, "prob", 0, 1), r"prob must be a number in \[0, 1\]"),
        (lambda: check_int(2.5, "k0"), "k0 must be an integer"),
        (lambda: check_int(True, "k1"), "k1 must be an integer"),
        (lambda: check_int(0, "k2"), "k2 must be an integer at least 1"),
        (lambda: check_int(5, "k3", maximum=4), "k3 must be an integer .* at most 4"),
    ):
        with pytest.raises(ValueError, match=match):
            call()


def test_set_seed_seeds_each_generator_with_the_seed_given():
    """set_seed(s) draws what seeding random, NumPy and torch with s by hand draws."""
    import random

    set_seed(7)
    # The legacy global generators are what set_seed seeds.
    ours = (random.random(), np.random.rand(), torch.rand(1).item())  # noqa: NPY002
    random.seed(7)
    np.random.seed(7)  # noqa: NPY002
    torch.manual_seed(7)
    assert ours == (random.random(), np.random.rand(), torch.rand(1).item())  # noqa: NPY002
    set_seed(8)
    assert torch.rand(1).item() != ours[2]


# ----------------------------------------------------------------- seeds a reader moves
def test_seeds_are_the_base_seeds_without_an_offset(monkeypatch):
    from attnlib.utils import seed_offset, seeds

    monkeypatch.delenv("ATTNLIB_SEED_OFFSET", raising=False)
    assert seed_offset() == 0
    assert seeds(5) == [0, 1, 2, 3, 4]
    assert seeds([3, 0, 7]) == [3, 0, 7]


def test_the_offset_shifts_every_seed(monkeypatch):
    from attnlib.utils import seed_offset, seeds

    monkeypatch.setenv("ATTNLIB_SEED_OFFSET", " 1234 ")
    assert seed_offset() == 1234
    assert seeds(3) == [1234, 1235, 1236]
    assert seeds(range(2, 4)) == [1236, 1237]
    monkeypatch.setenv("ATTNLIB_SEED_OFFSET", "")
    assert seeds(2) == [0, 1]


@pytest.mark.parametrize("raw", ["-1", "1.5", "abc", "1000001", "True"])
def test_a_bad_offset_is_refused_naming_the_variable(monkeypatch, raw):
    from attnlib.utils import seeds

    monkeypatch.setenv("ATTNLIB_SEED_OFFSET", raw)
    with pytest.raises(ValueError, match="ATTNLIB_SEED_OFFSET"):
        seeds(5)


@pytest.mark.parametrize("base", [0, -2, 2.0, True, "5", None, [0, 0], [], [1, -1]])
def test_bad_base_seeds_are_refused(base):
    from attnlib.utils import seeds

    with pytest.raises(ValueError, match="base"):
        seeds(base)


def test_a_public_call_checks_once_and_its_nested_public_calls_trust():
    import threading

    from attnlib.utils.boundary import checking, public

    seen = []

    @public
    def inner(x):
        if checking():
            seen.append("inner")
            if x < 0:
                raise ValueError("x must be non-negative")
        return x

    @public
    def outer(x):
        if checking():
            seen.append("outer")
        return inner(x)

    assert outer(-1) == -1 and seen == ["outer"]  # the nested call trusts its caller
    with pytest.raises(ValueError, match="x must"):
        inner(-1)  # called from outside: checked
    seen.clear()
    with pytest.raises(ValueError, match="x must"):
        inner(-2)  # an error leaves the depth as it was ...
    assert inner(3) == 3 and seen == ["inner", "inner"]  # ... so the next call checks
    # Another thread is outside the boundary even while this one is inside it.
    other = []

    @public
    def waits(x):
        thread = threading.Thread(target=lambda: other.append(inner(x)))
        thread.start()
        thread.join()
        return x

    seen.clear()
    waits(5)
    assert other == [5] and seen == ["inner"]
