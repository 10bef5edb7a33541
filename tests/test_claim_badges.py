"""What a folded claim badge keeps inside and what it leaves on the page
(book/_ext/claim_badges.py), on a planted cell."""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from claim_badges import (  # noqa: E402
    _lesson_outputs,
    _place,
    _visit_details,
    claim_details,
)


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


def _badge(*classes):
    return claim_details(classes=["claim-badge", *classes])


def test_a_folded_claim_goes_into_its_badge_and_a_lesson_check_stays_open():
    folded, lesson = _cell(nodes.literal_block("", "ok")), _cell()
    section = nodes.section("", folded, lesson)
    box, open_box = _badge(), _badge("claim-lesson")
    _place(box, folded)
    _place(open_box, lesson)
    assert section.children == [box, open_box, lesson]
    assert box.children == [folded]
    assert open_box.children == []  # the lesson's code is below its badge, not in it


class _Writer:
    """What ``_visit_details`` needs of Sphinx's HTML translator."""

    def __init__(self):
        self.body = []

    def starttag(self, node, tag, **attributes):
        shown = "".join(f' {k}="{v}"' for k, v in sorted(attributes.items()))
        return f"<{tag}{shown}>"


def test_a_badge_carries_the_execution_count_of_the_cell_that_ran():
    writer, ran, not_ran = _Writer(), _badge(), _badge()
    ran["exec_count"] = 7
    _visit_details(writer, ran)
    _visit_details(writer, not_ran)
    assert writer.body == ['<details data-exec-count="7">', "<details>"]
