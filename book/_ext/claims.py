"""The claims ledger and the errata of the sources, built from the notebooks.

Every code cell that checks a claim of the book is tagged ``claim`` and carries its
statement, source, independent reference and tolerance in its metadata (and, where the
source is wrong, an ``erratum``). This extension

* folds every claim cell of a chapter's page into a one-line badge (anchor
  ``claim-<cell id>``, ``claim_badges.py``) that opens to its number, linked to its
  row of the ledger, its kind, statement, reference, tolerance, seeds, control, and
  the cell's code and output;
* provides the directive ``{claims-ledger}``: one table per chapter, one row per claim,
  each linked to its cell, with counts per chapter and in total;
* provides the directive ``{errata-list}``: every erratum with its source, its chapter
  and a link to the cell that runs the counterexample;
* provides the role ``{claims-count}`total` `` (also ``consistency``, ``errata``,
  ``chapters``), so that the preface states the count of the build it is part of.

The directives read the notebooks' JSON through ``claims_lib`` (the module the tests of
the conventions use too) and note them as dependencies, so the pages are rebuilt
whenever a chapter changes; nothing generated is written into the source tree.
"""

from __future__ import annotations

import re
from pathlib import Path

import claim_badges
import claims_lib
from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

logger = logging.getLogger(__name__)
# A label of the book's equations, bare or in its own parentheses ("Eq. (eq-07a-A)");
# a parenthesis that only encloses it with other words stays ("(softmax;
# eq-08-softmux)").
_EQ_LABEL = re.compile(
    r"\((eq-[0-9]+[a-z]?-[\w-]*[A-Za-z0-9])\)|(?<![`\w-])(eq-[0-9]+[a-z]?-[\w-]*[A-Za-z0-9])"
)


def _myst(text: str, cite: bool = True) -> str:
    """Metadata text made ready for MyST: sources named by key, equation labels as
    references (``Eq. (eq-07a-A)`` and ``our eq-07a-A`` -> the book's number, a link;
    the paper's own number stays beside it, as the metadata writes it)."""
    text = claims_lib.source_key(text, cite=cite)
    return _EQ_LABEL.sub(lambda m: f"{{eq}}`{m.group(1) or m.group(2)}`", text)


def _cites(app) -> bool:
    """Whether sources can be cited (sphinxcontrib-bibtex loaded), else plain keys."""
    return "sphinxcontrib.bibtex" in app.extensions


def _kind_text(c, cal=None) -> str:
    """The claim's kind as the ledger and the callout show it, with its calibration
    (``claims_lib.calibration``: at how many fresh offsets it ran, live or on re-run
    sweeps, how often it failed, the bound on its false-alarm rate; or that it only
    re-reads a committed file, or does not depend on the offset). For an experiment,
    the seeds this build used too."""
    if not c.kind:
        return "not yet classified"
    text = c.kind
    if c.kind == "experiment" and c.seeds:
        text = f"experiment, {claims_lib.seeds_text(c.seeds)}"
    if cal is not None and (cal.tried or cal.mode != "live" or c.kind == "experiment"):
        text += "; " + claims_lib.calibration_text(cal)
    return text


def _ledger_anchor(path: Path, claim) -> str:
    """The id of a claim's row in the ledger (cell ids are unique per notebook)."""
    return f"ledger-{_chapter_key(path)}-{claim.cell_id}"


class claim_ref(nodes.Inline, nodes.TextElement):
    """A link to an anchor on another page, resolved once the target's URI is known."""


def _chapters(env) -> list[tuple[str, Path, dict]]:
    """(docname, path, notebook) for every chapter notebook that the build includes.

    The page asking is rebuilt when a notebook changes (a dependency) or when one is
    added or removed (remembered in ``env.claims_pages``, see :func:`outdated`).
    """
    if not hasattr(env, "claims_pages"):
        env.claims_pages = set()
    env.claims_pages.add(env.docname)
    found = []
    for path in claims_lib.chapter_notebooks(Path(env.srcdir)):
        docname = path.relative_to(env.srcdir).with_suffix("").as_posix()
        if docname in env.found_docs:
            env.note_dependency(str(path))
            found.append((docname, path, claims_lib.load(path)))
    return found


def _chapter_key(path: Path) -> str:
    return path.stem.split("_", 1)[0]


def _erratum_anchor(path: Path, claim) -> str:
    """The id of an erratum on the errata page (cell ids are unique per notebook)."""
    return f"erratum-{_chapter_key(path)}-{claim.cell_id}"


def _link(docname: str, anchor: str, *children: nodes.Node) -> claim_ref:
    """A link to ``anchor`` on page ``docname`` (its top if ``anchor`` is empty)."""
    return claim_ref("", "", *children, refdocname=docname, refanchor=anchor)


class _LedgerDirective(SphinxDirective):
    has_content = False

    def inline(self, text: str) -> list[nodes.Node]:
        """Metadata text parsed as inline MyST (so ``$math$`` and code render), its
        sources named by key and linked to the bibliography."""
        parsed, messages = self.state.inline_text(
            _myst(text, cite=_cites(self.env.app)), self.lineno
        )
        return parsed + messages

    def paragraph(self, *children) -> nodes.paragraph:
        return nodes.paragraph("", "", *children)


def _table(
    header: list[str],
    rows: list[list[list[nodes.Node]]],
    widths,
    classes,
    stacked=False,
    ids=None,
):
    table = nodes.table(classes=classes + ["colwidths-given"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)

    def row(cells, labels=False, anchor=None):
        r = nodes.row(ids=[anchor] if anchor else [])
        for name, content in zip(header, cells):
            entry = nodes.entry()
            if labels:  # shown instead of the header when a phone stacks the cells
                content = [
                    nodes.inline("", name + ": ", classes=["ledger-label"]),
                    *content,
                ]
            entry += nodes.paragraph("", "", *content)
            r += entry
        return r

    thead = nodes.thead()
    thead += row([[nodes.Text(h)] for h in header])
    tbody = nodes.tbody()
    for i, cells in enumerate(rows):
        tbody += row(cells, labels=stacked, anchor=ids[i] if ids else None)
    group += thead
    group += tbody
    return table


PLURALS = {"erratum": "errata"}


def _plural(n: int, word: str) -> str:
    return f"{n} " + (word if n == 1 else PLURALS.get(word, word + "s"))


class ClaimsLedger(_LedgerDirective):
    """``{claims-ledger}``: every claim of the book, grouped by chapter."""

    def run(self):
        chapters = _chapters(self.env)
        per_chapter = [(d, p, nb, claims_lib.claims(nb, p)) for d, p, nb in chapters]
        every = [c for *_, cs in per_chapter for c in cs]
        consistency = sum(c.is_consistency_check for c in every)
        errata = sum(bool(c.erratum) for c in every)
        n_chapters = sum(bool(cs) for *_, cs in per_chapter)
        out: list[nodes.Node] = [
            self.paragraph(
                nodes.strong("", _plural(len(every), "claim")),
                nodes.Text(
                    f" in {_plural(n_chapters, 'chapter')}; "
                    f"{_plural(consistency, 'consistency check')} "
                    "(attnlib checked against attnlib itself)"
                    f" and {_plural(errata, 'erratum')} of the sources "
                    "among them."
                ),
            )
        ]
        out.append(
            self.paragraph(
                nodes.Text(
                    "The sources are named by their authors and year; the seed "
                    "texts the book follows are:"
                )
            )
        )
        out.append(
            _table(
                ["key", "paper"],
                [
                    # the key as the ledger's source column shows it
                    [
                        self.inline(
                            f"{{cite:t}}`{bib}`" if _cites(self.env.app) else key
                        ),
                        self.inline(f"*{title}*"),
                    ]
                    for key, title, bib in claims_lib.SOURCES.values()
                ],
                [25, 75],
                ["claims-sources"],
            )
        )
        summary = [
            [
                [_link(d, "", nodes.Text(claims_lib.chapter_title(nb) or d))],
                [nodes.Text(str(len(cs)))],
                [nodes.Text(str(sum(c.is_consistency_check for c in cs)))],
                [nodes.Text(str(sum(bool(c.erratum) for c in cs)))],
            ]
            for d, p, nb, cs in per_chapter
        ]
        summary.append(
            [
                [nodes.strong("", "total")],
                [nodes.strong("", str(len(every)))],
                [nodes.strong("", str(consistency))],
                [nodes.strong("", str(errata))],
            ]
        )
        out.append(
            _table(
                ["chapter", "claims", "consistency checks", "errata"],
                summary,
                [60, 12, 16, 12],
                ["claims-summary"],
                stacked=True,
            )
        )
        for docname, path, nb, cs in per_chapter:
            key = _chapter_key(path)
            title = claims_lib.chapter_title(nb) or docname
            rubric = nodes.rubric(
                "",
                "",
                _link(docname, "", nodes.Text(title)),
                nodes.Text(f" ({_plural(len(cs), 'claim')})"),
                ids=[f"ledger-{key}"],
            )
            out.append(rubric)
            if not cs:
                out.append(self.paragraph(nodes.emphasis("", "No claim cell yet.")))
                continue
            rows, anchors = [], []
            cals = claims_lib.calibration(nb, path)
            for c in cs:
                for problem in claims_lib.schema_problems(c):
                    logger.warning(
                        f"claim {key}.{c.number} ({path.name}): {problem}",
                        location=docname,
                    )
                anchors.append(_ledger_anchor(path, c))
                statement = self.inline(c.statement)
                if c.erratum:
                    mark = nodes.emphasis("", "(erratum)")
                    errata_page = self.config.claims_errata_page
                    if errata_page in self.env.found_docs:
                        mark = _link(errata_page, _erratum_anchor(path, c), mark)
                    statement += [nodes.Text(" "), mark]
                reference = self.inline(c.reference)
                if c.is_consistency_check:
                    reference = [
                        nodes.inline("", "", *reference, classes=["consistency"])
                    ]
                kind = [nodes.Text(_kind_text(c, cals.get(c.cell_id)))]
                if not c.kind:
                    kind = [nodes.emphasis("", "", *kind)]
                rows.append(
                    [
                        [_link(docname, c.anchor, nodes.Text(f"{key}.{c.number}"))],
                        statement,
                        kind,
                        self.inline(c.source),
                        reference,
                        self.inline(c.tolerance),
                    ]
                )
            out.append(
                _table(
                    ["#", "claim", "kind", "source", "checked against", "tolerance"],
                    rows,
                    [7, 31, 11, 15, 23, 13],
                    ["claims-ledger"],
                    stacked=True,
                    ids=anchors,
                )
            )
        return out


class ErrataList(_LedgerDirective):
    """``{errata-list}``: every erratum, with its source and its counterexample cell."""

    def run(self):
        items = nodes.enumerated_list(enumtype="arabic", classes=["errata"])
        for docname, path, nb in _chapters(self.env):
            title = claims_lib.chapter_title(nb) or docname
            for c in claims_lib.claims(nb, path):
                if not c.erratum:
                    continue
                item = nodes.list_item(ids=[_erratum_anchor(path, c)])
                item += self.paragraph(
                    nodes.strong("", "", *self.inline(c.source)),
                    nodes.Text(": "),
                    *self.inline(c.erratum),
                )
                item += self.paragraph(
                    nodes.Text("Counterexample in "),
                    _link(
                        docname,
                        c.anchor,
                        nodes.Text(f"{title}, claim {_chapter_key(path)}.{c.number}"),
                    ),
                    nodes.Text(": "),
                    *self.inline(c.statement),
                    nodes.Text(" " if c.statement.endswith((".", "!", "?")) else ". "),
                    nodes.Text("Checked against "),
                    *self.inline(c.reference),
                    nodes.Text(f" ({c.tolerance})." if c.tolerance else "."),
                )
                items += item
        if not len(items):
            return [self.paragraph(nodes.emphasis("", "No erratum recorded yet."))]
        return [items]


class ClaimsCount(SphinxRole):
    """``{claims-count}`total` ``: the number of claims (or consistency checks, errata,
    chapters with claims) in the notebooks of this build."""

    KINDS = ("total", "consistency", "errata", "chapters")

    def run(self):
        kind = self.text.strip() or "total"
        if kind not in self.KINDS:
            msg = self.inliner.reporter.error(
                f"claims-count: unknown kind {kind!r} (one of {', '.join(self.KINDS)})",
                line=self.lineno,
            )
            return [], [msg]
        per_chapter = [claims_lib.claims(nb, p) for _, p, nb in _chapters(self.env)]
        every = [c for cs in per_chapter for c in cs]
        value = {
            "total": len(every),
            "consistency": sum(c.is_consistency_check for c in every),
            "errata": sum(bool(c.erratum) for c in every),
            "chapters": sum(bool(cs) for cs in per_chapter),
        }[kind]
        return [nodes.inline("", str(value), classes=["claims-count"])], []


def _parse_markdown(doctree, text: str) -> list[nodes.Node]:
    """``text`` parsed as MyST in the setting of ``doctree`` (math, roles, code)."""
    from docutils.utils import new_document
    from myst_parser.parsers.sphinx_ import MystParser

    doc = new_document(doctree.get("source", ""), doctree.settings)
    MystParser().parse(text, doc)
    if len(doc.children) == 1 and isinstance(doc.children[0], nodes.paragraph):
        return list(doc.children[0].children)
    return list(doc.children)


def resolve_links(app, doctree, fromdocname):
    """Turn each ``claim_ref`` into a reference to its page and anchor."""
    for node in list(doctree.findall(claim_ref)):
        uri = app.builder.get_relative_uri(fromdocname, node["refdocname"])
        if node["refanchor"]:
            uri += "#" + node["refanchor"]
        ref = nodes.reference("", "", *node.children, internal=True, refuri=uri)
        node.replace_self(ref)


def add_static(app):
    """Serve this extension's style sheet (the ledger's tables stack on phones)."""
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))
    app.add_css_file("claims.css")


def outdated(app, env, added, changed, removed):
    """Pages that list the chapters are outdated when a page is added or removed (a new
    notebook is no dependency of theirs yet)."""
    if not (added or removed):
        return []
    return sorted(getattr(env, "claims_pages", set()) - removed)


def purge(app, env, docname):
    getattr(env, "claims_pages", set()).discard(docname)


def merge(app, env, docnames, other):
    if not hasattr(env, "claims_pages"):
        env.claims_pages = set()
    env.claims_pages |= getattr(other, "claims_pages", set()) & set(docnames)


def setup(app):
    app.connect("env-get-outdated", outdated)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("builder-inited", add_static)
    app.add_config_value("claims_errata_page", "book/errata", "env")
    app.add_config_value("claims_ledger_page", "book/claims", "env")
    app.add_node(claim_ref)
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("errata-list", ErrataList)
    app.add_role("claims-count", ClaimsCount())
    claim_badges.setup(app)  # each claim cell folded into its badge
    app.connect("doctree-resolved", resolve_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
