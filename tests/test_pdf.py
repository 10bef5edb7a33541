"""The PDF edition (`make pdf`, book/pdf.py), opened with pypdf.

It is printed once per session from the website that the site tests build (conftest's
`built_book`). Checked here: every page of the table of contents opens where its
bookmark points, in order, under its title; the bookmarks are the table of contents
(pages, then their sections); the printed contents give the right page numbers; every
page carries its number; no page shows raw TeX; the figures of the chapters are
embedded; internal links resolve; equations carry their chapter's numbers; the page
count and size are plausible.
"""

import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from pypdf import PdfReader
from pypdf.generic import Destination

ROOT = Path(__file__).resolve().parent.parent
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
PAGES = [TOC["root"]] + [ch["file"] for part in TOC["parts"] for ch in part["chapters"]]


def _norm(text: str) -> str:
    """Ligatures undone (NFKC), whitespace collapsed: text as pypdf extracts it."""
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    return re.sub(r"(\w)- (\w)", r"\1-\2", text)  # a word hyphenated at a line break


class _Article(HTMLParser):
    """The h1, the h2s and the image sources of a built page's article."""

    def __init__(self):
        super().__init__()
        self.depth, self.heading, self.skip = 0, None, 0
        self.h1, self.h2, self.images = "", [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article":
            self.depth += 1
        if not self.depth:
            return
        if tag in ("h1", "h2"):
            self.heading, self.text = tag, ""
        elif tag == "a" and "headerlink" in (attrs.get("class") or ""):
            self.skip += 1
        elif tag == "img" and attrs.get("src", "").endswith(".png"):
            self.images.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag == "article":
            self.depth -= 1
        elif tag == "a" and self.skip:
            self.skip -= 1
        elif tag == self.heading:
            if tag == "h1" and not self.h1:
                self.h1 = _norm(self.text)
            elif tag == "h2":
                self.h2.append(_norm(self.text))
            self.heading = None

    def handle_data(self, data):
        if self.heading and not self.skip:
            self.text += data


@pytest.fixture(scope="module")
def book(built_book):
    assert built_book["site_returncode"] == 0, (
        "the website did not build:\n" + built_book["site_report"]
    )
    returncode, report = built_book["pdf_printed"]()
    assert returncode == 0, "book/pdf.py failed:\n" + report
    site = built_book["site"]
    articles = {}
    for page in PAGES:
        parser = _Article()
        parser.feed((site / f"{page}.html").read_text(encoding="utf-8"))
        articles[page] = parser
    reader = PdfReader(str(built_book["pdf"]))
    texts = [_norm(p.extract_text()) for p in reader.pages]
    return {
        "reader": reader,
        "texts": texts,
        "articles": articles,
        "path": built_book["pdf"],
    }


def _outline(reader):
    """[(title, page, [(title, page), ...]), ...] of the top-level bookmarks."""
    items, out = reader.outline, []
    for index, item in enumerate(items):
        if isinstance(item, Destination):
            children = (
                items[index + 1]
                if index + 1 < len(items) and isinstance(items[index + 1], list)
                else []
            )
            out.append(
                (
                    item.title,
                    reader.get_destination_page_number(item) + 1,
                    [
                        (c.title, reader.get_destination_page_number(c) + 1)
                        for c in children
                        if isinstance(c, Destination)
                    ],
                )
            )
    return out


def _titles(book):
    return [
        "Preface" if page == TOC["root"] else book["articles"][page].h1
        for page in PAGES
    ]


def test_bookmarks_are_the_table_of_contents(book):
    outline = _outline(book["reader"])
    assert [title for title, _, _ in outline] == ["Contents"] + _titles(book)
    for (title, _, sections), page in zip(outline[1:], PAGES):
        assert len(sections) == len(book["articles"][page].h2), f"{title}: {sections}"
    starts = [page for _, page, _ in outline]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), starts


def test_every_chapter_opens_under_its_title_in_order(book):
    outline, texts = _outline(book["reader"]), book["texts"]
    for (_title, page, sections), expected in zip(outline[1:], _titles(book)):
        assert expected in texts[page - 1], f"page {page} does not show {expected!r}"
        for _section, section_page in sections:
            assert section_page >= page
    first_chapter = outline[2][1]
    assert outline[1][1] < first_chapter, "the preface comes first"


def test_printed_contents_give_the_pages_of_the_bookmarks(book):
    outline, texts = _outline(book["reader"]), book["texts"]
    contents = " ".join(texts[outline[0][1] - 1 : outline[1][1] - 1])
    for title, page, _ in outline[1:]:
        assert re.search(re.escape(_norm(title)) + rf"\s*{page}\b", contents), (
            f"{title} ... {page} not in the contents"
        )


def test_every_page_carries_its_number(book):
    for number, text in enumerate(book["texts"], 1):
        assert re.search(rf"(^|\s){number}(\s|$)", text), (
            f"page {number} shows no page number"
        )


def test_no_page_shows_raw_tex(book):
    for number, text in enumerate(book["texts"], 1):
        for raw in ("\\frac", "$$", "\\begin{", "\\sum", "\\mathbb"):
            assert raw not in text, f"page {number} shows raw TeX {raw!r}"


def test_equations_carry_their_chapters_numbers(book):
    text = " ".join(book["texts"])
    for label in ("1.1", "5.1", "7a.1", "7b.1", "8.1"):
        assert f"({label})" in text, f"no equation ({label}) in the PDF"


def _images(resources, found):
    """Collect the object numbers of the image XObjects under ``resources``.

    Also through forms.
    """
    resources = resources.get_object() if resources is not None else {}
    for ref in (resources.get("/XObject") or {}).values():
        xobject = ref.get_object()
        if xobject.get("/Subtype") == "/Image":
            found.add(ref.idnum)
        elif xobject.get("/Subtype") == "/Form":
            _images(xobject.get("/Resources"), found)


def test_the_chapters_figures_are_embedded(book):
    figures = {src for page in PAGES for src in book["articles"][page].images}
    embedded = set()
    for page in book["reader"].pages:
        _images(page.get("/Resources"), embedded)
    assert len(figures) >= 20, f"only {len(figures)} figures in the website?"
    assert len(embedded) >= len(figures), (
        f"{len(embedded)} images in the PDF for {len(figures)} figures"
    )


def test_internal_links_resolve(book):
    reader = book["reader"]
    names = set(reader.named_destinations)
    links = []
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") == "/Link" and "/Dest" in annot:
                links.append(str(annot["/Dest"]))
    contents_links = len(PAGES) + sum(len(a.h2) for a in book["articles"].values())
    assert len(links) >= contents_links, (
        f"{len(links)} internal links, the contents alone has {contents_links}"
    )
    assert set(links) <= names, sorted(set(links) - names)[:10]


def test_page_count_and_size_are_plausible(book):
    pages, size = len(book["reader"].pages), book["path"].stat().st_size
    assert 8 * len(PAGES) <= pages <= 600, pages
    assert size < 80e6, f"{size / 1e6:.0f} MB"
