"""The website: built with every chapter executed, then opened in a real browser.

The build runs once per test session (conftest's ``built_book``, shared with
test_pdf.py) with nitpicky warnings as errors and execution errors raised; every page is
then served on loopback and opened in headless Chromium (Debian's, driven by Playwright)
at desktop and phone widths: no console errors, math typeset, images loaded, no sideways
scrolling, no display equation wider than its box and no table or code block beyond the
column, Colab buttons pointing at the chapter's notebook on ``main``; the search finds
"sparsemax"; every internal link and anchor of the built site resolves. Screenshots are
written to ``_build/screenshots`` for people to look at.
"""

import functools
import http.server
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest
import yaml
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
PAGES = [TOC["root"]] + [ch["file"] for part in TOC["parts"] for ch in part["chapters"]]


@pytest.fixture(scope="module")
def site(built_book):
    """The whole book built (every notebook executed), warnings as errors (conftest)."""
    assert built_book["site_returncode"] == 0, (
        "the book did not build cleanly:\n" + built_book["site_report"]
    )
    return built_book["site"]


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), (
        "Debian's chromium is missing: `make test` installs it (apt-get install "
        "chromium)"
    )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_site_has_every_page(site):
    assert (site / "index.html").exists()
    for page in PAGES:
        assert (site / f"{page}.html").exists(), page
    assert (site / "mathjax" / "tex-chtml.js").exists(), "MathJax is served by the site"


WIDTHS = {"desktop": 1280, "phone": 390}

# What does not fit the column. A display equation must fit its own box (no sideways
# scrolling: it is broken into lines or drawn smaller); a table or a code block may
# scroll inside its own box (88-character code lines cannot fit a phone), but that box
# must lie within the column.
TOO_WIDE = """() => {
  const column = document.querySelector("article.bd-article");
  if (!column) return [];
  const right = column.getBoundingClientRect().right + 1;
  const bad = [];
  const what = (el) => (el.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 60);
  for (const el of column.querySelectorAll('mjx-container[display="true"]')) {
    if (el.scrollWidth > el.clientWidth + 1) {
      bad.push(
        `equation ${el.scrollWidth}px wide in a ${el.clientWidth}px box: ${what(el)}`);
    }
    if (el.getBoundingClientRect().right > right) {
      bad.push(`equation beyond the column: ${what(el)}`);
    }
  }
  for (const el of column.querySelectorAll("table, pre")) {
    let box = el;  // the element, or the nearest ancestor that scrolls it
    for (let a = el.parentElement; a && a !== column; a = a.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(a).overflowX)) {
        box = a;
        break;
      }
    }
    if (box.getBoundingClientRect().right > right) {
      bad.push(`${el.tagName.toLowerCase()} beyond the column: ${what(el)}`);
    }
  }
  return bad;
}"""


def _open(browser, url, width=1280):
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    page.on(
        "console", lambda m: m.type == "error" and problems.append(f"console: {m.text}")
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(url, wait_until="networkidle")
    return page, problems


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_page_in_browser(server, browser, name, width):
    page, problems = _open(browser, f"{server}/{name}.html", WIDTHS[width])
    has_math = page.locator(".math").count() > 0
    if has_math:
        page.wait_for_function(
            "window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=30000,
        )
        page.evaluate("MathJax.startup.promise")
        unrendered = page.locator(".math:not(:has(mjx-container))").count()
        assert unrendered == 0, f"{unrendered} math elements were not typeset"
        assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        # _static/fit-math.js breaks or shrinks display equations wider than the column.
        page.wait_for_selector(
            "html[data-math-fitted]", state="attached", timeout=30000
        )
        assert page.locator("mjx-merror").count() == 0, (
            "a refitted equation has a TeX error"
        )
    too_wide = page.evaluate(TOO_WIDE)
    assert too_wide == [], f"at {WIDTHS[width]}px:\n" + "\n".join(too_wide)
    broken = page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i "
        "=> i.src)"
    )
    assert broken == [], f"images that did not load: {broken}"
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, (
        f"the page scrolls sideways by {overflow}px at {WIDTHS[width]}px"
    )
    if (ROOT / f"{name}.ipynb").exists():
        repo = CONFIG["repository"]["url"].removeprefix("https://github.com/")
        colab = (
            f"https://colab.research.google.com/github/{repo}/blob/main/{name}.ipynb"
        )
        assert page.locator(f'a[href="{colab}"]').count() == 1, (
            f"no Colab button to {colab}"
        )
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(SHOTS / f"{Path(name).name}-{width}.png"), full_page=width == "desktop"
    )
    page.close()
    assert problems == [], "\n".join(problems)


def test_search_finds_sparsemax(server, browser):
    page, problems = _open(browser, f"{server}/search.html?q=sparsemax")
    page.wait_for_selector("#search-results ul.search li", timeout=30000)
    hits = page.locator("#search-results ul.search li a").all_inner_texts()
    page.close()
    assert any("Sparse attention" in hit for hit in hits), hits
    assert problems == [], "\n".join(problems)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_every_internal_link_and_anchor_resolves(site):
    pages = {p: _parse(p) for p in site.rglob("*.html") if "_static" not in p.parts}
    dead = []
    for page, parsed in pages.items():
        for href in parsed.links:
            if urlparse(href).scheme or href.startswith(("mailto:", "javascript:")):
                continue
            target, fragment = urldefrag(href)
            path = (page.parent / unquote(target)).resolve() if target else page
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                dead.append(f"{page.relative_to(site)} -> {href}")
            elif fragment and path.suffix == ".html":
                # parsed once: the target of every link is among the pages parsed above
                target_ids = pages[path].ids if path in pages else _parse(path).ids
                if unquote(fragment) in target_ids:
                    continue
                dead.append(f"{page.relative_to(site)} -> {href} (no such anchor)")
    assert dead == [], "\n".join(dead)


CHAPTERS = [name for name in PAGES if (ROOT / f"{name}.ipynb").exists()]


@pytest.mark.parametrize("name", CHAPTERS)
def test_solutions_print_no_warning(server, browser, name):
    page, _ = _open(browser, f"{server}/{name}.html")
    # textContent, not innerText: the solutions are collapsed dropdowns
    printed = page.locator(".solution .stderr").evaluate_all(
        "outputs => outputs.map(o => (o.querySelector('pre') || o).textContent.trim())"
    )
    page.close()
    assert printed == [], "a solution prints on stderr:\n" + "\n".join(printed)


def test_the_ledger_links_every_claim_cell_and_the_preface_counts_them(site):
    """Every claim cell of the notebooks has its anchor on its page and its row in the
    ledger; the preface's count is the notebooks' (built by book/_ext/claims.py)."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import claims_lib

    claims = claims_lib.all_claims(ROOT)
    ledger = (site / "book" / "claims.html").read_text(encoding="utf-8")
    errata = (site / "book" / "errata.html").read_text(encoding="utf-8")
    for c in claims:
        page = (site / "book" / f"{c.notebook.stem}.html").read_text(encoding="utf-8")
        assert f'id="{c.anchor}"' in page, f"{c.notebook.name}: no anchor {c.anchor}"
        assert f'href="{c.notebook.stem}.html#{c.anchor}"' in ledger, c.statement
        if c.erratum:
            assert f'href="{c.notebook.stem}.html#{c.anchor}"' in errata, c.erratum
    assert f"<strong>{len(claims)} claim" in ledger
    counts = (site / "book" / "index.html").read_text(encoding="utf-8")
    assert f'<span class="claims-count">{len(claims)}</span>' in counts
