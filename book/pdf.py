"""Print the built website as one PDF: the book's reader's edition (``make pdf``).

    python book/pdf.py --site _build/html --output
    _build/html/book/attention-before-attention.pdf

The pages of ``_toc.yml`` are read from the built site (so every chapter appears with
its executed outputs and figures), their articles are assembled in order into one HTML
file beside them, behind a title page and a table of contents, with every id and
internal link rewritten to point inside that one file. Debian's Chromium (the one the
website tests drive through Playwright) typesets the math with the site's own MathJax
and prints it, with bookmarks from the headings, page numbers in the footer and working
internal links. A first print finds the page on which each chapter starts; the second
prints those numbers into the contents.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import logging
import posixpath
import re
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parent.parent
# Chromium's cross-reference table is slightly off by pypdf's count; pypdf repairs it
# quietly.
logging.getLogger("pypdf").setLevel(logging.ERROR)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ASSEMBLED = ".print.html"  # written beside the pages while printing, removed afterwards

PRINT_CSS = """
@page { size: A4; margin: 16mm 15mm 18mm 15mm; }
html, body { background: white !important; }
body { font-size: 10.5pt; margin: 0; }
.pdf-book { max-width: none; padding: 0; }
.pdf-page { break-before: page; }
.pdf-title { height: 230mm; display: flex; flex-direction: column;
             justify-content: center; text-align: center; }
.pdf-title h1 { font-size: 34pt; margin-bottom: 0.4em; }
.pdf-title .subtitle { font-size: 15pt; font-style: italic; }
.pdf-title .meta { margin-top: 3em; font-size: 11pt; color: #444; }
.pdf-contents ol { list-style: none; padding-left: 0; }
.pdf-contents li.part { font-weight: bold; margin-top: 1.1em; }
.pdf-contents li.chapter { display: flex; margin: 0.25em 0; }
.pdf-contents li.chapter a { flex: 1 1 auto; }
.pdf-contents li.section { display: flex; margin: 0.1em 0 0.1em 1.6em;
                           font-size: 0.92em; }
.pdf-contents li.section a { flex: 1 1 auto; }
.pdf-contents .page-number { flex: 0 0 auto; padding-left: 1em; }
a { text-decoration: none; }
h1 { break-after: avoid; }
h2, h3, h4 { break-after: avoid; break-inside: avoid; }
img, figure, .cell_output img { max-width: 100% !important; height: auto;
                                break-inside: avoid; }
div.highlight pre, pre { white-space: pre-wrap !important; word-break: break-word;
                         font-size: 8.6pt; overflow: visible !important; }
.cell, .admonition, table, mjx-container[display="true"] { break-inside: avoid; }
.pst-scrollable-table-container, .table-wrapper { overflow: visible !important; }
table { font-size: 9pt; }
.headerlink, .copybtn, .toggle-button, button, .dropdown-toggle-button {
  display: none !important; }
.toggle-hidden, .admonition.dropdown > :not(.admonition-title) {
  display: block !important; visibility: visible !important; }
"""

HEADER = (
    '<div style="font-size:7.5pt;width:100%;margin:0 15mm;color:#777;'
    'font-family:sans-serif;">{title}</div>'
)
FOOTER = (
    '<div style="font-size:8pt;width:100%;text-align:center;color:#444;'
    'font-family:sans-serif;">'
    '<span class="pageNumber"></span></div>'
)


def toc_pages(root: Path = ROOT) -> list[tuple[str | None, str]]:
    """``(part caption or None, docname)`` of each ``_toc.yml`` page, reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    pages = [(None, toc["root"])]
    for part in toc.get("parts", []):
        pages += [
            (part.get("caption"), chapter["file"]) for chapter in part["chapters"]
        ]
    return pages


def _slug(docname: str) -> str:
    return docname.replace("/", "--")


def _rewrite(article, docname: str, pages: set[str], here: str) -> None:
    """Namespace ids by page; point links to book pages into the assembled file."""
    slug = _slug(docname)
    for tag in article.find_all(id=True):
        tag["id"] = f"{slug}--{tag['id']}"
    base = docname + ".html"
    for tag in article.find_all(["a", "img", "source", "link"]):
        attr = "href" if tag.name in ("a", "link") else "src"
        url = tag.get(attr)
        if (
            not url
            or urlparse(url).scheme
            or url.startswith(("mailto:", "data:", "javascript:"))
        ):
            continue
        target, fragment = urldefrag(urljoin(base, url))
        target = unquote(target)
        doc = target.removesuffix(".html")
        if tag.name == "a" and doc in pages:
            tag[attr] = f"#{_slug(doc)}--{fragment}" if fragment else f"#{_slug(doc)}"
        elif tag.name == "a" and target.endswith(".html"):
            del tag[
                attr
            ]  # a site page that is not in the book (search, index): plain text
        else:
            tag[attr] = posixpath.relpath(target, posixpath.dirname(here) or ".")


def _clean(article) -> None:
    """Drop what is for the screen (buttons, hidden setup inputs); unfold what folds."""
    for selector in (
        "a.headerlink",
        "details.hide.above-input",
        "script",
        ".tag_setup .cell_input",
        "button",
        "#searchbox",
    ):
        for tag in article.select(selector):
            tag.decompose()
    for tag in article.find_all("details"):
        tag["open"] = ""
    for tag in article.select(".toggle-hidden"):
        tag["class"] = [c for c in tag["class"] if c != "toggle-hidden"]


def _plain(text: str) -> str:
    """A heading as plain text for a bookmark: inline TeX made readable, tidy spaces."""

    def untex(match):
        tex = match.group(1)
        for macro, char in (
            ("\\top", "ᵀ"),
            ("\\mathbb{R}", "ℝ"),
            ("\\alpha", "α"),
            ("\\,", " "),
        ):
            tex = tex.replace(macro, char)
        return re.sub(r"\\([A-Za-z]+)", r"\1", tex).replace("{", "").replace("}", "")

    return " ".join(re.sub(r"\\\((.*?)\\\)", untex, text).split())


def assemble(site: Path, root: Path = ROOT, page_numbers: dict[str, int] | None = None):
    """The whole book as one HTML document, to be saved in the folder of the root page,
    and its outline: ``[(title, anchor, [(section title, anchor), ...]), ...]`` in
    reading order."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    pages = toc_pages(root)
    names = {doc for _, doc in pages}
    here = posixpath.join(posixpath.dirname(pages[0][1]), ASSEMBLED)
    first = BeautifulSoup(
        (site / f"{pages[0][1]}.html").read_text(encoding="utf-8"), "html.parser"
    )
    head = [str(t) for t in first.head.find_all("link", rel="stylesheet")]
    head += [
        str(t)
        for t in first.head.find_all("script")
        if "MathJax" in (t.string or "")
        or "mathjax" in (t.get("src") or "")
        or "fit-math" in (t.get("src") or "")
    ]
    numbers = page_numbers or {}
    contents, body, subtitle, outline = [], [], "", []
    part_seen = None
    for part, doc in pages:
        soup = BeautifulSoup(
            (site / f"{doc}.html").read_text(encoding="utf-8"), "html.parser"
        )
        article = soup.select_one("article.bd-article")
        _clean(article)
        h1 = article.find("h1")
        title = h1.get_text(" ", strip=True) if h1 else doc
        if part is None and doc == pages[0][1]:
            lead = article.find("p")
            subtitle = (
                lead.get_text(" ", strip=True) if lead and lead.find("em") else ""
            )
            title = "Preface"
            if h1:
                h1.string = title
        sections = [
            (h2.get_text(" ", strip=True), f"{_slug(doc)}--{h2.parent['id']}")
            for h2 in article.find_all("h2")
            if h2.parent.get("id")
        ]
        _rewrite(article, doc, names, here)
        if part and part != part_seen:
            contents.append(f'<li class="part">{html.escape(part)}</li>')
            part_seen = part
        contents.append(
            f'<li class="chapter"><a href="#{_slug(doc)}">{html.escape(title)}</a>'
            f'<span class="page-number">{numbers.get(_slug(doc), "")}</span></li>'
        )
        for text, anchor in sections:
            contents.append(
                f'<li class="section"><a href="#{anchor}">{html.escape(text)}</a>'
                f'<span class="page-number">{numbers.get(anchor, "")}</span></li>'
            )
        outline.append(
            (_plain(title), _slug(doc), [(_plain(t), a) for t, a in sections])
        )
        body.append(
            f'<section class="pdf-page" id="{_slug(doc)}" data-doc="{doc}">'
            f"{article.decode_contents()}</section>"
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.strip()
    meta = " · ".join(
        x
        for x in (
            config.get("author", ""),
            f"© {config.get('copyright', '')}",
            f"built {time.strftime('%Y-%m-%d')}"
            + (f" from {commit}" if commit else ""),
        )
        if x
    )
    title_page = (
        '<section class="pdf-title">'
        f'<h1 id="pdf-title">{html.escape(config["title"])}</h1>'
        f'<p class="subtitle">{html.escape(subtitle)}</p>'
        f'<p class="meta">{html.escape(meta)}</p>'
        f'<p class="meta">{html.escape(config["repository"]["url"])}</p>'
        '<p class="meta"><a href="#pdf-contents">Contents</a></p></section>'
    )
    contents_page = (
        '<section class="pdf-page pdf-contents" id="pdf-contents"><h1>Contents</h1>'
        f"<ol>{''.join(contents)}</ol></section>"
    )
    document = (
        '<!DOCTYPE html>\n<html lang="en" data-theme="light" data-mode="light"><head>'
        f'<meta charset="utf-8"><title>{html.escape(config["title"])}</title>'
        + "".join(head)
        + f"<style>{PRINT_CSS}</style></head>"
        + '<body><main class="pdf-book bd-article">'
        + title_page
        + contents_page
        + "".join(body)
        + "</main></body></html>"
    )
    return document, [("Contents", "pdf-contents", [])] + outline


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _print(browser, url: str, output: Path, title: str) -> None:
    # The width of A4's text column (180 mm at 96 px per inch), so that
    # _static/fit-math.js breaks or shrinks the equations that would not fit the printed
    # column.
    page = browser.new_page(viewport={"width": 680, "height": 1000})
    page.goto(url, wait_until="networkidle")
    page.wait_for_function(
        "window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60000
    )
    page.evaluate("MathJax.startup.promise")
    page.wait_for_selector("html[data-math-fitted]", state="attached", timeout=120000)
    errors = page.locator("mjx-merror").count()
    if errors:
        raise RuntimeError(
            f"MathJax could not typeset {errors} formulas of the assembled book"
        )
    page.wait_for_function("[...document.images].every(i => i.complete)", timeout=60000)
    page.emulate_media(media="print")
    page.pdf(
        path=str(output),
        format="A4",
        print_background=True,
        outline=True,
        tagged=True,
        display_header_footer=True,
        header_template=HEADER.format(title=html.escape(title)),
        footer_template=FOOTER,
        margin={"top": "16mm", "bottom": "18mm", "left": "15mm", "right": "15mm"},
    )
    page.close()


def destinations(pdf: Path) -> dict[str, int]:
    """1-based page of every named destination (an id a link of the book points to)."""
    from pypdf import PdfReader

    reader = PdfReader(str(pdf))
    return {
        name.lstrip("/"): reader.get_destination_page_number(dest) + 1
        for name, dest in reader.named_destinations.items()
    }


def write_outline(pdf: Path, outline) -> None:
    """Replace Chromium's bookmarks (built from headings, with doubled titles) by the
    book's: one per page of the table of contents, one per section under it."""
    from pypdf import PdfReader, PdfWriter

    pages = destinations(pdf)
    writer = PdfWriter(clone_from=PdfReader(str(pdf)))
    writer.root_object.pop("/Outlines", None)
    for title, anchor, sections in outline:
        parent = writer.add_outline_item(
            title=title, page_number=pages.get(anchor, 2) - 1
        )
        for text, section in sections:
            if section in pages:
                writer.add_outline_item(
                    title=text, page_number=pages[section] - 1, parent=parent
                )
    writer.page_mode = "/UseOutlines"
    with open(pdf, "wb") as out:
        writer.write(out)


def build(site: Path, output: Path, root: Path = ROOT) -> Path:
    """Assemble, typeset and print the book; return the PDF's path."""
    from playwright.sync_api import sync_playwright

    site, output = site.resolve(), output.resolve()
    pages = toc_pages(root)
    title = yaml.safe_load((root / "_config.yml").read_text())["title"]
    assembled = site / posixpath.dirname(pages[0][1]) / ASSEMBLED
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/{posixpath.dirname(pages[0][1])}/{ASSEMBLED}"
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            document, _ = assemble(site, root)
            assembled.write_text(document, encoding="utf-8")
            _print(browser, url, output, title)
            document, outline = assemble(site, root, destinations(output))
            assembled.write_text(document, encoding="utf-8")
            _print(browser, url, output, title)
            browser.close()
        write_outline(output, outline)
    finally:
        httpd.shutdown()
        assembled.unlink(missing_ok=True)
    return output


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site", type=Path, default=ROOT / "_build" / "html", help="the built website"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=ROOT / "_build" / "html" / "book" / "attention-before-attention.pdf",
    )
    args = parser.parse_args(argv)
    if not (args.site / "index.html").exists():
        parser.error(f"no built website in {args.site}: run `make book` first")
    start = time.monotonic()
    pdf = build(args.site, args.output)
    print(
        f"{pdf} ({pdf.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
