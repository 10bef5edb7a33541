"""What a reader sees on a built page, measured in the browser (issue 32).

``audit(page, width)`` runs in a page already opened by Playwright and returns, per
rule, the list of what breaks it:

- ``uncaptioned``: a figure (an image of the article) without a caption;
- ``no_alt``: an image without alt text in words (empty, or a file name);
- ``shrunk``: an image displayed below 90 % of its natural width (at desktop width);
- ``too_wide``: an element wider than the column, or a table or printed output that
  scrolls sideways inside its box (a code cell may scroll on a phone: 88 characters;
  raw data in a toggle may scroll), or inline maths running out of its table cell or
  claim badge (except on a folded badge's one line, which is cut with an ellipsis);
- ``raw``: a raw repr in an output (``np.float64(...)``, ``array(``, ``tensor(``, a
  dict, an object address, a float printed with 10 or more decimals) or a table cell
  the reader should not see (``6.153000e+09``, ``nan``, a numeric row index);
- ``progress``: a progress-bar line in an output;
- ``sliders``: a slider whose frame does not change when it is moved.

``python tools/site_audit.py _build/html`` prints the counts for a built site (how the
counts before and after issue 32 were measured). On the pages built before issue 32
(commit e7bc887): 48 figures, 48 without a caption, 48 without alt text, 26 shown below
90 %; 68 tables or elements wider than the column over both widths; 35 progress lines;
6 printed outputs with raw reprs, 143 raw table cells, 9 tables with a numeric index.
"""

from __future__ import annotations

AUDIT_JS = r"""(width) => {
  const column = document.querySelector("article.bd-article");
  const out = {uncaptioned: [], no_alt: [], shrunk: [], too_wide: [], raw: [],
               progress: [], sliders: [], figures: 0, slider_count: 0};
  if (!column) return out;
  const what = (el) => (el.textContent || el.getAttribute("src") || "")
    .replace(/\s+/g, " ").trim().slice(0, 70);
  const visible = (el) => el.offsetWidth > 0 && el.offsetHeight > 0;
  // figures: images of the article that show (a hidden slider frame is not shown)
  for (const img of column.querySelectorAll("img")) {
    if (!visible(img)) continue;
    out.figures += 1;
    const src = (img.getAttribute("src") || "").slice(0, 60);
    const fig = img.closest("figure");
    const cap = fig && fig.querySelector("figcaption");
    if (!cap || !cap.textContent.trim()) out.uncaptioned.push(src);
    const alt = (img.getAttribute("alt") || "").trim();
    const fileName = /\.(png|svg|jpe?g|gif)$/i.test(alt) || /^[0-9a-f]{16,}/.test(alt);
    if (alt.length < 8 || fileName)
      out.no_alt.push(`${src} alt="${alt.slice(0, 40)}"`);
    const shown = img.getBoundingClientRect().width;
    // A 2x PNG gives its natural width in its style or width attribute: its size.
    const natural = parseFloat(img.style.width) || parseFloat(img.getAttribute("width"))
      || img.naturalWidth;
    if (width >= 1000 && natural > 0 && shown < 0.9 * natural)
      out.shrunk.push(
        `${Math.round(100 * shown / natural)}% (${Math.round(shown)} of ` +
        `${Math.round(natural)}px): ${src}`);
  }
  // wider than the column
  const right = column.getBoundingClientRect().right + 1;
  const scrollBox = (el) => {
    for (let a = el; a && a !== column; a = a.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(a).overflowX)) return a;
    }
    return null;
  };
  const wide = new Set();
  // a folded claim badge's one line is cut with an ellipsis (claims.css): what runs
  // past its end is clipped, not shown beyond the column
  const FOLDED = "details.claim-callout:not([open]) > summary";
  const clipped = (el) => el.closest(FOLDED) && !el.matches(FOLDED);
  for (const el of column.querySelectorAll("*")) {
    // MathJax's copy of each formula for screen readers is clipped to nothing on screen
    // (Chromium lays its MathML out at its own width, which can pass the column's edge)
    if (!visible(el) || el.closest("mjx-assistive-mml") || clipped(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.right > right && !scrollBox(el.parentElement)) wide.add(el);
    if (r.right > right && !scrollBox(el.parentElement) && !wide.has(el.parentElement))
      out.too_wide.push(`${el.tagName.toLowerCase()} ends at ${Math.round(r.right)}px` +
                        ` > ${Math.round(right)}px: ${what(el)}`);
  }
  // inline maths that runs out of its table cell or claim callout: MathJax does not
  // wrap it, and the next cell paints over the rest (the ledger at 1280 px, issue 32)
  const INLINE_MATH = 'mjx-container:not([display="true"])';
  const MATH_IN_BOXES = `td ${INLINE_MATH}, .claim-callout ${INLINE_MATH}`;
  for (const m of column.querySelectorAll(MATH_IN_BOXES)) {
    if (!visible(m) || clipped(m)) continue;
    const box = m.closest("td, .claim-callout").getBoundingClientRect();
    const over = m.getBoundingClientRect().right - box.right;
    if (over > 1)
      out.too_wide.push(`maths runs ${Math.round(over)}px out of its cell: ${what(m)}`);
  }
  const scrolls = (box) => box && box.scrollWidth > box.clientWidth + 1;
  for (const t of column.querySelectorAll("table")) {
    // raw data behind a toggle (a closed <details>) may scroll: the reader asked for it
    if (!visible(t) || t.closest("details")) continue;
    const box = scrollBox(t);
    if (scrolls(box) || t.getBoundingClientRect().width > column.clientWidth + 1)
      out.too_wide.push(`table scrolls (${t.scrollWidth}px in ` +
                        `${box ? box.clientWidth : column.clientWidth}px): ${what(t)}`);
  }
  if (width >= 1000) {
    for (const p of column.querySelectorAll("div.cell_output pre")) {
      if (visible(p) && scrolls(scrollBox(p) || p))
        out.too_wide.push(`printed output scrolls (${p.scrollWidth}px): ${what(p)}`);
    }
  }
  // raw outputs and progress lines
  const RAW = [
    [/np\.(float|int|bool_)\d*\(/, "numpy scalar repr"],
    [/(^|\n)\s*(array|tensor)\(/, "array repr"],
    [/(^|\n)\s*\{\s*['"\w.\-]+\s*:\s*[^}]/, "dict repr"],
    [/ at 0x[0-9a-f]+>/, "object repr"],
    [/(^|[^\w.])-?\d+\.\d{10,}/, "float with 10+ decimals"],
  ];
  const PROGRESS = /\d+%\|[^\n]*\||\d+(\.\d+)?(it\/s|s\/it)\]/;
  const OUTPUTS = "div.cell_output pre, div.cell_output .text_plain";
  for (const o of column.querySelectorAll(OUTPUTS)) {
    const text = o.textContent;
    for (const line of text.split("\n"))
      if (PROGRESS.test(line)) out.progress.push(line.trim().slice(0, 90));
    for (const [re, kind] of RAW)
      if (re.test(text)) out.raw.push(`${kind}: ${text.trim().slice(0, 70)}`);
  }
  for (const td of column.querySelectorAll("div.cell_output td")) {
    const t = td.textContent.trim();
    if (/^-?\d\.\d{6}e[+-]\d+$/.test(t) || /^(nan|NaN|None|<NA>)$/.test(t) ||
        /^-?\d+\.\d{7,}$/.test(t))
      out.raw.push(`table cell ${t}`);
  }
  for (const th of column.querySelectorAll("div.cell_output tbody th")) {
    if (/^\d+$/.test(th.textContent.trim())) {
      out.raw.push(`numeric row index: ${what(th.closest("table"))}`);
      break;
    }
  }
  // sliders: moving one changes its frame
  for (const s of column.querySelectorAll(".attnlib-slider")) {
    out.slider_count += 1;
    const input = s.querySelector("input[type=range]");
    const shown = () => [...s.querySelectorAll("img")].findIndex(visible);
    const before = shown();
    const to = (+input.value + 1) % (+input.max + 1);
    input.value = String(to);
    input.dispatchEvent(new Event("input", {bubbles: true}));
    const after = shown();
    if (before === -1 || after !== to || after === before)
      out.sliders.push(`slider ${s.id}: frame ${before} -> ${after}, wanted ${to}`);
    input.value = String((to + +input.max) % (+input.max + 1));
    input.dispatchEvent(new Event("input", {bubbles: true}));
  }
  return out;
}"""

RULES = ("uncaptioned", "no_alt", "shrunk", "too_wide", "raw", "progress", "sliders")


def audit(page, width: int) -> dict:
    """The reader-facing problems of the opened Playwright ``page`` at ``width`` px."""
    if page.locator(".math").count():
        page.wait_for_function(
            "window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=30000,
        )
        page.evaluate("MathJax.startup.promise")
        page.wait_for_selector(
            "html[data-math-fitted]", state="attached", timeout=30000
        )
    return page.evaluate(AUDIT_JS, width)


def main(argv=None) -> None:
    """Print the counts per page and rule for a built site folder."""
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
    parser.add_argument("-v", action="store_true", help="list every problem")
    args = parser.parse_args(argv)
    toc = yaml.safe_load((args.root / "_toc.yml").read_text())
    pages = [toc["root"]] + [
        ch["file"] for part in toc["parts"] for ch in part["chapters"]
    ]

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(args.site))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    totals = dict.fromkeys(("figures", "slider_count", *RULES), 0)
    print(f"{'page':34} {'width':>5} figs " + " ".join(f"{r[:9]:>9}" for r in RULES))
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox"]
        )
        for name in pages:
            for width in (1280, 390):
                page = b.new_page(viewport={"width": width, "height": 900})
                page.goto(f"{url}/{name}.html", wait_until="networkidle")
                found = audit(page, width)
                page.close()
                if width == 390:  # figures are counted once, at desktop width
                    for key in ("uncaptioned", "no_alt", "shrunk", "raw", "progress"):
                        found[key] = []
                    found["figures"] = found["slider_count"] = 0
                    found["sliders"] = []
                for key in totals:
                    n = found[key] if isinstance(found[key], int) else len(found[key])
                    totals[key] += n
                print(
                    f"{name:34} {width:5} {found['figures']:4} "
                    + " ".join(f"{len(found[r]):9}" for r in RULES)
                )
                if args.v:
                    for r in RULES:
                        for item in found[r]:
                            print(f"    {r}: {item}")
        b.close()
    httpd.shutdown()
    print("totals:", totals)


if __name__ == "__main__":
    main()
