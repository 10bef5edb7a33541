"""One notation and defined terms across the book (issue 47, item 6): each symbol of the
notation page means one thing, every glossary term is linked at its first use in each
chapter, the papers are "sources", and the main source is cited by its title."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))
import notebook_tools  # noqa: E402

NOTEBOOKS = notebook_tools.chapter_notebooks()
GLOSSARY = ROOT / "book" / "glossary.md"
NOTATION = ROOT / "book" / "notation.md"


def _markdown(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "markdown"
    ]


# ------------------------------------------------------------------ prose, masked
_NOT_PROSE = [
    re.compile(r"^```.*?^```", re.S | re.M),  # fenced code
    re.compile(r"\{[\w:-]+\}`[^`]*`"),  # roles ({term}`x` included)
    re.compile(r"``.*?``|`[^`]*`", re.S),  # inline code
    re.compile(r"\$\$.*?\$\$", re.S),  # display maths
    re.compile(r"\$[^$]+\$"),  # inline maths
    re.compile(r"\[[^\]]*\]\([^)]*\)"),  # links
    re.compile(r"^#{1,6} .*$", re.M),  # headings
    re.compile(r"^\s*:{3,}.*$", re.M),  # directive fences
    re.compile(r"^\s*:[\w-]+:.*$", re.M),  # directive options
    re.compile(r"<[^>\n]+>"),  # HTML
]
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)


def prose(text: str) -> str:
    """``text`` with all that is not running prose blanked, positions kept."""
    for pattern in _NOT_PROSE:
        text = pattern.sub(lambda m: "\0" * len(m.group(0)), text)
    return text


def maths(text: str) -> str:
    """The maths of ``text`` (inline and display), one span per line."""
    return "\n".join(m.group(0) for m in _MATH.finditer(text))


def test_prose_masks_what_is_not_prose():
    text = (
        "A Lasso $\\lambda$ `Lasso` {term}`Lasso` [Lasso](x.md)\n## Lasso\n:::{x} Lasso"
    )
    masked = prose(text)
    assert masked.count("Lasso") == 1 and masked.startswith("A Lasso")


# ------------------------------------------------------------------ the glossary
def glossary() -> dict[str, str]:
    """Every spelling of the glossary -> its entry (the entry's first spelling):
    consecutive unindented lines of the ``glossary`` block spell one entry."""
    block = re.search(r"```\{glossary\}\n(.*?)\n```", GLOSSARY.read_text(), re.S)
    assert block, "book/glossary.md holds a glossary directive"
    spellings, entry, after_term = {}, None, False
    for line in block.group(1).splitlines():
        if line.strip() and not line[0].isspace():
            if not after_term:
                entry = line.strip()
            spellings[line.strip()] = entry
            after_term = True
        else:
            after_term = False
    return spellings


def _spelling(word: str) -> re.Pattern:
    flags = 0 if word.isupper() else re.I  # acronyms (PSNR, ISTA) by case
    return re.compile(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", flags)


_TERM = re.compile(r"\{term\}`([^`<]*?)\s*(?:<([^>]+)>)?`")

#: The terms issue 47 names, each of which the glossary must define.
REQUIRED_TERMS = [
    "Lasso",
    "duality gap",
    "nuclear norm",
    "spectral clustering",
    "PSNR",
    "receptive field",
    "kernel regression",
    "bandwidth",
    "non-local means",
    "patch",
    "reconstruction weights",
    "barycentric weights",
    "self-expressiveness",
    "subspace clustering",
    "equivariance",
    "invariance",
    "simplex",
    "sparsemax",
    "entmax",
    "Tsallis entropy",
    "Fenchel–Young loss",
    "continuous attention",
    "basis functions",
    "multiplexer",
    "straight-through estimator",
    "temperature",
]


def test_the_glossary_defines_the_terms_of_the_issue():
    spellings = glossary()
    assert [t for t in REQUIRED_TERMS if t not in spellings] == []
    assert len(set(spellings.values())) >= 50


def test_the_glossary_parser_reads_spellings_and_entries(tmp_path, monkeypatch):
    page = tmp_path / "g.md"
    page.write_text(
        "```{glossary}\npatch\npatches\n  A square.\n\nLasso\n  A fit.\n```\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "GLOSSARY", page)
    assert glossary() == {"patch": "patch", "patches": "patch", "Lasso": "Lasso"}


def first_uses(chapters: list[str], spellings: dict[str, str]) -> dict[str, bool]:
    """For each glossary entry used in ``chapters`` (markdown cells in order):
    whether its first use in the prose is a ``{term}`` link to it."""
    lower = {s.lower(): e for s, e in spellings.items()}
    patterns = {}
    for spelling, entry in spellings.items():
        patterns.setdefault(entry, []).append(_spelling(spelling))
    found = {}
    for text in chapters:
        masked = prose(text)
        events = [  # (position, entry, linked)
            (m.start(), lower.get((m.group(2) or m.group(1)).strip().lower()), True)
            for m in _TERM.finditer(text)
        ]
        for entry, pats in patterns.items():
            events += [
                (m.start(), entry, False) for p in pats for m in p.finditer(masked)
            ]
        for _, entry, linked in sorted(events, key=lambda e: e[0]):
            if entry is not None and entry not in found:
                found[entry] = linked
    return found


def test_first_use_finds_an_unlinked_first_use():
    spellings = {"Lasso": "Lasso", "patch": "patch", "patches": "patch"}
    cells = ["The Lasso, then {term}`Lasso`; {term}`patches <patch>`.", "A patch."]
    assert first_uses(cells, spellings) == {"Lasso": False, "patch": True}
    assert first_uses(["## Lasso\n$\\mathrm{Lasso}$ `Lasso`"], spellings) == {}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_glossary_term_is_linked_at_its_first_use(path):
    unlinked = [
        e for e, ok in first_uses(_markdown(path), glossary()).items() if not ok
    ]
    assert unlinked == [], f"first used without a {{term}} link: {unlinked}"


def test_every_term_link_names_a_glossary_entry():
    spellings = {s.lower() for s in glossary()}
    texts = [t for p in NOTEBOOKS for t in _markdown(p)]
    texts += [p.read_text() for p in sorted((ROOT / "book").glob("*.md"))]
    targets = {
        (m.group(2) or m.group(1)).strip() for t in texts for m in _TERM.finditer(t)
    }
    assert sorted(t for t in targets if t.lower() not in spellings) == []


# ------------------------------------------------------------------ symbols
#: Each symbol of the notation page with one meaning: a pattern that would give it a
#: second one (in a chapter's markdown; maths and prose), and an example of that
#: misuse from the chapters as they stood before the notation pass, which the pattern
#: must find.
CLASHES = [
    (
        "τ is a threshold, not a temperature",
        r"/\s*2?\\tau\b|temperature \$\\tau"
        r"|\$\\tau = (?:0\.1|1)\$|\\tau_0|competitors' \$\\tau\$",
        r"softmax attention on $XX^\top/\tau$",
    ),
    (
        "θ is a score, not a threshold",
        r"threshold \$\\theta\$|s_i - \\theta",
        r"$p_i = \max(s_i - \theta, 0)$ with the threshold $\theta$",
    ),
    (
        "λ is a penalty weight, not a threshold or a multiplier",
        r"threshold \$?\\lambda|\[f\(t\) - \\lambda\]|\[-\\lambda|-2\\lambda"
        r"|= \\lambda \\mathbf 1",
        r"\hat p(t) = \Big[-\lambda - \tfrac12 (t-\mu)^\top\Sigma^{-1}(t-\mu)\Big]_+",
    ),
    (
        "α is entmax's, not the kernel weights nor the Lasso's penalty",
        r"\\alpha\(x, x_j\)|\\alpha = 10\^\{-2\}",
        r"\alpha(x, x_j) = \frac{\kappa}{1}",
    ),
    (
        "T is the temperature, not a matrix or a length",
        r"matrix \$T\$|\\norm\{T - G\}|\$T = \d+\$ steps|\(T-1\)",
        r"the error of a matrix $T$ on",
    ),
    (
        "Q holds the queries: not a rotation, a map or a count",
        r"XQ\^\\top|orthogonal\s+\$Q|Haar-random \$Q\$|by \$Q\$|\\max_Q"
        r"|K\^\\top Q(?:\\,|\s*[Ccx]|\$|\))"
        r"|\$Q\$ queries|O\(QLD\)|maps \$Q, K\$|queries \$Q x_j|\\mapsto Q",
        r"if $f(XQ^\top) = f(X)\,Q^\top$ for every orthogonal $Q$",
    ),
    (
        "K holds the keys: not a map or a kernel profile",
        r"keys \$K x_i\$|\\langle K x_i|profiles \$K\$|= K\\big\(",
        r"$a(x_i, C_j) = \langle K x_i, Q C_j\rangle$",
    ),
    (
        "R is a rotation: not a residual matrix or a radius",
        r"\$R X\^\\top\$ of the residuals|R\^2 = -2|radius \$R\b",
        r"one product $R X^\top$ of the residuals",
    ),
    (
        "V holds the values: not singular vectors",
        r"X = V\\Sigma U\^\\top|V\\,\\diag\(w\)|\$VV\^\\top\$|V\(I-\\lambda",
        r"Write the SVD of the data as $X = V\Sigma U^\top$",
    ),
]


@pytest.mark.parametrize("rule, pattern, example", CLASHES, ids=[c[0] for c in CLASHES])
def test_each_clash_pattern_finds_its_example(rule, pattern, example):
    assert re.search(pattern, example), rule


#: A line of a chapter's notes on its sources that quotes the source's own letters.
_QUOTES_A_SOURCE = re.compile(
    r"^.*(?:the note|the paper) writes.*this book keeps.*$", re.M
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_symbol_has_one_meaning(path):
    found = []
    for text in _markdown(path):
        text = _QUOTES_A_SOURCE.sub("", text)
        for rule, pattern, _ in CLASHES:
            found += [f"{rule}: …{m.group(0)}…" for m in re.finditer(pattern, text)]
    assert found == []


#: The same clashes in figure captions and alt text (a code cell's ``mystnb``
#: metadata), which are written in Unicode.
CAPTION_CLASHES = re.compile(r"[θs]\s*/\s*τ|temperature τ|α\(x|XQᵀ")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_figure_captions_use_the_notation(path):
    cells = json.loads(path.read_text())["cells"]
    found = [
        m.group(0)
        for c in cells
        for m in CAPTION_CLASHES.finditer(
            json.dumps(c.get("metadata", {}).get("mystnb", {}), ensure_ascii=False)
        )
    ]
    assert found == []
    assert CAPTION_CLASHES.search("softmax(θ/τ) as the temperature τ falls")


def test_the_notation_page_gives_each_symbol_one_row():
    page = NOTATION.read_text().split("## Letters that still serve twice")[0]
    rows = [r.split("|")[1].strip() for r in page.splitlines() if r.startswith("| $")]
    symbols = [s for row in rows for s in re.findall(r"\$([^$]+)\$", row)]
    for symbol in (r"\tau", "T", "Q", "K", "V", "R", r"\lambda", r"\theta", r"\alpha"):
        assert symbols.count(symbol) == 1, symbol
    assert "temperature" in page and "threshold" in page and "rotation" in page


def test_the_chapters_link_the_notation_and_the_glossary_pages():
    first = "\n".join(_markdown(NOTEBOOKS[0]))
    assert NOTEBOOKS[0].name.startswith("01_") and "(notation.md)" in first
    assert "(notation.md)" in GLOSSARY.read_text()
    assert "(glossary.md)" in NOTATION.read_text()


# ------------------------------------------------------------------ sources
_SEED_AS_SOURCE = re.compile(r"\bseeds? (?:texts?|papers?|notes?|00\d)\b", re.I)


def test_the_papers_are_sources_not_seeds():
    texts = {p.name: "\n".join(_markdown(p)) for p in NOTEBOOKS}
    texts |= {p.name: p.read_text() for p in sorted((ROOT / "book").glob("*.md"))}
    found = [
        f"{n}: {m.group(0)}"
        for n, t in texts.items()
        for m in _SEED_AS_SOURCE.finditer(prose(t))
    ]
    assert found == []
    assert _SEED_AS_SOURCE.search("as the seed paper says; seed 004")


def test_the_library_docs_call_the_papers_sources():
    """The API reference shows attnlib's docstrings: "(seed 004)" reads as a random
    seed there."""
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in sorted((ROOT / "attnlib").rglob("*.py"))
        for m in _SEED_AS_SOURCE.finditer(p.read_text())
    ]
    assert found == []


def test_the_main_source_is_cited_by_its_title():
    from pybtex.database import parse_file

    bib = parse_file(str(ROOT / "book" / "references.bib"))
    entry = bib.entries["selfexpression2022"]
    title = entry.fields["title"]
    (author,) = entry.persons["author"]
    assert (
        str(author).strip("{}") == title == "Attention: Self-Expression Is All You Need"
    )
    authors = [
        str(a) for e in bib.entries.values() for a in e.persons.get("author", [])
    ]
    assert not [a for a in authors if "anonymous" in a.lower()]
