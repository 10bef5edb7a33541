"""Count issue 28's mechanical blemishes, to compare before and after a pass.

Usage (from the repository root)::

    python tools/mechanical.py            # counts per kind: attnlib, benchmarks, tools
    python tools/mechanical.py -v tests   # every place found, in tests/

Kinds:

- ``repeat``: a docstring whose second paragraph says the summary again (most of the
  summary's words, stemmed crudely, come back in it); a heuristic, so read the list.
- ``wrapped``: a trailing comment a formatter pushed after a closing bracket,
  ``(\\n expr\\n)  # ...``: the comment belongs on its own line above.
- ``usage``: a usage block in a docstring whose command lines were re-wrapped (a
  command line continued by a word, or two commands on one line).
- ``kernel-loops``: "kernel" meaning a compiled loop, in our own names and words.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORD = re.compile(r"[a-zα-ω]{4,}")
STOP = {
    "that",
    "this",
    "with",
    "from",
    "each",
    "their",
    "which",
    "when",
    "into",
    "them",
}
LOOPS = re.compile(r"(?:compiled|C|numba|loop) kernels?\b(?! sums?)", re.IGNORECASE)


def _stems(text: str) -> set[str]:
    return {w[:5] for w in WORD.findall(text.lower()) if w not in STOP}


def repeats(path: Path, tree: ast.AST) -> list[str]:
    """Docstrings whose second paragraph repeats the summary."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(
            node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            continue
        doc = ast.get_docstring(node)
        if not doc:
            continue
        paragraphs = [p for p in re.split(r"\n\s*\n", doc) if p.strip()]
        if len(paragraphs) < 2 or re.match(r"\s*\w+\n\s*-{3,}", paragraphs[1]):
            continue
        # the second paragraph's first sentence says the summary again
        first = re.split(r"(?<=[.;:])\s", paragraphs[1].strip(), maxsplit=1)[0]
        summary, second = _stems(paragraphs[0]), _stems(first)
        if len(summary) >= 3 and len(summary & second) / len(summary) >= 0.5:
            name = getattr(node, "name", "<module>")
            found.append(f"{path}:{getattr(node, 'lineno', 1)} {name}")
    return found


def wrapped(path: Path, text: str) -> list[str]:
    """Closing brackets alone on a line with a trailing comment."""
    return [
        f"{path}:{i}"
        for i, line in enumerate(text.splitlines(), 1)
        if re.match(r"\s*[)\]}]+,?\s+#(?! fmt:| noqa)", line)
    ]


def usage(path: Path, tree: ast.AST) -> list[str]:
    """Usage blocks whose command lines were re-wrapped into prose."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
            continue
        lines = (ast.get_docstring(node) or "").splitlines()
        for i, line in enumerate(lines[:-1]):
            after = lines[i + 1]
            command = re.match(r"\s+(python|make) ", line)
            if (
                command
                and after.strip()
                and not re.match(r"\s+(python|make|#|\$)", after)
            ):
                found.append(f"{path}: after {line.strip()[:40]!r}")
            if len(re.findall(r"\b(?:python|make) \S", line)) > 1:
                found.append(f"{path}: two commands on {line.strip()[:40]!r}")
    return found


def kernel_loops(path: Path, text: str) -> list[str]:
    """ "kernel" meaning a compiled loop, in our names and words."""
    found = [
        f"{path}:{i}"
        for i, line in enumerate(text.splitlines(), 1)
        if LOOPS.search(line)
        or re.search(r"\bentmax_kernels\b|ATTNLIB_KERNELS|\b_kernels?\b", line)
    ]
    return found


def scan(paths) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {k: [] for k in ("repeat", "wrapped", "usage")}
    kinds["kernel-loops"] = []
    for path in paths:
        text = path.read_text()
        tree = ast.parse(text)
        rel = path.relative_to(ROOT)
        kinds["repeat"] += repeats(rel, tree)
        kinds["wrapped"] += wrapped(rel, text)
        kinds["usage"] += usage(rel, tree)
        kinds["kernel-loops"] += kernel_loops(rel, text)
    return kinds


def main(argv: list[str]) -> None:
    verbose = "-v" in argv
    folders = [a for a in argv if not a.startswith("-")]
    folders = folders or ["attnlib", "benchmarks", "tools"]
    paths = sorted(
        p for f in folders for p in (ROOT / f).rglob("*.py") if p != Path(__file__)
    )
    for kind, places in scan(paths).items():
        print(f"{kind}: {len(places)}")
        if verbose:
            for place in places:
                print(f"    {place}")


if __name__ == "__main__":
    main(sys.argv[1:])
