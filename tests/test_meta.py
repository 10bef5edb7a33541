"""Tests of the tests: rules that keep the suite able to notice a wrong error or a copy.

- A bad-input test names what it expects: every ``pytest.raises(ValueError)`` or
  ``TypeError`` carries a ``match=`` of at least four characters (an argument's name
  with the words around it, e.g. ``"lam must be"``, not ``"x"``, which any message
  contains). ``match`` values taken from ``@pytest.mark.parametrize`` or from a ``for``
  loop over a literal list are checked value by value.
- The shared helpers live once, in ``conftest.py``: no test module sets one thread
  itself or defines its own softmax restatement.
- Randomness comes from seeded generators: conftest's autouse fixture seeds the global
  ones before each test, and no module draws from them while it is collected.

Each rule is shown to fail on a planted snippet.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent
MIN_MATCH = 4
CHECKED = {"ValueError", "TypeError"}


def _raised_names(node) -> set:
    """The exception names in ``pytest.raises``'s first argument (a name or a tuple)."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return {
        item.id if isinstance(item, ast.Name) else getattr(item, "attr", "")
        for item in items
    }


def _literal_pattern(node):
    """The text of a match pattern written as a literal: a string, an f-string's fixed
    parts, ``re.escape("...")``; None where it is not a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value
            for v in node.values
            if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "re.escape":
        return _literal_pattern(node.args[0]) if node.args else None
    return None


def _column(values, index, width):
    """Element ``index`` of each row of a literal parametrize or loop list (rows of
    ``width`` names); None where the list is not a literal."""
    if not isinstance(values, (ast.List, ast.Tuple)):
        return None
    out = []
    for row in values.elts:
        if isinstance(row, ast.Call) and ast.unparse(row.func).endswith("param"):
            row = ast.Tuple(elts=row.args)
        if width == 1 and not isinstance(row, ast.Tuple):
            out.append(row)
        elif isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == width:
            out.append(row.elts[index])
        else:
            return None
    return out


def _candidates(name: str, parents: list):
    """The literal values a name takes, from the parametrize decorators of the enclosing
    test function or from an enclosing ``for`` over a literal list; None if unknown."""
    for node in reversed(parents):
        if isinstance(node, ast.For):
            target = node.target
            names = (
                [t.id for t in target.elts if isinstance(t, ast.Name)]
                if isinstance(target, ast.Tuple)
                else [getattr(target, "id", None)]
            )
            if name in names:
                return _column(node.iter, names.index(name), len(names))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if not (
                    isinstance(deco, ast.Call)
                    and ast.unparse(deco.func).endswith("parametrize")
                    and len(deco.args) >= 2
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    continue
                names = [n.strip() for n in deco.args[0].value.split(",") if n.strip()]
                if name in names:
                    return _column(deco.args[1], names.index(name), len(names))
            return None
    return None


def raises_problems(source: str, filename: str = "<test>") -> list:
    """Every ``pytest.raises(ValueError/TypeError)`` in ``source`` without a ``match=``
    of at least MIN_MATCH characters, as ``file:line: what`` strings."""
    problems = []

    def visit(node, parents):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("pytest.raises", "raises")
            and node.args
            and _raised_names(node.args[0]) & CHECKED
        ):
            where = f"{filename}:{node.lineno}"
            match = next((k.value for k in node.keywords if k.arg == "match"), None)
            if match is None:
                problems.append(f"{where}: pytest.raises without match=")
            else:
                text = _literal_pattern(match)
                if text is not None:
                    values = [match]
                elif isinstance(match, ast.Name):
                    values = _candidates(match.id, parents)
                else:
                    values = None
                if values is None:
                    problems.append(
                        f"{where}: match={ast.unparse(match)} is not a literal, nor "
                        "taken from a literal parametrize or for-loop list"
                    )
                for value in values or []:
                    text = _literal_pattern(value)
                    if text is None or len(text) < MIN_MATCH:
                        problems.append(
                            f"{where}: match={ast.unparse(value)} is shorter than "
                            f"{MIN_MATCH} characters: name the argument and its fault"
                        )
        for child in ast.iter_child_nodes(node):
            visit(child, parents + [node])

    visit(ast.parse(source), [])
    return problems


def helper_copies(source: str, filename: str = "<test>") -> list:
    """Copies of conftest.py's shared helpers: a one-thread setup
    (``torch.set_num_threads(1)``) or a softmax helper defined in a test module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "torch.set_num_threads"
            and node.args
            and ast.unparse(node.args[0]) == "1"
        ):
            found.append(
                f"{filename}:{node.lineno}: one thread set by hand "
                "(use conftest's one_thread fixture)"
            )
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and "softmax" in node.name.lower()
            and not node.name.startswith("test_")
        ):
            found.append(
                f"{filename}:{node.lineno}: {node.name} restates softmax "
                "(use conftest's np_softmax fixture)"
            )
    return found


#: Draws from a global generator (torch's, NumPy's legacy one, Python's).
GLOBAL_DRAWS = (
    "torch.randn",
    "torch.rand",
    "torch.randint",
    "torch.randperm",
    "torch.normal",
    "torch.randn_like",
    "torch.rand_like",
    "torch.randint_like",
    "torch.multinomial",
    "torch.bernoulli",
    "np.random.",
    "numpy.random.",
    "random.",
)
#: Names under those prefixes that do not draw: generators seeded explicitly.
SEEDED = ("np.random.default_rng", "np.random.RandomState", "random.Random")


def collection_time_draws(source: str, filename: str = "<test>") -> list:
    """Draws from a global generator evaluated when the module is imported (module
    level, decorators such as parametrize lists, default arguments). conftest's autouse
    fixture seeds every generator before each test, so draws inside a test repeat
    whatever ran before; a draw at collection depends on which modules were collected
    first, so a test run alone would see other numbers than under xdist."""
    found = []

    def visit(node, runtime):
        if isinstance(node, ast.Call) and not runtime:
            name = ast.unparse(node.func)
            if (
                name.startswith(GLOBAL_DRAWS)
                and not name.startswith(SEEDED)
                and not any(k.arg == "generator" for k in node.keywords)
            ):
                found.append(f"{filename}:{node.lineno}: {name} at collection time")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for child in node.decorator_list + node.args.defaults:
                visit(child, runtime)
            for child in node.body:
                visit(child, True)
            return
        if isinstance(node, ast.Lambda):
            visit(node.body, True)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, runtime)

    visit(ast.parse(source), False)
    return found


def _over_the_tests(rule) -> list:
    """What ``rule(source, filename)`` finds in every test module."""
    return [
        found
        for path in sorted(TESTS.glob("test_*.py"))
        for found in rule(path.read_text(), path.name)
    ]


def test_every_bad_input_test_names_what_it_expects():
    problems = _over_the_tests(raises_problems)
    assert problems == [], "\n".join(problems)


def test_shared_helpers_are_not_copied_into_test_modules():
    copies = _over_the_tests(helper_copies)
    assert copies == [], "\n".join(copies)


def test_no_test_module_draws_random_numbers_at_collection_time():
    draws = _over_the_tests(collection_time_draws)
    assert draws == [], "\n".join(draws)


@pytest.mark.parametrize(
    "source, n",
    [
        ("X = torch.randn(3, 4)\n", 1),
        (
            '@pytest.mark.parametrize("x", [np.random.rand(3)])\ndef test_a(x): pass\n',
            1,
        ),
        ("def helper(x=torch.rand(2)):\n    return x\n", 1),
        ("def test_b():\n    return torch.randn(3)\n", 0),  # seeded by conftest
        (
            '@pytest.mark.parametrize("f", [lambda: torch.randn(2)])\n'
            "def test_c(f): pass\n",
            0,
        ),
        ("X = torch.randn(3, generator=torch.Generator().manual_seed(0))\n", 0),
        ("rng = np.random.default_rng(0)\n", 0),
    ],
)
def test_the_collection_draw_rule_flags_planted_draws(source, n):
    assert len(collection_time_draws(source)) == n


PLANTED_RAISES = {
    "bare": "with pytest.raises(ValueError):\n    f()\n",
    "bare tuple": "with pytest.raises((TypeError, KeyError)):\n    f()\n",
    "one letter": 'with pytest.raises(ValueError, match="x"):\n    f()\n',
    "a word too short": 'with pytest.raises(ValueError, match="lam"):\n    f()\n',
    "parametrized": (
        '@pytest.mark.parametrize("call, match", [(f, "x must be"), (g, "n")])\n'
        "def test_a(call, match):\n"
        "    with pytest.raises(ValueError, match=match):\n"
        "        call()\n"
    ),
    "loop": (
        "def test_b():\n"
        '    for call, match in [(f, "lam must be"), (g, "X")]:\n'
        "        with pytest.raises(ValueError, match=match):\n"
        "            call()\n"
    ),
    "unresolved": (
        "def test_c(match):\n"
        "    with pytest.raises(ValueError, match=match):\n"
        "        f()\n"
    ),
}


@pytest.mark.parametrize("case", PLANTED_RAISES)
def test_the_raises_rule_fails_on_a_planted_vague_test(case):
    assert len(raises_problems(PLANTED_RAISES[case])) == 1


def test_the_raises_rule_passes_what_names_the_argument():
    good = (
        '@pytest.mark.parametrize("call, match", [(f, "x must be"), (g, "n must")])\n'
        "def test_a(call, match):\n"
        "    with pytest.raises(ValueError, match=match):\n"
        "        call()\n"
        # only ValueError and TypeError are checked
        "    with pytest.raises(KeyError):\n"
        "        f()\n"
        '    with pytest.raises(ValueError, match=r"lam \\(0\\) must be"):\n'
        "        f()\n"
    )
    assert raises_problems(good) == []


@pytest.mark.parametrize(
    "source",
    [
        "torch.set_num_threads(1)\n",
        "def _np_softmax(a):\n    return a\n",
        "def softmax_reference(a):\n    return a\n",
    ],
)
def test_the_helper_rule_fails_on_a_planted_copy(source):
    assert len(helper_copies(source)) == 1
    assert helper_copies("def test_softmax_sums_to_one():\n    pass\n") == []


def test_the_shared_softmax_reference_agrees_with_scipy(np_softmax, rng):
    from scipy.special import softmax

    a = rng.normal(size=(4, 5, 6)) * 30 + 700  # exp(700 + ...) overflows unshifted
    for axis in (-1, 0, 1):
        np.testing.assert_allclose(np_softmax(a, axis), softmax(a, axis), rtol=1e-12)
