"""How much of a chapter's page the checks take, and how small its figures' text is
(issue 47), measured in the browser on a built page.

``reading(page)`` runs in a page already opened by Playwright (before anything moves
its sliders) and returns:

- ``height``: the page's height in CSS px;
- ``checks``: the height of the claim badges (folded, ``details.claim-callout``), of
  the checking code still shown (a claim cell outside its badge: a ``lesson-check``
  cell, or every claim cell of a page built before issue 47, where the callout stood
  above its open cell; the images such a cell draws are not counted), and of the notes
  on the sources (the section "Notes on the
  sources", or the departures box where there is no such section);
- ``badges``, ``badge_lines``: the number of badges and the most lines a folded badge's
  summary takes;
- ``claims_ran``: for each badge, its cell's execution count (``data-exec-count``;
  ``None`` where it has none);
- ``lessons_open``: the ``lesson-check`` badges whose cell shows, open, below them;
- ``words``: the words of the prose (paragraphs and list items outside code cells,
  badges, notes, exercises and solutions; maths left out);
- ``diagram``: whether the page shows a drawn diagram, an SVG image (or inline SVG)
  inside an element of class ``diagram`` or a cell tagged ``diagram``;
- ``figures``: for every image of the article, its ``src``, natural and displayed
  width and, for an SVG, the smallest text size in the SVG's own units and its width
  in those units (``svg_text``, ``svg_width``), read from the file.

:func:`smallest_text_px` turns a figure into the CSS px of its smallest text as
displayed. ``python tools/reading_audit.py _build/html`` prints the table per chapter.
"""

from __future__ import annotations

READING_JS = r"""async () => {
  const column = document.querySelector("article.bd-article");
  const out = {height: document.documentElement.scrollHeight, checks: 0, badges: 0,
               badge_lines: 0, claims_ran: [], lessons_open: 0, words: 0,
               diagram: false, figures: []};
  if (!column) return out;
  const h = (el) => el.getBoundingClientRect().height;
  for (const box of column.querySelectorAll(".claim-callout")) {
    out.checks += h(box);
    if (box.tagName === "DETAILS") {
      out.badges += 1;
      const s = box.querySelector(":scope > summary");
      const line = parseFloat(getComputedStyle(s).lineHeight) || 20;
      out.badge_lines = Math.max(out.badge_lines, Math.round(h(s) / line));
      const n = box.getAttribute("data-exec-count");
      out.claims_ran.push(n === null || n === "" ? null : Number(n));
    }
    // the checking code shown outside its badge
    const next = box.nextElementSibling;
    const inside = box.tagName === "DETAILS" && !box.classList.contains("claim-lesson");
    if (box.classList.contains("claim-lesson") && next
        && next.classList.contains("cell") && next.offsetHeight > 0
        && !box.contains(next)) out.lessons_open += 1;
    // (its code and printed checks; a figure it draws is teaching, not checking)
    if (!inside && next && next.classList.contains("cell")) {
      out.checks += h(next);
      for (const img of next.querySelectorAll("img")) out.checks -= h(img);
    }
  }
  const notes = column.querySelector("section#notes-on-the-sources");
  const departures = column.querySelector(".admonition.departures");
  if (notes) out.checks += h(notes);
  else if (departures) out.checks += h(departures);
  const skip = ".cell, .claim-callout, #notes-on-the-sources, .departures, " +
    ".exercise, .solution, nav, figure, table";
  for (const el of column.querySelectorAll("p, li")) {
    if (el.closest(skip)) continue;
    if (el.tagName === "LI" && el.querySelector("p")) continue;
    const copy = el.cloneNode(true);
    for (const m of copy.querySelectorAll("mjx-container, .math, code")) m.remove();
    out.words += (copy.textContent.match(/[A-Za-z][A-Za-z'’-]*/g) || []).length;
  }
  const svgImage = (el) => el.tagName.toLowerCase() === "svg" ||
    /\.svg($|\?)|^data:image\/svg/.test(el.getAttribute("src") || "");
  for (const box of column.querySelectorAll(".diagram, .tag_diagram")) {
    if ([...box.querySelectorAll("img, svg")].some(svgImage)) out.diagram = true;
  }
  for (const img of column.querySelectorAll("img")) {
    if (!(img.offsetWidth > 0)) continue;
    const src = img.getAttribute("src") || "";
    const fig = {src, natural: img.naturalWidth,
                 shown: img.getBoundingClientRect().width, svg_text: null,
                 svg_width: null};
    if (svgImage(img)) {
      const text = await (await fetch(img.src)).text();
      const doc = new DOMParser().parseFromString(text, "image/svg+xml");
      const svg = doc.querySelector("svg");
      const vb = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
      fig.svg_width = vb.length === 4 ? vb[2] : parseFloat(svg.getAttribute("width"));
      const sizes = [];
      // matplotlib draws text as glyph paths, scaled from 100 units per point size
      for (const g of doc.querySelectorAll("g[id^='text_'] > g[transform]")) {
        const m = /scale\(\s*([\d.eE+-]+)/.exec(g.getAttribute("transform"));
        if (m) sizes.push(Math.abs(Number(m[1])) * 100);
      }
      for (const t of doc.querySelectorAll("text")) {
        const style = (t.getAttribute("style") || "") + ";" +
          (t.getAttribute("font-size")
            ? `font-size:${t.getAttribute("font-size")}` : "");
        const m = /font-size\s*:\s*([\d.]+)/.exec(style) ||
          /font\s*:[^;]*?([\d.]+)px/.exec(style);
        if (m) sizes.push(Number(m[1]));
      }
      if (sizes.length) fig.svg_text = Math.min(...sizes);
    }
    out.figures.push(fig);
  }
  return out;
}"""


def reading(page) -> dict:
    """The measurements above, for the opened Playwright ``page``."""
    return page.evaluate(READING_JS)


def raster_text_points() -> float:
    """The smallest text the book's figure style sets, in points (tick labels, legend,
    body text: matplotlib's rcParams after ``use_book_style``)."""
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    from attnlib.plotting import use_book_style

    with mpl.rc_context():
        use_book_style()
        keys = (
            "font.size",
            "xtick.labelsize",
            "ytick.labelsize",
            "legend.fontsize",
            "axes.labelsize",
            "axes.titlesize",
        )
        return min(
            FontProperties(size=mpl.rcParams[k]).get_size_in_points() for k in keys
        )


def smallest_text_px(fig: dict, dpi: float | None, points: float) -> float | None:
    """The CSS px of a figure's smallest text as the page displays it.

    An SVG: its smallest text size in its own units, times its displayed width over its
    width in those units. A raster image of ``dpi`` dots per inch (100 when unknown)
    whose smallest text is ``points`` pt: ``points / 72 * dpi`` natural pixels, times
    the displayed over the natural width.
    """
    if fig.get("svg_width"):
        if fig.get("svg_text") is None:
            return None
        return fig["svg_text"] * fig["shown"] / fig["svg_width"]
    if not fig.get("natural"):
        return None
    return points / 72 * (dpi or 100) * fig["shown"] / fig["natural"]


def png_dpi(data: bytes) -> float | None:
    """The dots per inch a PNG records (matplotlib writes its figure's dpi), or None."""
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            dpi = image.info.get("dpi")
    except OSError:
        return None
    return float(dpi[0]) if dpi and dpi[0] > 1 else None


def image_bytes(site, page_name: str, src: str) -> bytes | None:
    """The bytes of an image ``src`` of the page ``page_name`` of the built ``site``."""
    import base64
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    if src.startswith("data:"):
        header, _, payload = src.partition(",")
        return base64.b64decode(payload) if ";base64" in header else payload.encode()
    path = (Path(site) / page_name).parent / unquote(urlparse(src).path)
    return path.read_bytes() if path.exists() else None


def main(argv=None) -> None:
    """Print, per chapter of a built site, what the tests of issue 47 measure."""
    import argparse
    import functools
    import http.server
    import threading
    from pathlib import Path

    import yaml
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--root", type=Path, default=Path(__file__).parents[1])
    parser.add_argument("--shots", type=Path, help="full-page screenshots here")
    args = parser.parse_args(argv)
    toc = yaml.safe_load((args.root / "_toc.yml").read_text())
    pages = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    chapters = [p for p in pages if (args.root / f"{p}.ipynb").exists()]

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(args.site))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    points = raster_text_points()
    print("chapter  height(1280)  checks  share  badges  words  diagram  min text@390")
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox"]
        )
        for name in chapters:
            row = {}
            for width in (1280, 390):
                page = b.new_page(viewport={"width": width, "height": 900})
                page.goto(f"{url}/{name}.html", wait_until="networkidle")
                row[width] = reading(page)
                if args.shots:
                    args.shots.mkdir(parents=True, exist_ok=True)
                    stem = Path(name).name
                    page.screenshot(path=str(args.shots / f"{stem}-{width}.png"))
                page.close()
            d, m = row[1280], row[390]
            sizes = []
            for fig in m["figures"]:
                data = (
                    None
                    if fig["svg_width"]
                    else image_bytes(args.site, name, fig["src"])
                )
                px = smallest_text_px(fig, data and png_dpi(data), points)
                if px is not None:
                    sizes.append(px)
            print(
                f"{Path(name).name[:8]:8} {d['height']:12.0f} {d['checks']:7.0f} "
                f"{d['checks'] / d['height']:6.1%} {d['badges']:7} {d['words']:6} "
                f"{'yes' if d['diagram'] else 'no':>8} "
                f"{min(sizes) if sizes else float('nan'):10.1f}"
            )
        b.close()
    httpd.shutdown()


if __name__ == "__main__":
    main()
