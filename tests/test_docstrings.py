"""numpydoc's validation of every public callable's docstring, module by module.

Each entry of :data:`DOCUMENTED` is one module: ``"all"`` checks every public callable
of its ``__all__`` (classes with their public methods), or a tuple names the callables
checked so far. Adding a module is one line. On top of numpydoc's checks: array
parameters give their shape, and whatever implements an equation has an ``Implements``
section.
"""

import importlib
import inspect
import warnings
from pathlib import Path

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")


def _documented() -> dict[str, str]:
    """Every module of attnlib with an ``__all__``, derived from the package tree.

    A package that re-exports its rooms (``denoise``, ``mux``...) is checked through its
    own ``__all__``; a room whose names its package re-exports is not checked twice.
    """
    root = Path(importlib.import_module("attnlib").__file__).parent
    found = {}
    for p in sorted(root.rglob("*.py")):
        parts = p.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or any(part.startswith("_") for part in parts):
            continue
        name = ".".join(parts)
        mod = importlib.import_module(f"attnlib.{name}")
        if getattr(mod, "__all__", None):
            found[name] = set(mod.__all__)
    documented = {}
    for name, public in found.items():
        parent = name.rsplit(".", 1)[0] if "." in name else None
        if parent in found and public <= found[parent]:
            continue  # checked through its package
        documented[name] = "all"
    return documented


DOCUMENTED = _documented()
#: numpydoc's codes that the book enforces: a docstring with a summary, every parameter
#: documented with a description, no unknown parameter, a Returns section.
CHECKS = {"GL08", "SS01", "PR01", "PR02", "PR07", "RT01"}
#: Modules of plumbing, whose callables implement no equation: no Implements section
#: required. Experiment scaffolding (tasks, experiment models, training and scoring
#: helpers) serves a chapter's experiment rather than the idea: an Implements section
#: where one applies, none required. A function of an idea's own modules that implements
#: no equation says so in its Implements section ("No equation: ..."), so that adding
#: one edits no list here.
PLUMBING = {"utils", "training", "plotting", "results", "notebook", "errors"}
PLUMBING |= {m for m in DOCUMENTED if "experiments" in m.split(".")}
METHODS = ("fit", "predict", "transform", "fit_transform", "forward")


def _targets():
    for module, names in DOCUMENTED.items():
        mod = importlib.import_module(f"attnlib.{module}")
        public = (
            [n for n in mod.__all__ if callable(getattr(mod, n))]
            if names == "all"
            else names
        )
        for name in public:
            obj = getattr(mod, name)
            yield module, name, f"attnlib.{module}.{name}"
            if inspect.isclass(obj) and not issubclass(obj, (tuple, BaseException)):
                for method in METHODS:
                    if method in vars(obj):
                        yield (
                            module,
                            f"{name}.{method}",
                            f"attnlib.{module}.{name}.{method}",
                        )


TARGETS = list(_targets())


def _is_namedtuple(path: str) -> bool:
    module, name = path.rsplit(".", 1)
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return inspect.isclass(obj) and issubclass(obj, tuple)


@pytest.mark.parametrize("module, name, path", TARGETS, ids=[t[2] for t in TARGETS])
def test_numpydoc_validation(module, name, path):
    with warnings.catch_warnings():
        # numpydoc warns about the Implements section it does not know
        warnings.simplefilter("ignore")
        result = numpydoc_validate.validate(path)
    # fields are commented, not parameters
    checks = {"GL08", "SS01"} if _is_namedtuple(path) else CHECKS
    # methods: scikit-learn's y=None and PyTorch's forward are documented by their class
    if "." in name:
        checks = (
            checks - {"PR01"} if name.endswith(("fit", "fit_transform")) else checks
        )
    errors = [
        f"{code}: {message}" for code, message in result["errors"] if code in checks
    ]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("module, name, path", TARGETS, ids=[t[2] for t in TARGETS])
def test_shapes_and_implements(module, name, path):
    doc = inspect.getdoc(eval_path(path)) or ""
    if "." not in name and module not in PLUMBING and not _is_namedtuple(path):
        assert "Implements\n----------" in doc, (
            f"{path}: add an Implements section naming its equation, or saying "
            "'No equation: ...' and what it serves"
        )
    for line in _parameter_lines(doc):
        kind = line.split(":", 1)[1].lower()
        if ("tensor" in kind or "array" in kind) and "array-like of" not in kind:
            assert "shape" in kind or "broadcastable to (" in kind, (
                f"{path}: give the shape of '{line}'"
            )


def eval_path(path: str):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def _parameter_lines(doc: str):
    """The ``name : type`` lines of the Parameters section."""
    if "Parameters\n----------" not in doc:
        return
    section = doc.split("Parameters\n----------", 1)[1]
    for line in section.splitlines():
        if line and not line.startswith(" ") and "\n" + line + "\n---" not in doc:
            if line.endswith("-" * 3) or (line.strip() and set(line.strip()) == {"-"}):
                return
            if " : " in line:
                yield line
        if line.strip() in ("Returns", "Raises", "Attributes", "Implements", "Notes"):
            return


def _undocumented(x, y):
    """Do something."""
    return x + y


def test_the_checks_can_fail():
    result = numpydoc_validate.validate(f"{__name__}._undocumented")
    assert {"PR01", "RT01"} <= {code for code, _ in result["errors"]}


def test_every_module_is_documented():
    """A new module cannot escape the docstring checks.

    Every public module and package (no ``_`` in its path: the private engines of an
    idea carry their own docstrings and are not the book's API) has an ``__all__``,
    and every module with one is derived into :data:`DOCUMENTED`.
    """
    root = Path(importlib.import_module("attnlib").__file__).parent
    for p in root.rglob("*.py"):
        parts = p.relative_to(root).parts
        if any(part.startswith("_") and part != "__init__.py" for part in parts):
            continue
        assert "__all__" in p.read_text(), f"{p.relative_to(root)} has no __all__"
    assert {"functional", "utils", "utils.fastexp", "denoise"} <= set(DOCUMENTED)
