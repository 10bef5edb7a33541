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


def test_without_myst_nb_glue_records_nothing_and_shows_only_when_asked(monkeypatch):
    """In Colab (no myst-nb) a chapter's glue must neither fail nor print: the book's
    build, whose kernel has myst-nb, never takes this branch."""
    import sys

    import IPython.display

    from attnlib.notebook import glue

    shown = []
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # import myst_nb raises
    monkeypatch.setattr(IPython.display, "display", shown.append)
    glue("quiet", 1.5)
    glue("shown", 2.5, display=True)
    assert shown == [2.5]
