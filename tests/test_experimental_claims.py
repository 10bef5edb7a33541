"""Claims about experiments hold over seeds, and none hides as an identity.

The book-wide schema (CONTRIBUTING.md, "Experimental claims"): every claim cell's
``claim`` metadata has a ``kind``,

* ``"identity"``: a mathematical equivalence or a numerical check of a formula;
* ``"experiment"``: an ordering, gain, threshold or count from a trained or randomised
  experiment, with ``"seeds"`` (at least five distinct ints) that the cell's code uses,
  and the median shown over them;
* ``"illustration"``: one run shown as such, whose statement says it is one run;

and, where the statement explains *why* a result holds, a ``"control"`` naming the
control that could refute the explanation. A claim that reads the committed results
(``results.load``) is a consistency check (its reference says so): the slice that makes
such a number falsifiable lives in ``tests/test_results.py``.

Fast (nothing is executed): notebooks are read as JSON. Every rule is shown to fail
and to pass on small notebooks written here. The per-chapter tests fail, naming the
cell, on a chapter that has not been migrated to the schema.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import claims_lib as L  # noqa: E402

NOTEBOOKS = L.chapter_notebooks()
KINDS = ("identity", "experiment", "illustration")
MIN_SEEDS = 5

# Calls that train a model or run a seeded experiment: attnlib's trainers and experiment
# drivers (found in the library, so that a new ``fit_*`` is covered), and the raw
# ingredients of a training loop.
_TRAINER_DEF = re.compile(r"^def ((?:train|fit_|sample_efficiency)\w*)\(", re.M)
TRAINERS = sorted(
    {
        m
        for path in [ROOT / "attnlib" / "training.py"]
        + sorted(
            p
            for p in (ROOT / "attnlib").rglob("*.py")
            if "experiments" in p.with_suffix("").relative_to(ROOT / "attnlib").parts
        )
        for m in _TRAINER_DEF.findall(path.read_text())
    }
    | {"train", "fit_classifier", "sample_efficiency"}
)
TRAINING_ATTRS = {"backward", "zero_grad"}
# A statement that says why.
WHY = re.compile(r"\b(because|since|due to|explains?|which is why|the reason)\b", re.I)
# A statement that says it is one run.
ONE_RUN = re.compile(
    r"\b(one|a single|single)\s+(?:\w+\s+){0,2}?(run|seed|draw|trial|sample|"
    r"initiali[sz]ation|training)s?\b|\billustrat",
    re.I,
)


# ----------------------------------------------------------------- reading the code
def _tree(code: str) -> ast.Module | None:
    lines = [
        "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in code.splitlines()
    ]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _int_values(node: ast.AST) -> list[int] | None:
    """The ints of a literal list/tuple/set, ``range(...)`` or ``list(range(...))``."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(values) == len(node.elts) and all(type(v) is int for v in values):
            return values
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "seeds" and len(node.args) == 1 and not node.keywords:
            # attnlib.utils.seeds: the base seeds, which ATTNLIB_SEED_OFFSET shifts
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and type(arg.value) is int:
                return list(range(arg.value))
            return _int_values(arg)
        if node.func.id in ("list", "tuple") and len(node.args) == 1:
            return _int_values(node.args[0])
        if node.func.id == "range" and node.args and not node.keywords:
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if len(args) == len(node.args) and all(type(a) is int for a in args):
                return list(range(*args))
    return None


def _called_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                names.add(f.id)
            elif isinstance(f, ast.Attribute):
                names.add(f.attr)
    return names


def _loads_results(tree: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "load"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "results"
        for n in ast.walk(tree)
    )


def _names_used(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _free_names(tree: ast.AST) -> set[str]:
    """The names a cell reads from earlier cells: every name it loads, less those it
    binds itself first (assigned on an earlier line, a parameter of the function or
    lambda it sits in, a target of the comprehension it sits in)."""
    first_store: dict[str, int] = {}
    for n in ast.walk(tree):
        name = (
            n.id
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
            else (n.name if isinstance(n, (ast.FunctionDef, ast.ClassDef)) else None)
        )
        if name is not None:
            first_store[name] = min(first_store.get(name, n.lineno), n.lineno)
    free = set()

    def visit(node, local: frozenset):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            local = local | {p.arg for p in params if p is not None}
        if isinstance(
            node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            local = local | {
                t.id for g in node.generators for t in ast.walk(g.target)
                if isinstance(t, ast.Name)
            }  # fmt: skip
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id not in local and not first_store.get(node.id, 1e9) < node.lineno:
                free.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, local)

    visit(tree, frozenset())
    return free


def _assigned(tree: ast.AST):
    """(target names, value) of every assignment in the code."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {
                t.id
                for target in targets
                for t in ast.walk(target)
                if isinstance(t, ast.Name)
            }
            yield names, node.value


class Notebook:
    """What the rules need to know about a notebook's code, read in cell order."""

    def __init__(self, nb: dict):
        self.cells = nb["cells"]
        self.trees = [
            _tree(L.source(c)) if c["cell_type"] == "code" else None for c in self.cells
        ]
        # names bound to a list of ints (a seed list), and names derived from the
        # committed results, each with the first cell that binds them
        self.int_lists: dict[str, list[tuple[int, list[int]]]] = {}
        self.from_results: dict[str, int] = {}
        for i, tree in enumerate(self.trees):
            if tree is None:
                continue
            for names, value in _assigned(tree):
                ints = _int_values(value)
                if ints is not None:
                    for name in names:
                        self.int_lists.setdefault(name, []).append((i, ints))
                if _loads_results(value) or _names_used(value) & set(
                    n for n, at in self.from_results.items() if at <= i
                ):
                    for name in names:
                        self.from_results.setdefault(name, i)

    def seed_names(self, seeds: list[int], before: int) -> set[str]:
        """Names bound to exactly these seeds (as a set) in cells up to ``before``."""
        return {
            name
            for name, bindings in self.int_lists.items()
            if any(at <= before and set(v) == set(seeds) for at, v in bindings)
        }

    def reads_results(self, i: int) -> bool:
        tree = self.trees[i]
        if tree is None:
            return False
        earlier = {n for n, at in self.from_results.items() if at < i}
        return _loads_results(tree) or bool(_free_names(tree) & earlier)

    def uses_seeds(self, i: int, seeds: list[int]) -> bool:
        tree = self.trees[i]
        if tree is None:
            return False
        literal = any(
            (v := _int_values(n)) is not None and set(v) == set(seeds)
            for n in ast.walk(tree)
        )
        return literal or bool(_names_used(tree) & self.seed_names(seeds, i))

    def committed_seeds(self, i: int) -> list[set[int]]:
        """Every ``seeds`` list in the committed results this notebook loads."""
        from attnlib import results

        found = []
        names = {
            n.args[0].value
            for tree in self.trees
            if tree is not None
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "load"
            and n.args
            and isinstance(n.args[0], ast.Constant)
        }

        def walk(obj):
            if isinstance(obj, dict):
                for k, v in obj.items():
                    if k == "seeds" and isinstance(v, list):
                        found.append({s for s in v if type(s) is int})
                    walk(v)
            elif isinstance(obj, list):
                for v in obj:
                    walk(v)

        for name in names:
            if name in results.names():
                walk(results.load(name))
        return found

    def shows_median(self, i: int, window: int = 3) -> bool:
        """``median`` in the claim cell or in one of the code cells just before it, or
        a call there of a function the chapter defines to show one (``glue_spread``:
        the median and range over the seeds, for the prose)."""
        code_cells = [j for j in range(i + 1) if self.trees[j] is not None]
        showing = {
            n.name
            for tree in self.trees[:i]
            if tree is not None
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and "median" in ast.unparse(n)
        }
        return any(
            "median" in L.source(self.cells[j]) or showing & _names_used(self.trees[j])
            for j in code_cells[-(window + 1) :]
        )


# Where a seed is given: keyword arguments, and the calls that seed a generator.
SEED_KEYWORDS = {"seed", "seeds", "random_state", "rng", "generator"}
SEEDING_CALLS = {
    "set_seed",
    "manual_seed",
    "default_rng",
    "RandomState",
    "check_random_state",
    "Generator",
    "seed",
}


def _literal_loop_names(tree: ast.AST) -> set[str]:
    """Loop variables running over literal ints (``for s in range(5)``)."""
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.comprehension))]
    return {
        n.target.id
        for n in loops
        if isinstance(n.target, ast.Name) and _int_values(n.iter)
    }


def _is_literal_seed(node: ast.AST, loop_names: frozenset = frozenset()) -> bool:
    """An int constant, a literal list/range of them, or a loop variable over one: a
    seed no offset can move."""
    if isinstance(node, ast.Name):
        return node.id in loop_names
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "seeds":
            return False
    return bool(_int_values(node))  # an empty list seeds nothing


def literal_seeds(nb: dict, path: Path | str = "") -> list[str]:
    """Seeds a chapter writes as numbers, which ATTNLIB_SEED_OFFSET cannot move.

    Every draw of a chapter follows from ``seeds(...)`` (attnlib.utils), or from the
    setup cell's ``OFFSET``: a literal ``seed=3``, ``default_rng(0)`` or
    ``SEEDS = [0, 1, 2, 3, 4]`` would keep one draw fixed while the reader moves the
    rest.
    """
    name = Path(path).name or "notebook"
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        tree = _tree(L.source(cell))
        if tree is None:
            continue
        where = f"{name} cell {i} (id {cell.get('id', '?')})"
        loops = frozenset(_literal_loop_names(tree))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                for kw in node.keywords:
                    if kw.arg in SEED_KEYWORDS and _is_literal_seed(kw.value, loops):
                        found.append(
                            f"{where}: literal seed `{kw.arg}={ast.unparse(kw.value)}`"
                            " (take it from seeds(...) or OFFSET)"
                        )
                if called in SEEDING_CALLS and node.args:
                    if _is_literal_seed(node.args[0], loops):
                        found.append(
                            f"{where}: literal seed in `{ast.unparse(node)}`"
                            " (take it from seeds(...) or OFFSET)"
                        )
            for names, value in (
                _assigned(node) if isinstance(node, (ast.Assign, ast.AnnAssign)) else ()
            ):
                if any("seed" in n.lower() for n in names) and _is_literal_seed(value):
                    found.append(
                        f"{where}: seeds `{ast.unparse(value)}` bound without"
                        " seeds(...), so ATTNLIB_SEED_OFFSET does not move them"
                    )
    return found


# ----------------------------------------------------------------- the rules
def problems(nb: dict, path: Path | str = "") -> list[str]:
    """Every breach of the experimental-claims schema in a notebook, one line each."""
    book = Notebook(nb)
    name = Path(path).name or "notebook"
    found = []
    for i, cell in enumerate(nb["cells"]):
        meta = cell.get("metadata", {})
        if "claim" not in meta.get("tags", []) and "claim" not in meta:
            continue
        data = meta.get("claim") if isinstance(meta.get("claim"), dict) else {}
        where = f"{name} cell {i} (id {cell.get('id', '?')})"

        def bad(message, where=where):
            found.append(f"{where}: {message}")

        kind = data.get("kind")
        statement = data.get("statement", "") or ""
        reference = (data.get("reference", "") or "").strip().lower()
        code = L.source(cell) if cell["cell_type"] == "code" else ""
        tree = book.trees[i]
        if kind not in KINDS:
            bad(f"claim metadata needs `kind` in {KINDS}, has {kind!r}")
            continue
        if kind == "experiment":
            seeds = data.get("seeds")
            ok = (
                isinstance(seeds, list)
                and all(type(s) is int for s in seeds)
                and len(set(seeds)) >= MIN_SEEDS
            )
            if not ok:
                bad(
                    f"an experiment claim needs `seeds`: >= {MIN_SEEDS} distinct ints,"
                    f" has {seeds!r}"
                )
            else:
                swept = book.reads_results(i) and set(seeds) in book.committed_seeds(i)
                if not (book.uses_seeds(i, seeds) or swept):
                    bad(
                        f"the code does not use the seeds {seeds}: neither that list"
                        " nor a name bound to it appears in the cell, and no committed"
                        " sweep it reads has these seeds"
                    )
                if not book.shows_median(i):
                    bad(
                        "an experiment claim shows the median over its seeds (no"
                        " `median` in the cell or the cells just before it)"
                    )
        elif kind == "illustration":
            if not ONE_RUN.search(statement):
                bad(
                    "an illustration's statement says it is one run (e.g. 'in one"
                    f" run', 'one seed'): {statement!r}"
                )
        elif kind == "identity" and tree is not None:
            called = _called_names(tree)
            trains = sorted(called & (set(TRAINERS) | TRAINING_ATTRS))
            if "optim" in _names_used(tree) or re.search(r"\boptim\.", code):
                trains.append("torch.optim")
            if trains:
                bad(
                    f"tagged identity but trains or runs a seeded experiment "
                    f"({', '.join(trains)}): it is an experiment or an illustration"
                )
        if "seeds" in data and kind != "experiment":
            seeds = data["seeds"]
            if not (isinstance(seeds, list) and all(type(s) is int for s in seeds)):
                bad(f"`seeds` must be a list of ints, has {seeds!r}")
        if book.reads_results(i) and not reference.startswith("consistency check"):
            bad(
                "asserts against the committed results (results.load) without"
                " recomputing them: its reference must start with 'consistency check'"
            )
        control = data.get("control")
        if control is not None and not (isinstance(control, str) and control.strip()):
            bad(f"`control` must be one non-empty line, has {control!r}")
        if WHY.search(statement) and not (isinstance(control, str) and control.strip()):
            bad(
                "the statement says why a result holds: name the control that could"
                " refute it in `control` (and run and assert it in the cell)"
            )
    return found


# ----------------------------------------------------------------- every chapter
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_claims_follow_the_experimental_schema(path):
    found = problems(L.load(path), path)
    assert found == [], f"{len(found)} problem(s) in {path.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_seed_of_a_chapter_moves_with_the_offset(path):
    found = literal_seeds(L.load(path), path)
    assert found == [], f"{len(found)} fixed seed(s) in {path.name}:\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    "text, fixed",
    [
        ("SEEDS = seeds(5)\nx = run(seed=SEEDS[0])", False),
        ("x = make(random_state=OFFSET + 3)", False),
        ("rng = np.random.default_rng(s)", False),
        ("x = run(seed=0)", True),
        ("rng = np.random.default_rng(7)", True),
        ("torch.manual_seed(1)", True),
        ("SEEDS = [0, 1, 2, 3, 4]", True),
        ("more_seeds = list(range(10))", True),
        ("KMeans(4, random_state=0)", True),
        ("run(seeds=[0, 1, 2])", True),
        ("for s in range(5):\n    run(seed=s)", True),
        ("x = [draw(seed=s) for s in [0, 1, 2]]", True),
        ("for s in SEEDS:\n    run(seed=s)", False),
        ("for n in range(5):\n    run(size=n, seed=OFFSET)", False),
    ],
)
def test_a_literal_seed_is_caught(text, fixed):
    assert bool(literal_seeds(nb(code(text)))) is fixed


# ----------------------------------------------------------------- the rules themselves
def code(text, tags=(), **meta):
    meta = {**meta, **({"tags": list(tags)} if tags else {})}
    return {
        "cell_type": "code",
        "id": "c",
        "metadata": meta,
        "source": text,
        "outputs": [],
        "execution_count": None,
    }


BASE = {
    "statement": "Softmax rows sum to one",
    "source": "this book",
    "reference": "a NumPy restatement in this cell",
    "tolerance": "atol 1e-12",
}
SEEDS = [0, 1, 2, 3, 4]


def claim(text="assert x", **fields):
    data = {k: v for k, v in {**BASE, **fields}.items() if v is not None}
    return code(text, tags=["claim"], claim=data)


def nb(*cells):
    return {"cells": list(cells), "nbformat": 4, "nbformat_minor": 5, "metadata": {}}


EXPERIMENT = (
    "accs = [fit_classifier(task(seed=s), seed=s) for s in SEEDS]\n"
    "med = np.median(accs)\nassert min(accs) > 0.9"
)


@pytest.mark.parametrize(
    "cells",
    [
        [claim(kind="identity")],
        [code(f"SEEDS = {SEEDS}"), claim(EXPERIMENT, kind="experiment", seeds=SEEDS)],
        [
            code("SEEDS = list(range(5))"),
            claim(EXPERIMENT, kind="experiment", seeds=[4, 3, 2, 1, 0]),
        ],
        [
            claim(
                "r = [run(s) for s in range(10, 15)]\nassert np.median(r) > 0",
                kind="experiment",
                seeds=[10, 11, 12, 13, 14],
            )
        ],
        [
            claim(
                "acc = fit_classifier(t, seed=0)\nassert acc > 0.5",
                kind="illustration",
                statement="In one run (seed 0) the model learns the task",
            )
        ],
        [
            claim(
                "assert a < b",
                kind="identity",
                statement="A is below B because C",
                control="shuffle the keys: the gap closes",
            )
        ],
        [
            code('sweep = results.load("subspace")'),
            claim(
                "accs = sweep['sweep']['table'][0]['accuracies']\n"
                "assert np.median(accs) > 0.9",
                kind="experiment",
                seeds=[101, 102, 103, 104, 105],
                reference="consistency check: committed sweep subspace.json",
            ),
        ],
    ],
    ids=[
        "identity",
        "named-seeds",
        "range-seeds",
        "literal-range",
        "illustration",
        "why-with-control",
        "committed-sweep",
    ],
)
def test_a_claim_following_the_schema_passes(cells):
    assert problems(nb(*cells)) == []


@pytest.mark.parametrize(
    "cells, problem",
    [
        ([claim()], "needs `kind`"),
        ([claim(kind="proof")], "needs `kind`"),
        ([claim(EXPERIMENT, kind="experiment")], "needs `seeds`"),
        (
            [
                code("SEEDS = [0, 1, 2]"),
                claim(EXPERIMENT, kind="experiment", seeds=[0, 1, 2]),
            ],
            "needs `seeds`",
        ),
        (
            [claim(EXPERIMENT, kind="experiment", seeds=[0, 0, 1, 1, 2])],
            "needs `seeds`",
        ),
        (
            [claim(EXPERIMENT, kind="experiment", seeds=[0.0, 1, 2, 3, 4])],
            "needs `seeds`",
        ),
        ([claim(EXPERIMENT, kind="experiment", seeds=SEEDS)], "does not use the seeds"),
        (
            [
                code("SEEDS = [0, 1, 2, 3, 5]"),
                claim(EXPERIMENT, kind="experiment", seeds=SEEDS),
            ],
            "does not use the seeds",
        ),
        (
            [
                code(f"SEEDS = {SEEDS}"),
                claim(
                    EXPERIMENT.replace("np.median", "np.mean"),
                    kind="experiment",
                    seeds=SEEDS,
                ),
            ],
            "median",
        ),
        (
            [claim(kind="illustration", statement="The model learns the task")],
            "one run",
        ),
        (
            [claim("acc = fit_classifier(t)\nassert acc > 0.9", kind="identity")],
            "tagged identity but trains",
        ),
        (
            [claim("m = train(model, loader)\nassert m.loss < 1", kind="identity")],
            "tagged identity but trains",
        ),
        (
            [claim("r = sample_efficiency(x)\nassert r[0] < r[1]", kind="identity")],
            "tagged identity but trains",
        ),
        (
            [claim("loss.backward()\nopt.step()\nassert l < 1", kind="identity")],
            "tagged identity but trains",
        ),
        (
            [
                code('bench = results.load("lle")'),
                claim(
                    "assert bench['rows'][0]['ratio_to_sklearn'] < 1", kind="identity"
                ),
            ],
            "consistency check",
        ),
        (
            [
                claim(
                    'r = results.load("lle")["rows"]\nassert r[0]["x"] < 1',
                    kind="identity",
                )
            ],
            "consistency check",
        ),
        (
            [claim("assert a < b", kind="identity", statement="A < B because C")],
            "control",
        ),
        ([claim("assert a < b", kind="identity", control="")], "`control`"),
        ([claim(kind="identity", seeds="0-4")], "list of ints"),
    ],
    ids=[
        "no-kind",
        "bad-kind",
        "no-seeds",
        "three-seeds",
        "repeated-seeds",
        "float-seed",
        "seeds-unused",
        "other-seeds",
        "no-median",
        "unlabelled-illustration",
        "hidden-fit_classifier",
        "hidden-train",
        "hidden-sample_efficiency",
        "hidden-loop",
        "committed-json-name",
        "committed-json-inline",
        "why-without-control",
        "empty-control",
        "bad-seeds-type",
    ],
)
def test_a_claim_breaking_the_schema_is_caught(cells, problem):
    found = problems(nb(*cells), "99_demo.ipynb")
    assert any(problem in p for p in found), found
    assert all(p.startswith("99_demo.ipynb cell ") for p in found), found


def test_a_migrated_copy_of_a_real_chapter_passes_and_a_regression_is_caught(tmp_path):
    """Strip one chapter's kinds and seeds: every claim is reported, by its cell."""
    path = NOTEBOOKS[0]
    chapter = L.load(path)
    before = problems(chapter, path)
    stripped = json.loads(json.dumps(chapter))
    n = 0
    for cell in stripped["cells"]:
        if isinstance(cell["metadata"].get("claim"), dict):
            cell["metadata"]["claim"].pop("kind", None)
            n += 1
    found = problems(stripped, path)
    assert len([p for p in found if "needs `kind`" in p]) == n > 0
    assert len(found) >= len(before)


def test_the_trainers_are_found_in_the_library():
    assert {"train", "fit_classifier", "sample_efficiency", "fit_and_score"} <= set(
        TRAINERS
    )


def test_a_solver_that_stops_short_fails_a_chapter_and_a_sweep(tmp_path):
    """The setup cell and the benchmarks' parse_args make a ConvergenceWarning fail."""
    sys.path.insert(0, str(ROOT / "book"))
    import notebook_tools

    setup = notebook_tools.setup_cell_source()
    assert 'warnings.simplefilter("error", ConvergenceWarning)' in setup
    script = tmp_path / "sweep.py"
    script.write_text(
        "import sys, warnings\n"
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
        "from _common import parse_args\n"
        "from sklearn.exceptions import ConvergenceWarning\n"
        "parse_args('a sweep')\n"
        "warnings.warn('stopped short', ConvergenceWarning)\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert run.returncode != 0 and "ConvergenceWarning: stopped short" in run.stderr


@pytest.mark.parametrize(
    "code, free",
    [
        ("y = sweep['rows'][0]", {"sweep"}),
        ("sweep = sweep['rows']\nassert sweep", {"sweep"}),  # rebinding reads it first
        ("w = f(1)\nassert w > 0", {"f"}),  # bound above its use: the cell's own
        ("def g(v):\n    return v + u\nassert g(1)", {"u"}),  # a parameter is local
        ("r = [s + 1 for s in S]\nassert r", {"S"}),  # a comprehension's target too
        ("assert q > 0\nq = 1", {"q"}),  # read before the cell binds it
    ],
)
def test_a_cell_reads_only_the_names_it_does_not_bind_first(code, free):
    assert _free_names(ast.parse(code)) == free
