"""attnlib.notebook.glue: what the chapters hand to myst-nb."""


def test_glue_records_numpy_scalars_as_python_numbers(monkeypatch):
    """myst-nb formats {glue:text}`name:.3f` only for Python numbers: a NumPy float's
    repr, np.float64(...), once broke the book's build."""
    import sys
    import types

    import numpy as np

    from attnlib.notebook import glue

    recorded = {}
    fake = types.ModuleType("myst_nb")
    fake.glue = lambda name, value, display=False: recorded.update({name: value})
    monkeypatch.setitem(sys.modules, "myst_nb", fake)
    glue("x", np.float64(0.25))
    glue("n", np.int64(3))
    glue("s", "text")
    assert recorded == {"x": 0.25, "n": 3, "s": "text"}
    assert type(recorded["x"]) is float and type(recorded["n"]) is int
