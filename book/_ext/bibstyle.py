"""The bibliography in author-year form, with a link for every source.

sphinxcontrib-bibtex cites author-year in the text (``bibtex_reference_style``) but
labels the bibliography with pybtex's alphabetic style ("[BLeonardC13]"). This style
labels each entry as it is cited, "Martins et al. 2020", sorts by author and year, and
ends each entry with its link (the ``url`` field, or an arXiv or DOI link built from the
``eprint``/``doi`` fields or an "arXiv:NNNN.NNNNN" note; failing those, a search for
its title).

Citations in the text take the same author-year form, with round brackets
(``bibtex_reference_style: author_year_round``): "Martins et al. (2020)" for
``{cite:t}``, "(Ma & Ying, 2022; Attention: Self-Expression Is All You Need, 2022)"
for ``{cite}``, with the bibliography's own label ("You et al., 2016a", "Pedregosa et
al., 2011"); the ledger, the errata and the claim callouts name their sources with
``{cite:t}`` and so read alike (``claims_lib.SOURCES`` holds the same keys, for pages
built without the bibliography).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote_plus

from pybtex.plugin import register_plugin
from pybtex.richtext import HRef, Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle


def _last_names(person) -> str:
    names = (person.prelast_names + person.last_names) or person.first_names
    return " ".join(str(Text.from_latex(n)) for n in names)


class AuthorYearLabels(BaseLabelStyle):
    """``Nadaraya 1964``, ``Roweis & Saul 2000``, ``Martins et al. 2020``."""

    def format_labels(self, sorted_entries):
        labels = [self._label(entry) for entry in sorted_entries]
        total = {label: labels.count(label) for label in labels}
        seen: dict[str, int] = {}
        for label in labels:  # two works of one year: 2016a, 2016b
            seen[label] = seen.get(label, 0) + 1
            yield label if total[label] == 1 else f"{label}{chr(96 + seen[label])}"

    @staticmethod
    def _label(entry) -> str:
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_last_names(p) for p in people]
        etal = names and names[-1] == "others"
        names = [n for n in names if n != "others"]
        if not names:
            who = entry.fields.get("title", entry.key).split(":")[0]
        elif len(names) == 1 and not etal:
            who = names[0]
        elif len(names) == 2 and not etal:
            who = f"{names[0]} & {names[1]}"
        else:
            who = f"{names[0]} et al."
        who = who.replace("{", "").replace("}", "")
        return f"{who} {entry.fields.get('year', 'n.d.')}"


def entry_url(entry) -> str | None:
    """The link of a bibliography entry, if it has or implies one."""
    fields = entry.fields
    if fields.get("url"):
        return fields["url"]
    if fields.get("doi"):
        return "https://doi.org/" + fields["doi"]
    eprint = fields.get("eprint") or ""
    match = re.search(r"arXiv:\s*([\w./-]+\d)", fields.get("note", "")) or (
        re.match(r"([\w./-]+\d)$", eprint)
    )
    if match:
        return f"https://arxiv.org/abs/{match.group(1)}"
    # No address recorded: a search for the title, so that every entry has a link
    # (not for a one- or two-word title, which a search would not find).
    title = re.sub(r"[{}$\\]", "", fields.get("title", ""))
    if len(title.split()) < 3:
        return None
    return "https://scholar.google.com/scholar?q=" + quote_plus(f'"{title}"')


class AuthorYearStyle(UnsrtStyle):
    """pybtex's ``unsrt`` entries, author-year labels, sorted, each with its link."""

    default_label_style = AuthorYearLabels
    default_sorting_style = SortingStyle

    def format_entry(self, label, entry, bib_data=None):
        formatted = super().format_entry(label, entry, bib_data=bib_data)
        url = entry_url(entry)
        # unsrt links the url, doi and eprint fields itself
        if url and not any(entry.fields.get(f) for f in ("url", "doi", "eprint")):
            formatted.text = Text(formatted.text, " ", HRef(url, url))
        return formatted


def _label_parts(data) -> tuple[str, str]:
    """The bibliography's label of a cited entry, split into who and year:
    ("You et al.", "2016a"), ("Pedregosa et al.", "2011"), ("Wiki note", "n.d.")."""
    who, year = data["formatted_entry"].label.rsplit(" ", 1)
    return who, year


def author_year_round():
    """sphinxcontrib-bibtex's author-year citations in round brackets, written as the
    bibliography labels its entries (:class:`AuthorYearLabels`): two authors joined by
    "&", "et al." in roman (also for an author list ending in "and others"), and two
    works of one author and year told apart as the bibliography tells them, "(You et
    al., 2016a; You et al., 2016b)"."""
    from pybtex.style.template import node
    from sphinxcontrib.bibtex.style.referencing import BracketStyle, PersonStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import (
        AuthorYearReferenceStyle,
    )
    from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
        BasicAuthorYearParentheticalReferenceStyle as Parenthetical,
    )
    from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
        BasicAuthorYearTextualReferenceStyle as Textual,
    )
    from sphinxcontrib.bibtex.style.template import (
        join,
        join2,
        post_text,
        pre_text,
        reference,
    )

    @node
    def label_who(children, data):
        return Text(_label_parts(data)[0])

    @node
    def label_year(children, data):
        return Text(_label_parts(data)[1])

    @dataclass
    class LabelParenthetical(Parenthetical):
        def inner(self, role_name):
            if "s" in role_name:  # the full author list, as the person style writes it
                return super().inner(role_name)
            return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                pre_text,
                reference[join(sep=self.author_year_sep)[label_who, label_year]],
                post_text,
            ]

    @dataclass
    class LabelTextual(Textual):
        def inner(self, role_name):
            if "s" in role_name:
                return super().inner(role_name)
            return join(sep=self.text_reference_sep)[
                label_who,
                join[
                    self.bracket.left,
                    join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                        pre_text, reference[label_year], post_text
                    ],
                    self.bracket.right,
                ],
            ]

    def round_brackets():
        return BracketStyle(left="(", right=")", sep="; ")

    def persons():
        return PersonStyle(sep2=" & ", last_sep=", & ", other=" et al.")

    @dataclass
    class AuthorYearRound(AuthorYearReferenceStyle):
        bracket_textual: BracketStyle = field(default_factory=round_brackets)
        bracket_parenthetical: BracketStyle = field(default_factory=round_brackets)
        bracket_author: BracketStyle = field(default_factory=round_brackets)
        bracket_label: BracketStyle = field(default_factory=round_brackets)
        bracket_year: BracketStyle = field(default_factory=round_brackets)
        person: PersonStyle = field(default_factory=persons)

        def __post_init__(self):
            super().__post_init__()
            parenthetical, textual = self.styles[:2]
            assert isinstance(parenthetical, Parenthetical)
            assert isinstance(textual, Textual)
            self.styles[:2] = [
                LabelParenthetical(**_fields(parenthetical)),
                LabelTextual(**_fields(textual)),
            ]
            self.role_style.update(
                (name, style)
                for style in self.styles[:2]
                for name in style.role_names()
            )

    return AuthorYearRound


def _fields(style) -> dict:
    from dataclasses import fields

    return {f.name: getattr(style, f.name) for f in fields(style) if f.init}


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    import sphinxcontrib.bibtex.plugin

    group = "sphinxcontrib.bibtex.style.referencing"
    sphinxcontrib.bibtex.plugin.register_plugin(
        group, "author_year_round", author_year_round()
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}
