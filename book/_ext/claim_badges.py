"""Each claim cell of a chapter shown as a one-line badge that opens to its check.

A claim on the page is an HTML ``<details>`` element (no script needed) whose summary
is one line: whether it held, its statement, "checked against" its reference and, where
it has been calibrated (``book/calibration.json`` and the unseen-seed audits of
``book/unseen_audit.json``), at how many fresh offsets it ran and how often it failed.
Opened, it shows the claim's number (linked to its row of the ledger), its kind, the
full statement, reference, tolerance, source, seeds, control and erratum, and then the
claim cell itself, its code and its printed output: the checking code is off the
reading path but one click away. The figures and tables a claim cell draws are the
lesson's (the prose numbers and reads them), so they stay on the page, just below the
badge (:func:`_lesson_outputs`). A claim cell tagged ``lesson-check`` (the check *is*
the lesson, say a NumPy restatement that shows an equivalence) keeps its code on the
page, below its folded badge.

Nothing is removed: the cell still executes and asserts, the ledger still lists it, and
the badge carries the cell's execution count (``data-exec-count``) so that the website
tests can see that it ran. The PDF edition (``book/pdf.py``) opens every ``<details>``
before printing; ``claims.css`` lets the summary wrap in print.
"""

from __future__ import annotations

from pathlib import Path

import claims_lib
from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The tag of a claim cell whose checking code is itself the lesson: shown, not folded.
LESSON_TAG = "lesson-check"


class claim_details(nodes.General, nodes.Element):
    """``<details>``: a claim's badge and what it opens to."""


class claim_summary(nodes.General, nodes.TextElement):
    """``<summary>``: the badge's one line."""


def _visit_details(self, node):
    attributes = {}
    if node.get("exec_count") is not None:
        attributes["data-exec-count"] = str(node["exec_count"])
    self.body.append(self.starttag(node, "details", **attributes))


def _depart_details(self, node):
    self.body.append("</details>\n")


def _visit_summary(self, node):
    self.body.append(self.starttag(node, "summary", suffix=""))


def _depart_summary(self, node):
    self.body.append("</summary>\n")


def _pass(self, node):
    pass


def _unseen_text(c, cal) -> tuple[str, str]:
    """The calibration's words, long and short (``claims_lib.calibration``): "live at
    40 fresh offsets, 0 failed", "re-reads a committed sweep", or empty."""
    if cal is None:
        return "", ""
    if cal.mode == "offset-free":
        return "offset-free", "offset-free"
    if cal.mode == "reread":
        return "re-reads a committed sweep: not calibrated", "committed sweep"
    if cal.tried:
        where = "on re-run sweeps" if cal.mode == "rerun" else "live"
        return (
            f"{where} at {cal.tried} fresh offsets, {cal.failures} failed",
            f"{cal.tried - cal.failures}/{cal.tried} fresh",
        )
    if c.kind == "experiment":
        return "not yet calibrated at fresh offsets", "not calibrated"
    return "", ""


def badge(app, doctree, path: Path, c, cell, held: bool, cal=None):
    """The folded badge of claim ``c`` (its ``<details>``), without the cell yet."""
    from claims import _cites, _kind_text, _ledger_anchor, _link, _myst, _parse_markdown

    cite = _cites(app)

    def md(text):
        return _parse_markdown(doctree, _myst(text, cite=cite))

    def field(name, text):
        return [nodes.inline("", f"{name}: ", classes=["claim-field"]), *md(text)]

    key = c.notebook.stem.split("_", 1)[0]
    mark = (
        nodes.inline("", "✓", classes=["claim-mark", "claim-held"])
        if held
        else nodes.inline("", "✗ did not hold:", classes=["claim-mark", "claim-failed"])
    )
    line = [
        mark,
        nodes.Text(" "),
        nodes.inline("", "", *md(c.statement), classes=["claim-stmt"]),
        nodes.Text(" "),
        nodes.inline(
            "",
            "",
            nodes.Text("· checked against "),
            *md(c.reference),
            classes=["claim-against"],
        ),
    ]
    audit, short = _unseen_text(c, cal)
    if audit:
        line += [
            nodes.Text(" "),
            nodes.inline(
                "",
                "",
                nodes.inline("", f"· {audit}", classes=["claim-unseen-long"]),
                nodes.inline("", f"· {short}", classes=["claim-unseen-short"]),
                classes=["claim-unseen"],
            ),
        ]
    classes = ["claim-callout", "claim-badge"]
    if LESSON_TAG in cell.get("metadata", {}).get("tags", []):
        classes.append("claim-lesson")
    box = claim_details(classes=classes, ids=[c.anchor])
    box += claim_summary("", "", *line)

    label = nodes.strong("", f"Claim {key}.{c.number}")
    ledger = app.config.claims_ledger_page
    if ledger in app.env.found_docs:
        label = _link(ledger, _ledger_anchor(path, c), label)
    status = (
        nodes.inline("", "✓ held when this page was built", classes=["claim-held"])
        if held
        else nodes.inline("", "✗ did not hold", classes=["claim-failed"])
    )
    body = nodes.container(classes=["claim-body"])
    body += nodes.paragraph(
        "",
        "",
        label,
        nodes.Text(" · "),
        nodes.inline("", _kind_text(c, cal), classes=["claim-kind"]),
        nodes.Text(" · "),
        status,
        classes=["claim-head"],
    )
    # (the statement itself is the summary's, which wraps once the badge is open)
    details = field("checked against", c.reference)
    if c.tolerance:
        details += [nodes.Text(" · "), *field("tolerance", c.tolerance)]
    if c.source:
        details += [nodes.Text(" · "), *field("source", c.source)]
    if c.kind == "experiment" and c.seeds:
        seeds = ", ".join(map(str, sorted(set(c.seeds))))
        details += [nodes.Text(" · "), *field("seeds", seeds)]
    body += nodes.paragraph("", "", *details, classes=["claim-details"])
    if c.control:
        body += nodes.paragraph("", "", *field("control", c.control))
    if c.erratum:
        body += nodes.paragraph("", "", *field("erratum", c.erratum))
    box += body
    return box


def _failed(cell: nodes.Node) -> bool:
    """Whether a cell's outputs on the page hold an error (its assert failed)."""
    return any(
        "traceback" in n.get("classes", [])
        for n in cell.findall(nodes.Element)
        if n is not cell
    )


def fold_claim_cells(app, doctree):
    """Put every claim cell of a chapter into its badge (``lesson-check``: below it)."""
    path = Path(app.env.doc2path(app.env.docname))
    if path.suffix != ".ipynb":
        return
    nb = claims_lib.load(path)
    cells = nb["cells"]
    by_index = {c.index: c for c in claims_lib.claims(nb, path)}
    cals = claims_lib.calibration(nb, path)
    key = path.stem.split("_", 1)[0]
    for node in list(doctree.findall(nodes.container)):
        if node.get("nb_element") != "cell_code":
            continue
        index = node.get("cell_index")
        if index is None or index not in by_index:
            continue
        c = by_index[index]
        c.cell_id = str(cells[index].get("id", f"cell-{index}"))
        for problem in claims_lib.schema_problems(c):
            logger.warning(f"claim {key}.{c.number}: {problem}", location=node)
        try:
            box = badge(
                app,
                doctree,
                path,
                c,
                cells[index],
                held=not _failed(node),
                cal=cals.get(c.cell_id),
            )
        except Exception as err:  # a badge must never break the chapter's page
            logger.warning(f"claim badge not rendered: {err}", location=node)
            if c.anchor not in node["ids"]:
                node["ids"].append(c.anchor)
            continue
        box["exec_count"] = node.get("exec_count")
        _place(box, node)


def _place(box: claim_details, cell: nodes.Element) -> None:
    """Put a claim cell into its badge, or (``lesson-check``) the badge above the open
    cell; a folded cell's figures and tables stay on the page below its badge."""
    parent = cell.parent
    if "claim-lesson" in box["classes"]:
        parent.insert(parent.index(cell), box)
        return
    parent.replace(cell, box)
    box += cell
    shown = _lesson_outputs(cell)
    if shown is not None:
        parent.insert(parent.index(box) + 1, shown)


def _lesson_outputs(cell: nodes.Element) -> nodes.container | None:
    """The figures and tables a folded claim cell draws, taken out of its badge.

    They are the lesson's (the prose numbers and reads them); what stays folded is the
    checking code and its printed text. None when the cell draws nothing.
    """
    drawn = []
    for out in cell.children:
        if out.get("nb_element") != "cell_code_output":
            continue
        for child in list(out.children):
            if isinstance(child, (nodes.figure, nodes.image, nodes.table)) or any(
                isinstance(n, (nodes.figure, nodes.image, nodes.table))
                or (isinstance(n, nodes.raw) and "<table" in n.astext())
                for n in child.findall(nodes.Element)
            ):
                out.remove(child)
                drawn.append(child)
    if not drawn:
        return None
    output = nodes.container(
        "", *drawn, nb_element="cell_code_output", classes=["cell_output"]
    )
    return nodes.container(
        "", output, nb_element="cell_code", classes=["cell", "claim-drawn"]
    )


def setup(app):
    passthrough = (_pass, _pass)
    app.add_node(
        claim_details,
        html=(_visit_details, _depart_details),
        latex=passthrough,
        text=passthrough,
        man=passthrough,
        texinfo=passthrough,
    )
    app.add_node(
        claim_summary,
        html=(_visit_summary, _depart_summary),
        latex=passthrough,
        text=passthrough,
        man=passthrough,
        texinfo=passthrough,
    )
    app.connect("doctree-read", fold_claim_cells)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
