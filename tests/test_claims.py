"""The book keeps its promises: claims are checked, numbers in prose come from results.

Fast (nothing is executed): the notebooks are read as JSON through
``book/_ext/claims_lib``, the module the Sphinx extension that builds the claims
ledger and the errata page reads them with, so the rules exist once. Each rule is run
over every chapter, and shown to fail and to pass on small notebooks written here (a
planted circular claim and a planted drift among them, also planted in copies of a
real chapter).
"""

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import claims_lib as L  # noqa: E402

NOTEBOOKS = L.chapter_notebooks()
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
by_name = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)


# ----------------------------------------------------------------- synthetic notebooks
def md(text, **meta):
    return {
        "cell_type": "markdown",
        "id": f"m{abs(hash(text)) % 10**8}",
        "metadata": meta,
        "source": text,
    }


def code(text, tags=(), **meta):
    meta = {**meta, **({"tags": list(tags)} if tags else {})}
    return {
        "cell_type": "code",
        "id": f"c{abs(hash(text)) % 10**8}",
        "metadata": meta,
        "source": text,
        "outputs": [],
        "execution_count": None,
    }


GOOD_CLAIM = {
    "statement": "Softmax rows sum to one",
    "source": "seed 000, Eq. (2)",
    "reference": "a NumPy restatement written in this cell",
    "tolerance": "atol 1e-12",
}


def claim(text="np.testing.assert_allclose(w.sum(1), 1.0)", **fields):
    data = {**GOOD_CLAIM, **fields}
    data = {k: v for k, v in data.items() if v is not None}
    return code(text, tags=["claim"], claim=data)


def notebook(*cells):
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return {
        "cells": list(cells),
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": kernel, "language_info": {"name": "python"}},
    }


def write(path: Path, nb: dict) -> Path:
    path.write_text(json.dumps(nb, indent=1) + "\n")
    return path


# ----------------------------------------------------------------- claims
@by_name
def test_claim_cells_are_complete_and_not_circular(path):
    assert L.claim_problems(L.load(path), path) == []


@by_name
def test_every_chapter_checks_claims(path):
    assert L.claims(L.load(path), path), f"{path.name} has no cell tagged `claim`"


def test_claim_cells_ids_are_unique_in_each_chapter():
    for path in NOTEBOOKS:
        ids = [c.cell_id for c in L.claims(L.load(path), path)]
        assert len(ids) == len(set(ids)), path.name


def test_a_complete_claim_passes():
    assert L.claim_problems(notebook(claim())) == []
    assert L.claim_problems(notebook(claim("torch.testing.assert_close(a, b)"))) == []
    assert L.claim_problems(notebook(claim("assert abs(x - 1) < 1e-9"))) == []


@pytest.mark.parametrize(
    "cell, problem",
    [
        (claim("x = 1  # assert x == 1"), "no assert"),
        (claim("print('assert that it holds')"), "no assert"),
        (claim(statement=""), "no statement"),
        (claim(statement=None), "no statement"),
        (claim(source="  "), "no source"),
        (claim(reference=None), "no reference"),
        (claim(tolerance=None), "no tolerance"),
        (code("assert True", tags=["claim"]), "no `claim` metadata"),
        (code("assert True", claim=GOOD_CLAIM), "no `claim` tag"),
        ({**md("text", tags=["claim"], claim=GOOD_CLAIM)}, "must be a code cell"),
    ],
    ids=[
        "assert-in-comment",
        "assert-in-string",
        "empty-statement",
        "no-statement",
        "blank-source",
        "no-reference",
        "no-tolerance",
        "tag-only",
        "metadata-only",
        "markdown",
    ],
)
def test_an_incomplete_claim_fails(cell, problem):
    found = L.claim_problems(notebook(cell))
    assert any(problem in p for p in found), found


CIRCULAR = [
    "attnlib.attention",
    "attnlib's pixel_nlm",
    "`pixel_nlm`",
    "pixel_nlm(image) with the same patches",
    "attnlib.subspace's default LRSC solver",
    "the committed sweep attnlib/results/symmetry.json (benchmarks/symmetry.py)",
]
INDEPENDENT = [
    "scikit-image's denoise_nl_means (slow mode)",
    "sklearn.linear_model.Lasso",
    "the entmax package's entmax15",
    "scipy.integrate.quad",
    "a NumPy restatement written in this cell",
    "finite differences of attnlib.continuous_attention_1d",
    "the closed form of Eq. (12)",
    "consistency check: attnlib.attention against attnlib.pixel_nlm",
    "torch.nn.functional.scaled_dot_product_attention",
    "measured CPU time of the bare read-out softmax(qKᵀ)V on the same tokens",
    "the committed sweep attnlib/results/symmetry.json; the mean baseline",
]


@pytest.mark.parametrize("reference", CIRCULAR)
def test_a_reference_naming_only_attnlib_is_circular(reference):
    assert L.is_circular(reference)
    found = L.claim_problems(notebook(claim(reference=reference)))
    assert any("names only attnlib" in p for p in found), found


@pytest.mark.parametrize("reference", INDEPENDENT)
def test_an_independent_reference_or_a_labelled_consistency_check_passes(reference):
    assert not L.is_circular(reference)
    assert L.claim_problems(notebook(claim(reference=reference))) == []


def test_consistency_checks_are_counted():
    nb = notebook(claim(), claim(reference="Consistency check: attnlib against itself"))
    assert [c.is_consistency_check for c in L.claims(nb)] == [False, True]


def test_a_planted_circular_claim_in_a_copy_of_a_chapter_is_caught(tmp_path):
    """Chapter 03's old check (attention against pixel_nlm, which calls attention)."""
    path = NOTEBOOKS[2] if len(NOTEBOOKS) > 2 else NOTEBOOKS[0]
    nb = L.load(path)
    before = set(L.claim_problems(nb, path))
    planted = claim(
        "np.testing.assert_allclose(attention(q, k, v)[0], pixel_nlm(img))",
        statement="The pixel NLM is attention",
        reference="attnlib.denoise.pixel_nlm",
    )
    nb["cells"].append(planted)
    copy_path = write(tmp_path / path.name, nb)
    new = set(L.claim_problems(L.load(copy_path), copy_path)) - before
    assert len(new) == 1 and "names only attnlib" in new.pop()
    planted["metadata"]["claim"]["reference"] = (
        "consistency check: " + "attnlib.pixel_nlm"
    )
    write(copy_path, nb)
    assert set(L.claim_problems(L.load(copy_path), copy_path)) - before == set()


def test_an_erratum_asserts_both_sides():
    one = claim("assert not np.allclose(paper, truth)", erratum="Eq. 8 drops a term")
    two = claim(
        "assert not np.allclose(paper, truth)\nnp.testing.assert_allclose(ours, truth)",
        erratum="Eq. 8 drops a term",
    )
    both = claim(
        "assert not np.allclose(paper, truth) and np.allclose(ours, truth)",
        erratum="Eq. 8 drops a term",
    )
    assert any("two asserts" in p for p in L.claim_problems(notebook(one)))
    assert L.claim_problems(notebook(two)) == []
    assert L.claim_problems(notebook(both)) == []


# ----------------------------------------------------------------- numbers in prose
@by_name
def test_prose_numbers_are_glued_asserted_or_quoted(path):
    assert L.number_problems(L.load(path), path) == []


@by_name
def test_glued_names_exist_and_carry_the_chapter_prefix(path):
    assert L.glue_problems(L.load(path), path) == []


def test_glue_names_are_unique_across_the_book():
    names = [
        n for p in NOTEBOOKS for n in set(L.glued_names(L.load(p))) if ".+" not in n
    ]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


GLUED = code('acc = 0.72\nglue("ch99_acc", acc, display=False)')


def test_a_glued_number_passes_and_a_planted_drift_is_caught():
    glued = notebook(GLUED, md("Accuracy {glue:text}`ch99_acc:.2f` on the test set."))
    assert L.number_problems(glued) == [] and L.glue_problems(glued) == []
    # the result is 0.72
    drifted = notebook(GLUED, md("Accuracy 0.92 on the test set."))
    found = L.number_problems(drifted)
    assert len(found) == 1 and "0.92" in found[0]


def test_a_typed_number_passes_only_when_asserted_or_quoted():
    typed = md("Accuracy 0.72 on the test set; the paper reports 90.68 %.")
    assert len(L.number_problems(notebook(GLUED, typed))) == 2
    asserted = code('assert f"{acc:.2f}" == "0.72"\nassert abs(acc - 0.72) < 1e-9')
    assert [
        p for p in L.number_problems(notebook(asserted, typed)) if "0.72" in p
    ] == []
    quoted = {**typed, "metadata": {"quoted": ["90.68"]}}
    assert L.number_problems(notebook(asserted, quoted)) == []
    # a literal in a comment or in a print is no assert
    printed = code('print("0.72")  # 0.72\nassert acc > 0.5')
    assert any("0.72" in p for p in L.number_problems(notebook(printed, typed)))


def test_a_planted_drift_in_a_copy_of_a_chapter_is_caught(tmp_path):
    path = NOTEBOOKS[-1]
    nb = L.load(path)
    prefix = L.glue_prefix(path)
    before = set(L.number_problems(nb, path))
    nb["cells"] += [
        code(f'from myst_nb import glue\nglue("{prefix}planted", 0.72, display=False)'),
        md(f"The planted model reaches {{glue:text}}`{prefix}planted:.2f`."),
    ]
    copy_path = write(tmp_path / path.name, nb)
    assert set(L.number_problems(L.load(copy_path), copy_path)) - before == set()
    assert [
        p for p in L.glue_problems(L.load(copy_path), copy_path) if "planted" in p
    ] == []
    nb["cells"][-1]["source"] = "The planted model reaches 0.92."
    write(copy_path, nb)
    new = set(L.number_problems(L.load(copy_path), copy_path)) - before
    assert len(new) == 1 and "0.92" in new.pop()


@pytest.mark.parametrize(
    "markdown, numbers",
    [
        ("plain 0.5 and 12.25, not 3 or 1e-3", ["0.5", "12.25"]),
        ("ranges 0.90–0.92 and (0.1)", ["0.90", "0.92", "0.1"]),
        ("inline $\\lambda = 0.002$ and display $$x = 0.5$$ (eq-1)", []),
        ("$$\n y = 0.25 x\n$$ (eq-07b-rho)\n", []),
        ("\\begin{align} a &= 0.3 \\end{align}", []),
        ("code `lam=0.01` and role {glue:text}`ch01_x:.3f` and {cite}`a2.1`", []),
        ("a [link](https://x.org/v1.2/page) and <https://x.org/2.5>", []),
        ("(sec-0.5)=\n# Title", []),
        ("```python\nx = 0.5\n```\nthen 0.7", ["0.7"]),
        (":::{exercise}\n:label: ex-1.5\ntext 0.25\n:::", ["0.25"]),
        ("seed 000 §5.2, Eq. (3.1), Table 2.1 and Section 4.3 but 4.3 here", ["4.3"]),
        ("version1.2 and x0.5 are names, 1.2.3 is a version", []),
        ("a price of 3.50. Then", ["3.50"]),
        ("a gap of 6.6e-05 after 1e-3 steps", ["6.6e-05"]),
    ],
)
def test_which_numbers_the_audit_reads(markdown, numbers):
    assert L.prose_numbers(markdown) == numbers


def test_a_glue_typo_is_caught():
    nb = notebook(code('glue("ch99_accuracy", 0.7)'), md("{glue:text}`ch99_acc:.2f`"))
    assert any("`ch99_acc`" in p for p in L.glue_problems(nb))
    figure = notebook(
        code('glue("ch99_fig", fig)'), md("```{glue:figure} ch99_figs\n```")
    )
    assert any("ch99_figs" in p for p in L.glue_problems(figure))
    loop = notebook(
        code('for n in (1, 2):\n    glue(f"ch99_acc_{n}", n)'),
        md("{glue:}`ch99_acc_1` and {glue:text}`ch99_acc_2:.1f`"),
    )
    assert L.glue_problems(loop) == []
    built = code(
        'for r in rows:\n    key = f"ch99_doc_{r}"\n    glue(key, 1)\n'
        '    glue(key + "_std", 2)\nmyst_nb.glue("ch99_" + "sum", 3)'
    )
    names = notebook(
        built,
        md(
            "{glue:text}`ch99_doc_a` {glue:text}`ch99_doc_b_std:.1f`"
            " {glue:text}`ch99_sum`"
        ),
    )
    assert L.glue_problems(names) == []
    typo = notebook(built, md("{glue:text}`ch99_docs_a` and {glue:text}`ch99_sums`"))
    assert len(L.glue_problems(typo)) == 2


def test_a_glue_name_without_the_chapter_prefix_is_caught(tmp_path):
    nb = notebook(code('glue("acc", 0.7)'), md("{glue:text}`acc:.2f`"))
    path = write(tmp_path / "05_x.ipynb", nb)
    assert any("'ch05_'" in p for p in L.glue_problems(nb, path))
    nb["cells"][0] = code('glue("ch05_acc", 0.7)')
    nb["cells"][1] = md("{glue:text}`ch05_acc:.2f`")
    assert L.glue_problems(nb, write(path, nb)) == []


# ----------------------------------------------------------------- exercises
@by_name
def test_solutions_state_and_assert_their_answer(path):
    nb = L.load(path)
    assert L.solutions(nb), f"{path.name} has no solutions"
    assert L.solution_problems(nb, path) == []


def _exercise(*body, label="ex-99-1"):
    return [
        md(f":::{{exercise}}\n:label: {label}\nDo it.\n:::"),
        md(f":::{{solution-start}} {label}\n:class: dropdown\n:::"),
        *body,
        md(":::{solution-end}\n:::"),
    ]


def test_solution_rules():
    good = notebook(
        *_exercise(
            md("The weights sum to one: the answer is yes."),
            code("w = f()"),
            code("assert abs(w.sum() - 1) < 1e-9"),
        )
    )
    assert L.solution_problems(good) == []
    inline = notebook(
        md(
            ":::{solution-start} ex-99-2\n:class: dropdown\n:::\n"
            "It converges in 3 steps."
        ),
        code("assert steps == 3"),
        md(":::{solution-end}\n:::"),
    )
    assert L.solution_problems(inline) == []
    silent = notebook(*_exercise(code("assert w.sum() == 1")))
    assert any("no answer in words" in p for p in L.solution_problems(silent))
    unasserted = notebook(
        *_exercise(md("It is yes, clearly so."), code("assert x"), code("plt.plot(x)"))
    )
    assert any("asserts nothing" in p for p in L.solution_problems(unasserted))
    glued = notebook(
        *_exercise(
            md("It is {glue:text}`ch99_x`, clearly so."),
            code("x = f()\nassert x > 0"),
            code('y = float(x)\nglue("ch99_x", y, display=False)'),
        )
    )
    assert L.solution_problems(glued) == []
    computed = notebook(
        *_exercise(
            md("It is {glue:text}`ch99_x`, clearly so."),
            code("x = f()\nassert x > 0"),
            code('y = g(x)\nplt.plot(y)\nglue("ch99_x", y)'),
        )
    )
    assert any("asserts nothing" in p for p in L.solution_problems(computed))
    answer = [md("It is yes, clearly so."), code("assert x")]
    unclosed = notebook(*_exercise(*answer)[:-1], *_exercise(*answer, label="ex-99-3"))
    assert any("do not pair up" in p for p in L.solution_problems(unclosed))
    stray = notebook(*_exercise(*answer), md(":::{solution-end}\n:::"))
    assert any("do not pair up" in p for p in L.solution_problems(stray))
    assert L.solution_problems(notebook(*_exercise(*answer))) == []
    no_code = notebook(*_exercise(md("It is yes, clearly so.")))
    assert any("no code" in p for p in L.solution_problems(no_code))


# ----------------------------------------------------------------- the page
@by_name
def test_code_lines_fit_the_page(path):
    assert L.long_lines(L.load(path), path) == []


def test_the_stamped_setup_cell_fits_the_page():
    sys.path.insert(0, str(ROOT / "book"))
    import notebook_tools

    assert L.long_lines(notebook(code(notebook_tools.setup_cell_source()))) == []


def test_long_lines_are_caught():
    assert L.long_lines(notebook(code("x" * 88))) == []
    assert (
        len(L.long_lines(notebook(code("x" * 89 + "\n" + "y" * 90), md("z" * 200))))
        == 2
    )


@by_name
def test_chapter_has_the_departures_box(path):
    assert L.departures_problems(L.load(path), path) == []


BOX = ":::{admonition} Where we depart from the paper\n:class: departures\n%s:::\n"


@pytest.mark.parametrize(
    "cells, ok",
    [
        ([md(BOX % "- **Notation**: tokens are rows, as in chapter 01.\n")], True),
        ([md("Text.\n\n" + BOX % "* **Scaling**: the ½ in the objective.\n")], True),
        ([md(BOX.replace(":class: departures\n", "") % "- **X**: y\n")], False),
        ([md(BOX.replace("departures", "note") % "- **X**: y\n")], False),
        ([md(BOX % "Nothing listed.\n")], False),
        ([md(BOX % "- **X**: y\n"), md(BOX % "- **Z**: w\n")], False),
        ([md("## Where we depart from the paper\n- **X**: y")], False),
        ([md(BOX.replace("paper", "source") % "- **X**: y\n")], True),
        ([md(BOX.replace("the paper", "it") % "- **X**: y\n")], False),
    ],
    ids=[
        "box",
        "star-list",
        "no-class",
        "other-class",
        "empty",
        "two-boxes",
        "heading",
        "the-source",
        "other-title",
    ],
)
def test_departures_rule(cells, ok):
    assert (L.departures_problems(notebook(*cells)) == []) is ok


# ----------------------------------------------------------------- the appendix pages
def test_ledger_and_errata_pages_are_in_the_toc_after_the_benchmarks():
    files = [ch["file"] for part in TOC["parts"] for ch in part["chapters"]]
    at = files.index("book/benchmarks")
    assert files[at + 1 : at + 3] == ["book/claims", "book/errata"]
    assert "```{claims-ledger}" in (ROOT / "book" / "claims.md").read_text()
    assert "```{errata-list}" in (ROOT / "book" / "errata.md").read_text()
    assert CONFIG["sphinx"]["local_extensions"].get("claims") == "book/_ext"
    preface = (ROOT / "book" / "index.md").read_text()
    assert "{claims-count}`total`" in preface, "the preface states the count of claims"
    assert not re.search(r"\b\d+ (checked )?claims\b", preface), "typed, not built"


def errata(root=ROOT):
    return [c for c in L.all_claims(root) if c.erratum]


def test_the_errata_page_lists_at_least_four_errata():
    assert len(errata()) >= 4, [c.erratum for c in errata()]


def test_errata_are_counted_from_the_metadata(tmp_path):
    (tmp_path / "book").mkdir()
    bad = "assert not ok_paper\nassert ok_ours"
    write(
        tmp_path / "book" / "01_a.ipynb",
        notebook(*[claim(bad, erratum=f"error {i}") for i in range(3)], claim()),
    )
    assert len(errata(tmp_path)) == 3
    write(tmp_path / "book" / "02_b.ipynb", notebook(claim(bad, erratum="one more")))
    assert len(errata(tmp_path)) == 4


# ----------------------------------------------------------------- the extension
def test_the_extension_builds_ledger_errata_anchors_and_count(tmp_path):
    """A two-chapter book (not executed), built with warnings as errors."""
    book = tmp_path / "book"
    shutil.copytree(ROOT / "book" / "_ext", book / "_ext")
    shutil.copy(ROOT / "book" / "claims.md", book / "claims.md")
    shutil.copy(ROOT / "book" / "errata.md", book / "errata.md")
    (book / "index.md").write_text(
        "# Demo\n\n{claims-count}`total` claims, "
        "{claims-count}`consistency` consistency "
        "checks, {claims-count}`errata` errata, {claims-count}`chapters` chapters.\n"
    )
    err = claim(
        "assert not a\nassert b",
        statement="Eq. 8 is wrong, $x^2$",
        # the book's equation beside the paper's, bare and inside other parentheses
        source="seed 000, Eq. (8), our eq-01-x (the formula; eq-01-x)",
        erratum="Eq. 8 writes $x^2$; it is $x$",
    )
    cons = claim(reference="consistency check: attnlib against itself")
    equation = md("$$\nx = 1\n$$ (eq-01-x)")
    nb1 = notebook(md("# 01 · First"), claim(), err, cons, equation)
    typeset = r"W_V \in \mathbb{R}^{d_v \times d}"
    nb2 = notebook(md("# 02 · Second"), claim(statement=f"the map ${typeset}$ fits"))
    for i, cell in enumerate(nb1["cells"] + nb2["cells"]):
        cell["id"] = f"cell{i}"
    write(book / "01_first.ipynb", nb1)
    write(book / "02_second.ipynb", nb2)
    config = copy.deepcopy(
        {k: CONFIG[k] for k in ("title", "only_build_toc_files", "parse")}
    )
    config["execute"] = {"execute_notebooks": "off"}
    config["sphinx"] = {
        "local_extensions": {"claims": "book/_ext", "chapter_numbers": "book/_ext"},
        "config": {"math_numfig": True, "numfig": True},
    }
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    toc = {
        "format": "jb-book",
        "root": "book/index",
        "chapters": [
            {"file": f"book/{n}"} for n in ("01_first", "02_second", "claims", "errata")
        ],
    }
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc))
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    build = subprocess.run(
        [str(jupyter_book), "build", str(tmp_path), "-n", "-W", "--keep-going"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    html = tmp_path / "_build" / "html" / "book"
    chapter = (html / "01_first.html").read_text()
    assert all(f'id="claim-cell{i}"' in chapter for i in (1, 2, 3))
    ledger = (html / "claims.html").read_text()
    for i in (1, 2, 3):
        assert f'href="01_first.html#claim-cell{i}"' in ledger
    assert 'href="02_second.html#claim-cell6"' in ledger
    assert 'href="errata.html#erratum-01-cell2"' in ledger
    assert re.search(
        r"<strong>4 claims</strong> in 2 chapters; 1 consistency check", ledger
    )
    errata_page = (html / "errata.html").read_text()
    assert 'id="erratum-01-cell2"' in errata_page
    assert 'href="01_first.html#claim-cell2"' in errata_page
    # the book's equation as a numbered link, the enclosing parenthesis kept
    link = r'<a class="reference internal" href="(?:01_first.html)?#equation-eq-01-x">'
    shown = rf"our {link}\(1\.1\)</a> \(the formula; {link}\(1\.1\)</a>\)"
    assert re.search(shown, ledger) and re.search(shown, errata_page)
    assert re.search(shown, chapter)  # the callout
    counts = re.findall(
        r'<span class="claims-count">(\d+)</span>', (html / "index.html").read_text()
    )
    assert counts == ["4", "1", "1", "2"]
    # each claim cell shows a callout, linked to its row of the ledger and back
    assert chapter.count('class="claim-callout') == 3
    assert 'href="claims.html#ledger-01-cell1"' in chapter
    assert 'id="ledger-01-cell1"' in ledger and "<p>kind</p>" in ledger
    assert "held when this page was built" in chapter
    # the metadata's $...$ maths reaches the ledger, the errata and the callout as maths
    maths = r'<span class="math notranslate nohighlight">\({}\)</span>'
    assert maths.format(typeset) in ledger
    assert maths.format(typeset) in (html / "02_second.html").read_text()
    assert maths.format("x^2") in errata_page and maths.format("x^2") in chapter
    # and the pages load MathJax to typeset it (Sphinx adds it only to pages with maths)
    for page in (ledger, errata_page):
        assert re.search(r"<script[^>]*mathjax[^>]*>", page, re.I)


def test_kind_seeds_and_control_are_validated_where_present():
    def problems(**extra):
        nb = notebook(claim())
        nb["cells"][0]["metadata"]["claim"].update(extra)
        return L.schema_problems(L.claims(nb)[0])

    assert problems() == []  # not yet migrated: shown as such, no problem
    assert problems(kind="identity") == []
    assert problems(kind="experiment", seeds=[0, 1, 2, 3, 4], control="c") == []
    assert "kind must be one of" in problems(kind="proof")[0]
    assert (
        "at least 5 distinct" in problems(kind="experiment", seeds=[1, 1, 2, 3, 4])[0]
    )
    assert "lists its seeds" in problems(kind="experiment")[0]
    assert (
        "belong to an experiment" in problems(kind="identity", seeds=[0, 1, 2, 3, 4])[0]
    )
    assert "control must be" in problems(kind="identity", control=" ")[0]


def test_sources_are_named_by_their_papers():
    assert L.source_key("seed 002, Eq. (8)") == "Martins et al. (2020), Eq. (8)"
    assert L.source_key("seed 000 §3") == (
        "Attention: Self-Expression Is All You Need (2022) §3"
    )
    assert L.source_key("seed 003", cite=True) == "{cite:t}`ma2021symmetry`"
    # a random seed is not a source: "recomputes seed 0" rendered "Anonymous (2022)"
    assert (
        L.source_key("recomputes seed 0; seeds 0-4") == "recomputes seed 0; seeds 0-4"
    )


# ------------------------------------------------ the papers' equations and the book's
# A claim that names a paper's equation names the book's equation beside it, so that the
# ledger, the errata and the callouts read "Eq. (6), our (2.2)" (issue 32). On the
# metadata before issue 32 the check finds 84 problems in 41 claims (37 sources named
# "Eq. (N)" alone, and no source named the book's equation).
def test_paper_equations_are_named_beside_the_books():
    found = [p for c in L.all_claims() for p in L.claim_equation_problems(c)]
    assert found == [], f"{len(found)} problems:\n" + "\n".join(found)


def test_the_books_equations_named_in_claims_and_the_map_exist():
    """Every label in PAPER_EQUATIONS and in the claims' metadata is a displayed,
    labelled equation of some chapter (so that ``{eq}`` resolves to its number)."""
    labels = {label for p in NOTEBOOKS for label in L.equation_labels(L.load(p))}
    mapped = {
        label
        for equations in L.PAPER_EQUATIONS.values()
        for ours in equations.values()
        for label in ours
    }
    named = {
        label
        for c in L.all_claims()
        for key in ("statement", "source", "reference", "tolerance", "erratum")
        for label in L.BOOK_EQ.findall(getattr(c, key))
    }
    assert mapped - labels == set() and named - labels == set()
    assert len(named) >= 30


@pytest.mark.parametrize(
    "text, problems",
    [
        ("seed 000, Eqs. (1)-(2)", 2),  # the old metadata: the paper's numbers alone
        ("seed 000, Eq. (6), our eq-02-gauss", 0),
        ("seed 000, Eq. (6), our eq-02-nw", 1),  # the wrong counterpart
        ("seed 000, Eqs. (16)–(18), our eq-05-sparse-coding", 1),  # 18 unpaired
        ("seed 000, Eqs. (16)–(18), our eq-05-sparse-coding and eq-05-unrolled", 0),
        ("Eq. (15), our eq-05-ista; the ISTA step for Eq. (12) is ...", 1),
        ("seed 002, Eq. (10) (truncated parabola), our eq-07b-parabola", 0),
        ("seed 002, Eq. (99)", 1),  # no counterpart recorded
        ("Eq. (eq-03-nlm) and our (7b.3)", 0),  # the book's equations only
        ("seed 004 (its last formula), our eq-08-selfattn", 0),
    ],
)
def test_the_equation_check_finds_a_paper_equation_alone(text, problems):
    assert len(L.paper_equation_problems(text, "000")) == problems


def test_paper_equation_numbers_are_read_in_every_written_form():
    text = "Eq. (18) (Eq. 14 for α = 1, 2); Eqs. (16)–(18), Eqs. (5), (6), Eqs. 10–13"
    assert L.paper_equation_numbers(text) == [
        [18],
        [14],
        [16, 17, 18],
        [5, 6],
        [10, 11, 12, 13],
    ]
    assert L.paper_equation_numbers("Eq. (8.3), our (7b.3)") == []


def test_source_keys_are_the_bibliographys_author_year_labels():
    """claims_lib.SOURCES names each paper as the bibliography labels it
    (book/_ext/bibstyle.py), "Ma & Ying (2022)" for the entry "Ma & Ying 2022"."""
    import bibstyle
    from pybtex.database import parse_file

    bib = parse_file(str(ROOT / "book" / "references.bib"))
    for key, _, entry in L.SOURCES.values():
        label = bibstyle.AuthorYearLabels._label(bib.entries[entry])
        who, year = label.rsplit(" ", 1)
        assert key == f"{who} ({year})", (key, label)


def test_no_chapter_passes_the_default_display_false_to_glue():
    """attnlib.notebook.glue shows nothing unless asked (issue 28): the argument is
    plumbing on the page."""
    import ast

    found = []
    for path in NOTEBOOKS:
        for i, cell in enumerate(L.load(path)["cells"]):
            if cell["cell_type"] != "code":
                continue
            for node in ast.walk(L._parse(L.source(cell)) or ast.Module(body=[])):
                func = getattr(node, "func", None)
                name = getattr(func, "id", getattr(func, "attr", ""))
                if name == "glue" and any(k.arg == "display" for k in node.keywords):
                    found.append(f"{path.name} cell {i}")
    assert found == [], "\n".join(found)


# --------------------------------------------------- citations used as nouns (issue 32)
# ``{cite}`` prints "(Anonymous, 2022)": used as a noun ("Eq. 6 of {cite}`x`") or inside
# round brackets it gave "(Eq. 6 of (Anonymous, 2022))". A noun takes ``{cite:t}``
# ("Anonymous (2022)"), a citation inside brackets ``{cite:alp}`` ("Anonymous, 2022").
# On main before this check the rule found 30 such places (01 ×5, 02 ×4, 03, 04 ×2,
# 05 ×3, 07a ×6, 07b, closing ×2, index ×4).
_PAREN_CITE = re.compile(r"\{cite(?::p)?\}`[^`]*`")
_NOUN_WORD = re.compile(r"\b(?:of|in|by|see|also|following|from)\s*$", re.I)
_NOT_PROSE = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|``.*?``|`[^`]*`|\]\([^)]*\)", re.S)


def parenthetical_cites_misused(text: str) -> list[str]:
    """The parenthetical citations of ``text`` that stand after of/in/by/see/also/
    following/from, or inside an open round bracket of their paragraph (brackets in
    maths, code and link targets not counted)."""
    found = []
    for para in re.split(r"\n\s*\n", text):
        for m in _PAREN_CITE.finditer(para):
            before = _NOT_PROSE.sub(" ", para[: m.start()])
            if _NOUN_WORD.search(before) or before.count("(") > before.count(")"):
                found.append(" ".join(para[max(0, m.start() - 40) : m.end()].split()))
    return found


def _book_prose():
    for path in NOTEBOOKS:
        for cell in L.load(path)["cells"]:
            if cell["cell_type"] == "markdown":
                yield path.name, L.source(cell)
    for path in sorted((ROOT / "book").glob("*.md")):
        yield path.name, path.read_text()


def test_no_parenthetical_citation_is_used_as_a_noun_or_inside_brackets():
    found = [
        f"{name}: {hit}"
        for name, text in _book_prose()
        for hit in parenthetical_cites_misused(text)
    ]
    assert found == [], f"{len(found)} places:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text, bad",
    [
        ("(Eq. 6 of {cite}`a`)", 1),
        ("Eqs. (1)-(2) of {cite}`a`.", 1),
        ("(see also {cite:p}`a`)", 1),
        ("with a full covariance ({cite}`a`, §3.1)", 1),
        ("in {cite}`a`; of {cite}`b`", 2),
        ("attention {cite}`a`, Eqs. (1)-(2) of {cite:t}`b`", 0),
        ("(Eq. 6 of {cite:alp}`a`) and Nadaraya {cite}`a` (1964)", 0),
        ("$f(x$ is {cite}`a`", 0),  # a bracket in maths is not prose
        ("a (closed) bracket {cite}`a`\n\n(new paragraph", 0),
    ],
)
def test_the_citation_rule(text, bad):
    assert len(parenthetical_cites_misused(text)) == bad


# ----------------------------------------- in-text citations as the bibliography labels
def _in_text_citations():
    """{key: (parenthetical, textual)} for every entry of book/references.bib,
    formatted by the book's reference style (book/_ext/bibstyle.py) as
    sphinxcontrib-bibtex does."""
    import bibstyle
    from pybtex.database import parse_file
    from sphinxcontrib.bibtex.style.template import SphinxReferenceInfo

    bib = parse_file(str(ROOT / "book" / "references.bib"))
    style = bibstyle.author_year_round()()
    cites = {}
    for entry in bibstyle.AuthorYearStyle().format_entries(bib.entries.values()):
        info = SphinxReferenceInfo(None, "a", "b", entry.key, None, "", "")
        data = {
            "entry": bib.entries[entry.key],
            "formatted_entry": entry,
            "reference_info": info,
            "style": style,
        }
        cites[entry.key] = tuple(
            str(style.outer(role, [style.inner(role).format_data(data)]).format())
            for role in ("p", "t")
        )
    return cites


def test_in_text_citations_of_distinct_works_are_distinct():
    """Two works of one author and year were both cited "(You et al., 2016)" while the
    bibliography labels them 2016a and 2016b (issue 32): the citations carry the
    label's letter. And "Pedregosa, Fabian and others" reads "Pedregosa et al.", not
    "Pedregosa & others"."""
    cites = _in_text_citations()
    for form in (0, 1):
        texts = [c[form] for c in cites.values()]
        assert len(set(texts)) == len(texts), sorted(
            t for t in texts if texts.count(t) > 1
        )
    assert cites["you2016ensc"][0] != cites["you2016sscomp"][0]
    assert cites["pedregosa2011sklearn"] == (
        "(Pedregosa et al., 2011)",
        "Pedregosa et al. (2011)",
    )
    assert not [c for c in cites.values() if "others" in c[0] + c[1]]
    assert cites["attentionwiki"][1] == "Wiki note (n.d.)"  # undated: the seed has none


# ----------------------------------------- partial equation pairs and the papers' boxes
#: Paper equations that the book's counterpart states only in part, and the words
#: every claim pairing them says so with (issue 32: "Eq. (1), our (6.3)" hid the
#: residual and W_V of the paper's Eq. (1)).
PARTIAL_PAIRS = {
    ("003", 1, "eq-06-selfattn"): "without its residual",  # ... and W_V
    ("003", 3, "eq-06-products"): "one product term",  # ... without σ and the sum
}
_BOX = re.compile(r"\b(?:Proposition|Theorem|Lemma|Corollary|Definition) \d+")


def partial_pair_problems(text: str) -> list[str]:
    """A paper's equation paired in ``text`` with a book's equation that states it only
    in part, without the words that say so (the labels name the chapter, and so the
    paper)."""
    found = []
    for (_, number, label), words in PARTIAL_PAIRS.items():
        for clause in text.split(";"):
            if label not in clause:
                continue
            if number in sum(L.paper_equation_numbers(clause), []) and (
                words not in clause
            ):
                found.append(f"Eq. ({number}) with {label} lacks '{words}'")
    return found


def box_problems(text: str) -> list[str]:
    """A paper's numbered box (Proposition 3) named without the book's own (a
    {prf:ref} or an "our" equation) in the same clause."""
    return [
        clause.strip()
        for clause in text.split(";")
        if _BOX.search(clause) and "{prf:ref}" not in clause and "our " not in clause
    ]


def test_partial_equation_pairs_say_what_they_leave_out_and_boxes_are_paired():
    found = []
    for c in L.all_claims():
        for key in ("statement", "source", "erratum"):
            text = getattr(c, key) or ""
            problems = partial_pair_problems(text) + box_problems(text)
            found += [f"{c.notebook.name} {c.cell_id} {key}: {p}" for p in problems]
    assert found == [], "\n".join(found)


def test_the_pair_and_box_rules_catch_the_old_metadata():
    old = "seed 003, Eq. (3), our eq-06-products, and §3.3 (kernels)"
    assert len(partial_pair_problems(old)) == 1
    assert (
        partial_pair_problems(
            old.replace(
                "eq-06-products,",
                "eq-06-products (one product term of Eq. (3), without σ and "
                "the sum over i),",
            )
        )
        == []
    )
    erratum = "(the transpose, as the paper's own Eq. 1 has it, our eq-06-selfattn)"
    assert len(partial_pair_problems(erratum)) == 1
    assert box_problems("seed 003, Remark 3 (with f = Xg of Proposition 3)") != []
    assert (
        box_problems("seed 003, Proposition 3, our {prf:ref}`prop-06-permutation`")
        == []
    )
    assert box_problems("seed 002, Proposition 3, Eq. (18), our eq-07b-prop3") == []


# ---------------------------------------------------------- no equation label on a page
# Labels like eq-02-nw resolve to numbers only in prose ({eq}) and in claim metadata
# (the extension); in code they printed raw: "# Eq. (eq-02-nw)" in 02, 03 and 07a's
# comments and 08's table header "bound (eq-08-reach)" (issue 32; 8 on main).
_LABEL = re.compile(r"\beq-\d\d[ab]?-[\w-]+")


@by_name
def test_no_code_cell_shows_an_equation_label(path):
    found = []
    for i, cell in enumerate(L.load(path)["cells"]):
        if cell["cell_type"] != "code":
            continue
        texts = [L.source(cell)] + [
            "".join(out.get("text", ""))
            + "".join(
                "".join(v)
                for k, v in out.get("data", {}).items()
                if k.startswith("text/") and isinstance(v, (str, list))
            )
            for out in cell.get("outputs", [])
        ]
        found += [f"cell {i}: {m}" for t in texts for m in _LABEL.findall(t)]
    assert found == [], "\n".join(found)


# ------------------------------------------------ mathematics in the metadata
# The ledger, the errata and the callouts typeset the metadata's $...$ maths (issue 32).
# On the metadata before issue 32 the check finds 70 problems (70 fields of 8 chapters
# wrote pseudo-TeX such as "W_V ∈ ℝ^{d_v×d}" as plain text).
def test_claim_metadata_writes_its_mathematics_in_tex():
    found = [p for c in L.all_claims() for p in L.claim_math_problems(c)]
    assert found == [], f"{len(found)} problems:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text, raw",
    [
        ("the value map W_V must be d_v x D", ["W_V", "d_v"]),
        ("seed 000 states W_V ∈ ℝ^{d_v×d}", ["^", "W_V", "d_v"]),
        ("W_QᵀW_K/√8", ["ᵀ", "√", "W_QᵀW_K"]),
        ("ρ₁ = e^{s_ii}/(e^{s_ii} + S)", ["₁", "^", "^", "s_ii", "s_ii"]),
        ("g(τ) = ‖[(α−1)x − τ]₊‖_{1/(α−1)}", ["‖", "₊", "‖", "_{", "_"]),
        ("the 2-D r = E_p[ψ]", ["E_p"]),
        ("(3σ²/2)^{2/3}/5", ["^"]),
        ("the value map $W_V$ must be $d_v \\times D$", []),
        (r"$W_V \in \mathbb{R}^{d_v \times d}$, our eq-01-self (seed 000)", []),
        ("temperature σ², the neg_sq_dist score naming x_query", []),
        ("`attnlib.foo_bar`, `p_min`, attnlib.kernel_regression.nadaraya_watson", []),
        ("committed sweep attnlib/results/kernel_regression.json, test_results.py", []),
    ],
)
def test_raw_mathematics_outside_dollars_is_found(text, raw):
    assert L.raw_math(text) == raw


@pytest.mark.parametrize(
    "text, problem",
    [
        (r"$W_V \in \mathbb{R}^{d_v \times d}$", None),
        (r"cost $5 and more", "unpaired"),
        (r"$x^{2$ and $y$", "unbalanced braces"),
        (r"$\left( x$", "unbalanced \\left"),
        ("$W_Qᵀ$", "Unicode"),
        ("$x = eq-01-self$", "equation label or a seed"),
        ("$$x$$", "display maths"),
        ("`$not maths` in code", None),
    ],
)
def test_maths_in_the_metadata_pairs_up_and_can_typeset(text, problem):
    found = L.math_span_problems(text)
    assert (found == []) if problem is None else (problem in " ".join(found))


def test_a_planted_raw_subscript_in_a_copy_of_a_chapter_is_caught(tmp_path):
    path = next(p for p in NOTEBOOKS if p.name.startswith("01_"))
    nb = L.load(path)
    cell = next(c for c in nb["cells"] if "claim" in c["metadata"])
    cell["metadata"]["claim"]["statement"] += "; the value map W_V is d_v x D"
    copy_path = write(tmp_path / path.name, nb)
    claims = L.claims(L.load(copy_path), copy_path)
    found = [p for c in claims for p in L.claim_math_problems(c)]
    assert len(found) == 1 and "['W_V', 'd_v']" in found[0]
