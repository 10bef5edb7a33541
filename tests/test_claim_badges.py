"""What a folded claim badge keeps inside and what it leaves on the page
(book/_ext/claim_badges.py), on a planted cell."""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from claim_badges import _lesson_outputs  # noqa: E402


def _cell(*outputs):
    source = nodes.container(
        "", nodes.literal_block("", "assert x == 1"), nb_element="cell_code_source"
    )
    out = nodes.container("", *outputs, nb_element="cell_code_output")
    return nodes.container("", source, out, nb_element="cell_code")


def test_a_claims_figure_and_table_stay_on_the_page_and_its_print_stays_folded():
    figure = nodes.figure("", nodes.image(uri="fig.svg"), ids=["fig-01-x"])
    table = nodes.container("", nodes.raw("", "<table><tr><td>1</td></tr></table>"))
    printed = nodes.literal_block("", "checked: 1e-12")
    cell = _cell(printed, figure, table)
    shown = _lesson_outputs(cell)
    assert shown is not None and "claim-drawn" in shown["classes"]
    moved = list(shown.findall(nodes.figure))
    assert moved == [figure] and figure["ids"] == ["fig-01-x"]  # numref still finds it
    assert "<table" in shown.astext()
    folded = cell.children[1]
    assert folded.children == [printed]  # the check's text stays in the badge
    assert "assert x == 1" in cell.astext()


def test_a_claim_that_draws_nothing_leaves_nothing():
    cell = _cell(nodes.literal_block("", "ok"))
    assert _lesson_outputs(cell) is None
    assert cell.children[1].astext() == "ok"
