"""The book's rules for claims, glued numbers, exercises and departures, stated once.

Both the Sphinx extension that builds the claims ledger and the errata page
(``book/_ext/claims.py``) and the tests that enforce the conventions
(``tests/test_claims.py``) read the notebooks as JSON through this module, so that what
the ledger counts and what the tests check are the same cells.

The conventions (the common brief of the book):

* A **claim cell** is a code cell tagged ``claim`` whose metadata holds
  ``claim: {statement, source, reference, tolerance}`` and, where the source is wrong,
  ``erratum``. It must contain an assert. A reference that names only attnlib is
  circular unless it starts with ``consistency check:``.
* A **decimal number in prose** must be glued (``{glue:text}`name` `` etc.), or appear
  literally in an assert of a code cell of the same notebook, or be listed in the
  markdown cell's ``metadata.quoted``.
* Every **exercise solution** has a markdown answer and its last code cell asserts it.
* Every chapter has one **departures box** and code lines of at most 88 characters.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINE = 88
CONSISTENCY = "consistency check:"
REQUIRED_FIELDS = ("statement", "source", "reference", "tolerance")
#: The kinds of claim (metadata ``kind``): an identity is a mathematical equivalence
#: or a formula checked numerically; an experiment an ordering, gain, threshold or
#: count from a trained or randomised run, asserted over ``seeds``; an illustration one
#: run shown as such.
KINDS = ("identity", "experiment", "illustration")
MIN_SEEDS = 5

#: The sources the book follows (the texts of ../shared/README.md), by file number:
#: a key for the ledger and the errata (author-year, as the bibliography cites it), the
#: paper's title, and its entry in book/references.bib.
SOURCES = {
    "000": (
        "Attention: Self-Expression Is All You Need (2022)",
        "Attention: Self-Expression Is All You Need",
        "selfexpression2022",
    ),
    "002": (
        "Martins et al. (2020)",
        "Sparse and Continuous Attention Mechanisms",
        "martins2020sparse",
    ),
    "003": (
        "Ma & Ying (2022)",
        "Why Self-Attention Is Natural for Sequence-to-Sequence Problems? "
        "A Perspective from Symmetries",
        "ma2021symmetry",
    ),
    "004": ("Wiki note (n.d.)", "Attention (a wiki note)", "attentionwiki"),
}
_SEED = re.compile(r"\bseeds?\s+(\d{3})\b", re.I)  # "seed 002"; not a random "seed 0"

#: The papers' numbered equations and the book's labelled equations that state them
#: (read in ../shared/seeds/; the book's are in rows where the papers' are in columns,
#: chapter 01's convention). A claim's metadata that names a paper's equation names
#: one of these beside it ("seed 000, Eq. (6), our eq-02-gauss"), so that the ledger,
#: the errata and the callouts show both numbers (:func:`paper_equation_problems`).
#: The wiki note (seed 004) numbers no equation.
PAPER_EQUATIONS = {
    "000": {
        1: ("eq-01-attention", "eq-01-matrix", "eq-01-convention"),
        2: ("eq-01-attention", "eq-01-matrix", "eq-01-convention"),
        3: ("eq-01-self",),
        4: ("eq-01-self",),
        5: ("eq-02-nw",),
        6: ("eq-02-gauss", "eq-03-gauss"),
        7: ("eq-02-sphere",),
        8: ("eq-03-pixel-nlm",),
        9: ("eq-04-weights",),
        10: ("eq-04-embedding",),
        11: ("eq-05-selfexpr",),
        12: ("eq-05-ssc",),
        14: ("eq-05-lsr",),  # its large-λ limit
        15: ("eq-05-ista",),
        16: ("eq-05-sparse-coding",),
        17: ("eq-05-sparse-coding",),
        18: ("eq-05-unrolled",),
    },
    "002": {
        1: ("eq-07a-rpm", "eq-07b-rpm"),
        4: ("eq-07a-expbeta",),
        5: ("eq-07a-escort",),
        6: ("eq-07a-tsallis",),
        7: ("eq-07a-entmax",),
        8: ("eq-07a-gradient",),
        9: ("eq-07b-sparsemax",),
        10: ("eq-07b-parabola", "eq-07a-epanechnikov"),
        11: ("eq-07b-paraboloid",),
        12: ("eq-07b-triangle",),
        13: ("eq-07b-location-scale",),
        14: ("eq-07a-jacobian",),
        15: ("eq-07b-rho",),
        16: ("eq-07b-ridge",),
        17: ("eq-07b-prop3",),
        18: ("eq-07b-prop3", "eq-07a-jacobian"),
    },
    "003": {
        1: ("eq-06-selfattn",),  # without the paper's residual X + and W_V
        2: ("eq-06-prop2",),
        3: ("eq-06-products",),  # one product term, without σ and the sum over i
        4: ("eq-06-practical",),
        5: ("eq-06-practical",),
        6: ("eq-06-practical", "eq-06-stacked"),
    },
    "004": {},
}
#: The seed a chapter follows, for a paper equation named without its seed.
CHAPTER_SEEDS = {
    "01": "000",
    "02": "000",
    "03": "000",
    "04": "000",
    "05": "000",
    "06": "003",
    "07a": "002",
    "07b": "002",
    "08": "004",
}
#: A paper's equation as metadata names it: "Eq. (6)", "Eqs. (1)-(2)", "Eqs. 10–13",
#: "Eqs. (10) and (12)", "Eqs. (5), (6)". A number with a decimal point, "(7b.3)", is
#: the book's (as a page shows it), not a paper's.
PAPER_EQ = re.compile(
    r"\bEqs?\.\s*\(?(\d+)(?![\d.]*\d)\)?"
    r"((?:\s*(?:[-–,]|and)\s*\(?\d+(?![\d.]*\d)\)?)*)"
)
#: A label of the book's equations, ``eq-07b-parabola``.
BOOK_EQ = re.compile(r"\beq-\d+[a-z]?-[\w-]*[A-Za-z0-9]")
_CLAUSE = re.compile(r";|(?<=[.!?])\s+(?=[A-Z])")


def paper_equation_numbers(text: str) -> list[list[int]]:
    """The paper equations ``text`` names, one list per mention ("Eqs. (16)-(18)" gives
    16, 17, 18)."""
    found = []
    for m in PAPER_EQ.finditer(text):
        numbers = [int(m.group(1))]
        for sep, n in re.findall(r"([-–,]|and)\s*\(?(\d+)", m.group(2)):
            n = int(n)
            if sep in "-–" and n > numbers[-1]:
                numbers += list(range(numbers[-1] + 1, n + 1))
            else:
                numbers.append(n)
        found.append(numbers)
    return found


def paper_equation_problems(text: str, seed: str = "000") -> list[str]:
    """Where ``text`` names a paper's equation without the book's equation that states
    it, in the same clause (between semicolons or sentences).

    ``seed``: the paper meant where a clause names none ("seed 002, ..." names it).
    """
    found = []
    named = _SEED.search(text)
    default = named.group(1).zfill(3) if named else seed
    for clause in _CLAUSE.split(text):
        mentions = paper_equation_numbers(clause)
        if not mentions:
            continue
        named = _SEED.search(clause)
        paper = named.group(1).zfill(3) if named else default
        labels = set(BOOK_EQ.findall(clause))
        known = PAPER_EQUATIONS.get(paper, {})
        for n in sorted({n for numbers in mentions for n in numbers}):
            ours = known.get(n)
            if ours is None:
                found.append(
                    f"names Eq. ({n}) of seed {paper}, which has no counterpart in "
                    "claims_lib.PAPER_EQUATIONS"
                )
            elif not labels & set(ours):
                found.append(
                    f"names Eq. ({n}) of seed {paper} without the book's equation "
                    f"({' or '.join(ours)}) in the same clause: {clause.strip()!r}"
                )
    return found


def claim_equation_problems(c: Claim) -> list[str]:
    """A claim's fields that name a paper's equation without the book's (every field
    the ledger, the errata and the callout show)."""
    seed = CHAPTER_SEEDS.get(c.notebook.stem.split("_", 1)[0], "000")
    found = []
    for key in ("statement", "source", "reference", "tolerance", "erratum", "control"):
        for problem in paper_equation_problems(getattr(c, key), seed):
            found.append(f"{c.notebook.name} claim {c.number} ({key}): {problem}")
    return found


# ------------------------------------------------------- mathematics in the metadata
# The ledger, the errata and the callouts parse the metadata as inline MyST, so maths
# written as $...$ is typeset, and pseudo-TeX outside it reaches the page as raw text
# ("W_V", "ℝ^{d_v×d}", "W_QᵀW_K/√8"; issue 32). Code spans are left alone, and so are
# names with long parts (neg_sq_dist, x_query) and dotted names and files.
_CODE_SPAN = re.compile(r"`[^`]*`")
_MATH_SPAN = re.compile(r"(?<!\\)\$([^$]*)(?<!\\)\$")
_RAW_MARK = re.compile(r"\^|_\{|[ᵀ√‖∂∇∑∏∫⁻⁺₊₋ⁿ⁰¹⁴-⁹₀-₉]")
_UNDERSCORED = re.compile(r"[\w.]*_[\w.]*")
_UNICODE_TEX = re.compile(r"[ᵀ√‖∂∇∑∏∫⁻⁺₊₋ⁿ⁰¹²³⁴-⁹₀-₉ℝ×−]")


def raw_math(text: str) -> list[str]:
    """The sub- and superscripts and Unicode pseudo-TeX of ``text`` outside its
    ``$...$`` maths and its code spans."""
    outside = _MATH_SPAN.sub(" ", _CODE_SPAN.sub(" ", text))
    found = [m.group() for m in _RAW_MARK.finditer(outside)]
    for m in _UNDERSCORED.finditer(outside):
        token = m.group().strip(".")
        if re.search(r"[^\W\d_]\.[^\W\d_]", token):  # attnlib.foo_bar, a_b.json
            continue
        if all(len(part) <= 3 for part in token.split("_")):  # W_V, s_ii; not x_query
            found.append(token)
    return found


def math_span_problems(text: str) -> list[str]:
    """What keeps ``text``'s ``$...$`` maths from pairing up and typesetting: an odd
    number of dollars, display maths, an empty span, unbalanced braces or ``\\left``
    and ``\\right``, Unicode pseudo-TeX inside, or what the extension rewrites (a
    source's seed, an equation label) inside."""
    text = _CODE_SPAN.sub(" ", text)
    found = []
    if len(re.findall(r"(?<!\\)\$", text)) % 2:
        found.append("an unpaired $")
    if re.search(r"(?<!\\)\$\$", text):
        return found + ["display maths ($$) in a field the ledger shows inline"]
    for span in _MATH_SPAN.findall(text):
        braces = re.sub(r"\\[{}]", "", span)
        if not span.strip():
            found.append("an empty $...$")
        if braces.count("{") != braces.count("}"):
            found.append(f"unbalanced braces in ${span}$")
        if span.count(r"\left") != span.count(r"\right"):
            found.append(f"unbalanced \\left and \\right in ${span}$")
        if _UNICODE_TEX.search(span):
            found.append(f"Unicode pseudo-TeX inside ${span}$")
        if BOOK_EQ.search(span) or _SEED.search(span):
            found.append(f"an equation label or a seed inside ${span}$")
    return found


def claim_math_problems(c: Claim) -> list[str]:
    """A claim's fields with raw pseudo-TeX outside maths, or maths that cannot
    typeset (every field the ledger, the errata and the callout show)."""
    found = []
    for key in ("statement", "source", "reference", "tolerance", "erratum", "control"):
        text = getattr(c, key)
        where = f"{c.notebook.name} claim {c.number} ({key})"
        if raw := raw_math(text):
            found.append(f"{where}: raw {raw} outside $...$ in {text!r}")
        found += [f"{where}: {problem}" for problem in math_span_problems(text)]
    return found


def equation_labels(nb: dict) -> list[str]:
    """The labels of a notebook's displayed equations (``$$ ... $$ (eq-NN-name)``)."""
    return [
        m.group(1)
        for cell in nb["cells"]
        if cell["cell_type"] == "markdown"
        for m in re.finditer(r"\$\$[ \t]*\((eq-[\w-]+)\)", source(cell))
    ]


def source_key(text: str, cite: bool = False) -> str:
    """``text`` with every "seed 002" named by its key ("Martins et al. (2020)").

    ``cite``: as a MyST citation role instead (linked to the bibliography).
    """

    def name(m):
        entry = SOURCES.get(m.group(1).zfill(3))
        if entry is None:
            return m.group(0)
        return f"{{cite:t}}`{entry[2]}`" if cite else entry[0]

    return _SEED.sub(name, text)


# The box's title; chapter 08 says "the source" (its source is a note, not a paper).
DEPARTURES_TITLE = r"Where we depart from the (?:paper|papers|source|sources)"
DEPARTURES_CLASS = "departures"


# --------------------------------------------------------------------------- reading
def source(cell: dict) -> str:
    """A cell's source as one string (stored as a list of lines or one string)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def load(path: Path | str) -> dict:
    """The notebook at ``path`` as a dict (nbformat 4 JSON)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """Every chapter notebook of the book (``book/*.ipynb``), sorted by name."""
    return sorted((Path(root) / "book").glob("*.ipynb"))


def chapter_title(nb: dict) -> str:
    """The chapter's title: the first ``# `` heading of its first markdown cell."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in source(cell).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def glue_prefix(path: Path | str) -> str:
    """The glue-name prefix of a chapter: ``07b_continuous_attention`` -> ``ch07b_``."""
    return "ch" + Path(path).stem.split("_", 1)[0] + "_"


# --------------------------------------------------------------------------- asserts
def _parse(code: str) -> ast.Module | None:
    """Parse cell code; IPython magics and shell lines are blanked out first."""
    lines = [
        "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in code.splitlines()
    ]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _is_assert_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.startswith("assert")


def assert_nodes(code: str) -> list[ast.AST]:
    """The assert statements and ``assert_*`` calls (NumPy, PyTorch...) in ``code``."""
    tree = _parse(code)
    if tree is None:
        return []
    return [
        n for n in ast.walk(tree) if isinstance(n, ast.Assert) or _is_assert_call(n)
    ]


def assertion_count(code: str) -> int:
    """How many things ``code`` asserts: ``assert a and b`` asserts two."""
    return sum(
        len(n.test.values)
        if isinstance(n, ast.Assert)
        and isinstance(n.test, ast.BoolOp)
        and isinstance(n.test.op, ast.And)
        else 1
        for n in assert_nodes(code)
    )


def has_assert(code: str) -> bool:
    """Whether ``code`` contains an assert (comments and strings do not count)."""
    return bool(assert_nodes(code))


def _without_comments(text: str) -> str:
    """``text`` with its Python comments blanked out (strings keep their ``#``)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    lines = text.splitlines(keepends=True)
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + ("\n" if line.endswith("\n") else "")
    return "".join(lines)


def assert_literals(code: str) -> set[str]:
    """Every decimal number written in an assert of ``code`` (in numbers or strings)."""
    found: set[str] = set()
    for node in assert_nodes(code):
        segment = ast.get_source_segment(_blank_magics(code), node) or ""
        found.update(DECIMAL.findall(_without_comments(segment)))
    return found


def _blank_magics(code: str) -> str:
    return "\n".join(
        "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in code.splitlines()
    )


# --------------------------------------------------------------------------- claims
@dataclass
class Claim:
    """One claim cell of a chapter."""

    notebook: Path
    index: int  # the cell's position in the notebook
    cell_id: str
    statement: str
    source: str
    reference: str
    tolerance: str
    erratum: str
    code: str
    tagged: bool
    has_metadata: bool
    number: int = 0  # 1-based position among the chapter's claims
    extra: dict = field(default_factory=dict)
    kind: str = ""  # identity | experiment | illustration ("" not yet classified)
    seeds: list = field(default_factory=list)
    control: str = ""

    @property
    def anchor(self) -> str:
        """The HTML id the extension gives the cell on its page."""
        return f"claim-{self.cell_id}"

    @property
    def is_consistency_check(self) -> bool:
        return self.reference.strip().lower().startswith(CONSISTENCY)


def claims(nb: dict, path: Path | str = "") -> list[Claim]:
    """The claim cells of a notebook: tagged ``claim`` or with ``claim`` metadata."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        meta = cell.get("metadata", {})
        tagged = "claim" in meta.get("tags", [])
        data = meta.get("claim")
        if not tagged and data is None:
            continue
        data = data if isinstance(data, dict) else {}

        def text(key, data=data):
            value = data.get(key, "")
            return value.strip() if isinstance(value, str) else ""

        found.append(
            Claim(
                notebook=Path(path),
                index=i,
                cell_id=str(cell.get("id", f"cell-{i}")),
                statement=text("statement"),
                source=text("source"),
                reference=text("reference"),
                tolerance=text("tolerance"),
                erratum=text("erratum"),
                code=source(cell) if cell["cell_type"] == "code" else "",
                tagged=tagged,
                has_metadata=bool(data),
                number=len(found) + 1,
                extra={"cell_type": cell["cell_type"], "metadata": data},
                kind=text("kind"),
                seeds=data.get("seeds") if isinstance(data.get("seeds"), list) else [],
                control=text("control"),
            )
        )
    return found


# ------------------------------------------------------------ the unseen-seed audit
# tools/unseen.py executes every chapter at offsets nobody chose and adds each audit to
# this record; the ledger and the callouts show, beside each claim, at how many of those
# offsets it held, counting only the audits that executed the claim as it is now.
UNSEEN_RECORD = ROOT / "book" / "unseen_audit.json"


def claim_key(c: Claim) -> str:
    """What an audit's outcome for a claim is valid for: code, statement, seeds."""
    text = json.dumps([c.code, c.statement, c.seeds])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_unseen_record(path: Path = UNSEEN_RECORD) -> dict:
    """The audits so far (``{"audits": [...]}``; empty when there is no record)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {"audits": []}


def unseen_counts(nb: dict, path: Path | str, record: dict | None = None) -> dict:
    """``{cell id: (offsets held, offsets audited)}`` for each claim of a chapter.

    A claim that reads a committed sweep (:func:`sweep_reads`) counts only the offsets
    at which the audit re-ran one of those sweeps (:func:`rerun_sweeps`): at the
    others it re-read the same file, which is no unseen offset.
    """
    record = load_unseen_record() if record is None else record
    reads = sweep_reads(nb, path)
    counts = {}
    for c in claims(nb, path):
        key, held, seen = claim_key(c), 0, 0
        for audit in record["audits"]:
            for k, run in audit["chapters"].get(Path(path).name, {}).items():
                if reads[c.cell_id] and not reads[c.cell_id] & rerun_sweeps(audit, k):
                    continue  # it re-read the committed file: no unseen offset
                o = run["claims"].get(c.cell_id)
                if o and o["key"] == key:
                    seen += 1
                    held += o["outcome"] == "held"
        counts[c.cell_id] = (held, seen)
    return counts


def seeds_text(seeds: list) -> str:
    """The seeds a build used: the base seeds shifted by ``ATTNLIB_SEED_OFFSET``."""
    from attnlib.utils import seed_offset  # the one reader of ATTNLIB_SEED_OFFSET

    offset = seed_offset()
    used = sorted(s + offset for s in set(seeds))
    if used == list(range(used[0], used[-1] + 1)) and len(used) > 2:
        text = f"seeds {used[0]}–{used[-1]}"
    else:
        text = "seeds " + ", ".join(map(str, used))
    return text + (f" (offset {offset})" if offset else "")


# Independent references a claim can be checked against. A reference that names attnlib
# (or one of its functions) and none of these is circular.
INDEPENDENT = [
    r"\bnumpy\b",
    r"\bnp\.",
    r"\bscipy\b",
    r"\bsklearn\b",
    r"\bscikit[- ]",
    r"\bskimage\b",
    r"\bentmax (package|library)\b",
    r"\bentmax\.\w",
    r"\bpytorch\b",
    r"\btorch\.",
    r"\bautograd\b",
    r"\bgradcheck\b",
    r"\bfinite[- ]difference",
    r"\bquadrature\b",
    r"\bclosed[- ]form\b",
    r"\banalytic",
    r"\brestatement\b",
    r"\bin this cell\b",
    r"\bby hand\b",
    r"\bbrute[- ]force\b",
    r"\bmonte[- ]carlo\b",
    r"\bexhaustive",
    r"\benumerat",
    r"\bsympy\b",
    r"\bcvxpy\b",
    r"\bnetworkx\b",
    r"\bhungarian\b",
    r"\bexact (value|solution|answer)\b",
    r"\bthe paper'?s (table|value|number|figure)",
    r"\bbaselines?\b",
    r"\bground[- ]truth\b",
]


def _attnlib_names(root: Path = ROOT) -> set[str]:
    """Public top-level function and class names defined anywhere in ``attnlib/``."""
    names: set[str] = set()
    for path in (Path(root) / "attnlib").rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(
                node, (ast.FunctionDef, ast.ClassDef)
            ) and not node.name.startswith("_"):
                names.add(node.name)
    return names


_NAMES_CACHE: dict[Path, set[str]] = {}


def names_attnlib(reference: str, root: Path = ROOT) -> bool:
    """Whether ``reference`` names attnlib: the word, or an attnlib function as code.

    A name counts as code when it is in backticks or has a dot path or an underscore; so
    the word "attention" or the formula softmax(qKᵀ)V are prose;
    ``attnlib.attention``, `` `softmax` `` and ``pixel_nlm`` are code.
    """
    if re.search(r"\battnlib\b", reference, re.I):
        return True
    names = _NAMES_CACHE.setdefault(Path(root), _attnlib_names(root))
    code_like = set(re.findall(r"`([^`]+)`", reference))
    code_like |= set(re.findall(r"\b[A-Za-z_][\w.]*(?:_[\w.]*|\.\w+)\b", reference))
    for token in code_like:
        for part in re.findall(r"[A-Za-z_]\w*", token):
            if part in names:
                return True
    return False


def is_circular(reference: str, root: Path = ROOT) -> bool:
    """A reference naming only attnlib that does not say it is a consistency check."""
    ref = reference.strip()
    if ref.lower().startswith(CONSISTENCY):
        return False
    if not names_attnlib(ref, root):
        return False
    return not any(re.search(p, ref, re.I) for p in INDEPENDENT)


def schema_problems(c: Claim) -> list[str]:
    """What is wrong with a claim's ``kind``, ``seeds`` and ``control`` where present.

    Absent fields are not problems here (the build shows "not yet classified"); the
    test of the schema requires them.
    """
    meta = c.extra.get("metadata", {})
    found = []
    if "kind" in meta and meta["kind"] not in KINDS:
        found.append(f"kind must be one of {', '.join(KINDS)}, got {meta['kind']!r}")
    if "seeds" in meta:
        seeds = meta["seeds"]
        ok = isinstance(seeds, list) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in seeds
        )
        if not ok:
            found.append(f"seeds must be a list of integers, got {seeds!r}")
        elif len(set(seeds)) < MIN_SEEDS:
            found.append(
                f"seeds must hold at least {MIN_SEEDS} distinct integers, got {seeds}"
            )
        if meta.get("kind") not in (None, "experiment"):
            found.append(f"seeds belong to an experiment, not to a {meta['kind']}")
    elif meta.get("kind") == "experiment":
        found.append(f"an experiment lists its seeds (at least {MIN_SEEDS})")
    if "control" in meta and not (
        isinstance(meta["control"], str) and meta["control"].strip()
    ):
        found.append(f"control must be one line of text, got {meta['control']!r}")
    return found


def claim_problems(nb: dict, path: Path | str = "", root: Path = ROOT) -> list[str]:
    """What is wrong with the claim cells of a notebook (empty list: nothing)."""
    name = Path(path).name
    found = []
    for c in claims(nb, path):
        where = f"{name} cell {c.index} (id {c.cell_id})"
        if c.extra["cell_type"] != "code":
            found.append(f"{where}: a claim must be a code cell")
            continue
        if not c.tagged:
            found.append(f"{where}: has claim metadata but no `claim` tag")
        if not c.has_metadata:
            found.append(f"{where}: tagged `claim` but has no `claim` metadata")
        for key in REQUIRED_FIELDS:
            if not getattr(c, key):
                found.append(f"{where}: the claim has no {key}")
        if not has_assert(c.code):
            found.append(f"{where}: the claim cell has no assert")
        if c.reference and is_circular(c.reference, root):
            found.append(
                f"{where}: the reference {c.reference!r} names only attnlib: give an "
                f"independent one or start it with {CONSISTENCY!r}"
            )
        if c.erratum and assertion_count(c.code) < 2:
            found.append(
                f"{where}: an erratum asserts both sides "
                "(the paper's formula fails, ours holds): "
                "two asserts, or `assert a and b`"
            )
    return found


# ------------------------------------------------------------------- prose numbers
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?:[eE][-+]?\d+)?(?![\w]|\.\d)")
_REFERENCE_WORDS = (
    r"(?:§\s*|(?:Sections?|Sec\.|Eqs?\.|Equations?|Tables?|Figures?|Figs?\.|"
    r"Propositions?|"
    r"Props?\.|Theorems?|Lemmas?|Definitions?|Algorithms?|Appendix|Chapters?|Corollary|"
    r"Remarks?|Examples?)\s*\(?)"
)
_REFERENCE_NUMBER = re.compile(_REFERENCE_WORDS + r"\d+(?:\.\d+)+\)?", re.I)


def prose_text(markdown: str) -> str:
    """The text of a markdown cell that the number audit reads.

    Left out: display and inline math (``$$..$$``, ``$..$``, amsmath environments), code
    (fenced blocks and backticks, hence every role such as ``{glue:text}`..` `` or
    ``{cite}`..` ``), link targets ``](..)`` and ``<..>``, HTML tags, directive fences
    and their ``:option:`` lines, target labels ``(label)=`` and equation labels
    ``$$ (label)``, and numbered references (``§5.2``, ``Eq. (3.1)``, ``Table 2.1``).
    """
    text = markdown
    text = re.sub(r"^(```+|~~~+).*?^\1[ \t]*$", " ", text, flags=re.S | re.M)
    text = re.sub(r"\$\$.*?\$\$(\s*\([^)\n]*\))?", " ", text, flags=re.S)
    text = re.sub(r"\\begin\{(\w+\*?)\}.*?\\end\{\1\}", " ", text, flags=re.S)
    text = re.sub(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", " ", text)
    text = re.sub(r"`+[^`]*`+", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"<[^>\n]+>", " ", text)
    text = re.sub(r"^\s*(:::+|```+)\s*\{[^}]*\}.*$", " ", text, flags=re.M)
    text = re.sub(r"^\s*:[\w-]+:.*$", " ", text, flags=re.M)
    text = re.sub(r"^\s*\([\w:.-]+\)=\s*$", " ", text, flags=re.M)
    text = _REFERENCE_NUMBER.sub(" ", text)
    return text


def prose_numbers(markdown: str) -> list[str]:
    """The decimal numbers typed in a markdown cell (see :func:`prose_text`)."""
    return DECIMAL.findall(prose_text(markdown))


GLUE_ROLE = re.compile(r"\{glue(?::\w*)?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"^\s*(?:```+|:::+)\s*\{glue(?::\w+)?\}\s+(\S+)", re.M)


def glue_uses(markdown: str) -> list[str]:
    """The glue names a markdown cell reads (roles, ``{glue:figure}`` directives)."""
    names = [m.split(":", 1)[0].strip() for m in GLUE_ROLE.findall(markdown)]
    return names + GLUE_DIRECTIVE.findall(markdown)


def _name_pattern(node: ast.AST, assigned: dict) -> str:
    """A regex for the string an expression builds: literals exact, the rest ``.+``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            _name_pattern(v, assigned) if isinstance(v, ast.Constant) else ".+"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _name_pattern(node.left, assigned) + _name_pattern(node.right, assigned)
    if isinstance(node, ast.Name) and node.id in assigned:
        return _name_pattern(assigned[node.id], {})
    return ".+"


def glued_names(nb: dict) -> list[str]:
    """The names a notebook's code glues, each as a regex (a literal name escaped).

    A name built at run time is followed through f-strings, ``+`` and a variable
    assigned in the same cell (``key = f"ch07b_doc_{n}"; glue(key + "_std", ...)``);
    what it cannot follow becomes ``.+``.
    """
    names = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = _parse(source(cell))
        if tree is None:
            continue
        assigned = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                assigned[node.targets[0].id] = node.value
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else getattr(func, "id", "")
            )
            if name == "glue":
                names.append(_name_pattern(node.args[0], assigned))
    return names


def _is_glued(name: str, glued: list[str]) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in glued)


def number_problems(nb: dict, path: Path | str = "") -> list[str]:
    """Typed decimal numbers in prose that are neither asserted in code nor quoted."""
    name = Path(path).name
    asserted: set[str] = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            asserted |= assert_literals(source(cell))
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        quoted = {str(q) for q in cell.get("metadata", {}).get("quoted", [])}
        for number in prose_numbers(source(cell)):
            if number not in asserted and number not in quoted:
                found.append(
                    f"{name} cell {i} (id {cell.get('id')}): "
                    f"the number {number} is typed: "
                    "glue it, assert it in a code cell, or list it in metadata.quoted"
                )
    return found


def glue_problems(nb: dict, path: Path | str = "") -> list[str]:
    """Glue names read but glued by no code cell; glued names lacking the prefix."""
    name = Path(path).name
    glued = glued_names(nb)
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for used in glue_uses(source(cell)):
                if not _is_glued(used, glued):
                    found.append(
                        f"{name} cell {i}: `{used}` is read but glued by no code cell"
                    )
    if path:
        prefix = glue_prefix(path)
        for pattern in glued:
            if pattern != ".+" and not pattern.startswith(re.escape(prefix)):
                shown = re.sub(r"\\(.)", r"\1", pattern)
                found.append(
                    f"{name}: the glue name {shown!r} does not start with {prefix!r}"
                )
    return found


# --------------------------------------------------------------------------- exercises
_SOLUTION_START = re.compile(r"^\s*(:::+|```+)\s*\{solution-start\}\s+(\S+)", re.M)
_SOLUTION_END = re.compile(r"^\s*(:::+|```+)\s*\{solution-end\}", re.M)


@dataclass
class Solution:
    label: str
    prose: str  # the markdown between solution-start and solution-end, fences removed
    code: list[str]  # the code cells' sources, in order
    closed: bool = (
        True  # False: another solution-start or the notebook's end came first
    )


def _strip_directives(text: str) -> str:
    text = re.sub(
        r"^\s*(:::+|```+)\s*\{solution-(start|end)\}.*$", "", text, flags=re.M
    )
    text = re.sub(r"^\s*:[\w-]+:.*$", "", text, flags=re.M)
    text = re.sub(r"^\s*(:::+|```+)\s*$", "", text, flags=re.M)
    return text.strip()


def solutions(nb: dict) -> list[Solution]:
    """Every exercise solution, from ``{solution-start}`` to ``{solution-end}``."""
    found, current = [], None
    for cell in nb["cells"]:
        text = source(cell)
        if cell["cell_type"] == "markdown":
            start, end = _SOLUTION_START.search(text), _SOLUTION_END.search(text)
            if start:
                if current is not None:
                    current.closed = False
                    found.append(current)
                current = Solution(start.group(2), "", [])
                body = (
                    text[start.start() : end.start()] if end else text[start.start() :]
                )
                current.prose += _strip_directives(body)
                if end:
                    found.append(current)
                    current = None
                continue
            if end and current is None:
                found.append(Solution("(none)", "", [], closed=False))
            elif current is not None:
                if end:
                    current.prose += "\n" + _strip_directives(text[: end.start()])
                    found.append(current)
                    current = None
                else:
                    current.prose += "\n" + text
        elif current is not None:
            current.code.append(text)
    if current is not None:
        current.closed = False
        found.append(current)
    return found


def _only_glue(code: str) -> bool:
    """Whether a cell only glues results for the prose (``glue(...)`` calls and the
    assignments that feed them)."""
    tree = _parse(code)
    if not tree or not tree.body:
        return False
    glues = 0
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            continue
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        func = getattr(call, "func", None)
        if not isinstance(call, ast.Call) or "glue" not in {
            getattr(func, "id", ""),
            getattr(func, "attr", ""),
        }:
            return False
        glues += 1
    return glues > 0


def solution_problems(nb: dict, path: Path | str = "") -> list[str]:
    """Solutions that state no answer in words or whose code does not end asserting it.

    The code ends with an assert when its last cell asserts; a last cell that only glues
    results for the answer's prose is not counted as the end.
    """
    name = Path(path).name
    found = []
    for sol in solutions(nb):
        if not sol.closed:
            found.append(
                f"{name} {sol.label}: solution-start and solution-end do not pair up"
            )
            continue
        if len(re.findall(r"[A-Za-z]{2,}", sol.prose)) < 3:
            found.append(f"{name} {sol.label}: the solution states no answer in words")
        code = [c for c in sol.code if not _only_glue(c)]
        if not code:
            found.append(f"{name} {sol.label}: the solution has no code")
        elif not has_assert(code[-1]):
            found.append(
                f"{name} {sol.label}: the solution's last code cell asserts nothing"
            )
    return found


# --------------------------------------------------------------------------- page rules
def long_lines(nb: dict, path: Path | str = "", limit: int = MAX_LINE) -> list[str]:
    """Code lines longer than ``limit`` characters."""
    name = Path(path).name
    return [
        f"{name} cell {i} line {k}: {len(line)} characters"
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        for k, line in enumerate(source(cell).splitlines(), 1)
        if len(line) > limit
    ]


_DEPARTURES = re.compile(
    r"^(:::+|```+)\{admonition\}[ \t]*" + DEPARTURES_TITLE + r"[ \t]*\n"
    r"((?:[ \t]*:[\w-]+:[^\n]*\n)*)(.*?)^\1[ \t]*$",
    re.M | re.S,
)


def departures_boxes(nb: dict) -> list[str]:
    """The bodies of the departures boxes (admonitions of class ``departures``)."""
    bodies = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for m in _DEPARTURES.finditer(source(cell) + "\n"):
            if re.search(r":class:.*\b" + DEPARTURES_CLASS + r"\b", m.group(2)):
                bodies.append(m.group(3))
    return bodies


def departures_problems(nb: dict, path: Path | str = "") -> list[str]:
    """A chapter has exactly one departures box, listing at least one departure."""
    name = Path(path).name
    boxes = departures_boxes(nb)
    if len(boxes) != 1:
        return [f"{name}: {len(boxes)} departures boxes (one expected)"]
    if not re.search(r"^\s*[-*] \*\*.+?\*\*", boxes[0], re.M):
        return [f"{name}: the departures box lists no `- **what**: why` item"]
    return []


def all_claims(root: Path = ROOT) -> list[Claim]:
    """Every claim of the book, chapter by chapter."""
    return [c for p in chapter_notebooks(root) for c in claims(load(p), p)]


# ------------------------------------------------ which claims read committed sweeps
# A claim that reads a committed sweep (``attnlib.results.load``) is not re-run by a
# chapter executed at another offset: the same file is read again. The ledger finds
# those claims by following, cell by cell, every name that a loaded result flows into.
def _loaded_results(node: ast.AST) -> set[str]:
    """The results ``node`` loads by name: ``results.load("mux")``, ``load("mux")``."""
    found = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not call.args:
            continue
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = getattr(func, "value", None)
        owner = getattr(owner, "attr", getattr(owner, "id", "results"))
        arg = call.args[0]
        if (
            name == "load"
            and owner == "results"
            and isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
        ):
            found.add(arg.value)
    return found


def _stored_names(node: ast.AST) -> set[str]:
    """The names a statement binds or changes: assignments (to a name, or to an item
    or attribute of one), loop and ``with`` targets, definitions, imports, and, in a
    statement that is one method call, its object (``rows.append(x)`` changes
    ``rows``; a module so called is left out by :func:`sweep_reads`)."""
    found = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        found.add(node.name)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            found.add(sub.id)
        elif isinstance(sub, (ast.Subscript, ast.Attribute)) and isinstance(
            sub.ctx, ast.Store
        ):
            base = sub
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                found.add(base.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in sub.names}
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(sub.name)
    call = node.value if isinstance(node, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        if isinstance(call.func.value, ast.Name):  # a statement that is a method call
            found.add(call.func.value.id)
    return found


def _read_names(node: ast.AST) -> set[str]:
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }


def sweep_reads(nb: dict, path: Path | str = "") -> dict[str, set[str]]:
    """``{cell id: committed results it reads}`` for each claim of a chapter.

    A result read is one loaded by name (``results.load("symmetry.unseen")``) in the
    cell, or one that flowed into a name the cell reads, through any earlier statement
    (an assignment, a call that changes its object, a function that reads it). The
    flow is followed conservatively: a name once derived from a result stays so.
    """
    derived: dict[str, set[str]] = {}
    modules: set[str] = set()  # imported names: a call on one changes no result
    by_index: dict[int, set[str]] = {}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        tree = _parse(source(cell))
        if tree is None:
            continue
        read: set[str] = set()
        for stmt in tree.body:
            flows = _loaded_results(stmt)
            for name in _read_names(stmt):
                flows |= derived.get(name, set())
            read |= flows
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                modules |= _stored_names(stmt)
            elif flows:
                for name in _stored_names(stmt) - modules:
                    derived.setdefault(name, set()).update(flows)
        by_index[i] = read
    return {c.cell_id: by_index.get(c.index, set()) for c in claims(nb, path)}


# ------------------------------------------------------------ calibration of claims
# tools/calibrate.py runs claims at offsets nobody chose (each claim's own computation
# where it is cheap, the chapter otherwise) and adds each run to this record; the
# audits of tools/unseen.py count too. From both, each claim's calibration: at how many
# fresh offsets it was tried, how often it failed, and the one-sided 95 % upper bound
# on its false-alarm rate (Clopper-Pearson).
CALIBRATION_RECORD = ROOT / "book" / "calibration.json"
#: Offsets below this are the authors' (writing and tuning a claim); never counted.
UNSEEN_FLOOR = 10_000
CONFIDENCE = 0.95


def load_calibration(path: Path = CALIBRATION_RECORD) -> dict:
    """The calibration runs so far (``{"runs": [...]}``; empty when there is none)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {"runs": []}


def upper_bound(failures: int, tried: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound on a failure rate seen ``failures`` times
    in ``tried`` independent trials (``1 - (1 - confidence) ** (1 / tried)`` at zero
    failures, about ``3 / tried``: the rule of three); 1 when nothing was tried."""
    from scipy.stats import beta

    if tried <= 0:
        return 1.0
    if failures >= tried:
        return 1.0
    return float(beta.ppf(confidence, failures + 1, tried - failures))


@dataclass
class Calibration:
    """One claim's calibration, as the ledger shows it.

    ``mode``: ``live`` (its computation re-runs at each offset), ``rerun`` (it reads a
    committed sweep, and counts only the runs in which that sweep was re-run at the
    run's offset), ``reread`` (it reads a committed sweep that no run re-ran: no
    offset counts) or ``offset-free`` (its values were identical at two offsets: the
    offset does not reach it, and there is no false-alarm rate to count).
    """

    mode: str
    tried: int = 0  # distinct fresh offsets (at least UNSEEN_FLOOR) it was run at
    failures: int = 0
    reread: int = 0  # runs at fresh offsets that only re-read a committed file
    sweeps: tuple = ()  # the committed results it reads

    @property
    def bound(self) -> float:
        return upper_bound(self.failures, self.tried)


def rerun_sweeps(run: dict, offset: int | str) -> set[str]:
    """The committed results a run (an audit, a calibration run) re-ran in full at
    ``offset``: its ``sweeps``, ``{name: {"quick": bool, "offsets": [...]}}``. A quick
    re-run (a smoke run at tiny sizes, not the sweep a claim is about) is left out."""
    return {
        name
        for name, rerun in run.get("sweeps", {}).items()
        if not rerun.get("quick") and int(offset) in rerun.get("offsets", [])
    }


def _trials(c: Claim, notebook: str, record: dict, audits: dict):
    """(offset, outcome, sweeps re-run there, fingerprint) of every run of claim ``c``
    as it is now: the calibration runs, then the unseen-seed audits."""
    key = claim_key(c)
    for run in record["runs"]:
        entry = run["claims"].get(f"{notebook}#{c.cell_id}")
        if not entry or entry["key"] != key:
            continue
        for k, outcome in entry["offsets"].items():
            fingerprint = entry.get("fingerprints", {}).get(k)
            yield int(k), outcome, rerun_sweeps(run, k), fingerprint
    for audit in audits["audits"]:
        for k, chapter_run in audit["chapters"].get(notebook, {}).items():
            o = chapter_run["claims"].get(c.cell_id)
            if o and o["key"] == key:
                yield int(k), o["outcome"], rerun_sweeps(audit, k), None


def calibration(
    nb: dict,
    path: Path | str,
    record: dict | None = None,
    audits: dict | None = None,
) -> dict[str, Calibration]:
    """``{cell id: Calibration}`` for each claim of a chapter.

    Counted: each distinct offset of at least ``UNSEEN_FLOOR`` at which the claim ran
    as it is now (its code, statement and seeds: :func:`claim_key`), failed if it
    failed there in any run. A claim that reads a committed sweep counts an offset only
    where a run re-ran one of the sweeps it reads at that offset; its other runs are
    counted apart, as re-reads. A claim whose values (``fingerprints``) were identical
    at two fresh offsets is offset-free.
    """
    record = load_calibration() if record is None else record
    audits = load_unseen_record() if audits is None else audits
    notebook = Path(path).name
    reads = sweep_reads(nb, path)
    found = {}
    for c in claims(nb, path):
        sweeps = tuple(sorted(reads.get(c.cell_id, ())))
        outcomes: dict[int, bool] = {}
        rereads: set[int] = set()
        prints: dict[int, str] = {}
        for k, outcome, reran, fingerprint in _trials(c, notebook, record, audits):
            if k < UNSEEN_FLOOR or outcome == "not run":
                continue
            if sweeps and not reran & set(sweeps):
                rereads.add(k)
                continue
            outcomes[k] = outcomes.get(k, True) and outcome == "held"
            if fingerprint:
                prints[k] = fingerprint
        failures = sum(not held for held in outcomes.values())
        if len(prints) >= 2 and len(set(prints.values())) == 1 and not failures:
            mode = "offset-free"
        elif sweeps:
            mode = "rerun" if outcomes else "reread"
        else:
            mode = "live"
        found[c.cell_id] = Calibration(
            mode, len(outcomes), failures, len(rereads - set(outcomes)), sweeps
        )
    return found


def calibration_text(cal: Calibration) -> str:
    """A claim's calibration in words, as the ledger and the callouts show it."""
    files = ", ".join(cal.sweeps)
    if cal.mode == "offset-free":
        return "offset-free (identical values at two fresh offsets)"
    if cal.mode == "reread":
        text = f"re-reads the committed results {files}: not calibrated"
        if cal.reread:
            text += f" (re-read at {cal.reread} fresh offsets, not counted)"
        return text
    if not cal.tried:
        return "not yet calibrated"
    where = (
        f"on sweeps ({files}) re-run at {cal.tried} fresh offsets"
        if cal.mode == "rerun"
        else f"live at {cal.tried} fresh offsets"
    )
    return (
        f"checked {where}: {cal.failures} failed; false-alarm rate "
        f"≤ {cal.bound:.3f} (95 %)"
    )
