"""The small HTML touches of book/_ext/reader.py, on planted markup."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from reader import break_names_at_dots, hang_wrapped_lines  # noqa: E402

BLOCK = (
    '<div class="highlight"><pre><span></span><span class="k">for</span> x '
    '<span class="ow">in</span> y:\n'
    '    <span class="n">f</span>(x)\n'
    "\n"
    '<span class="s2">"""two\nlines"""</span>\n'
    "</pre></div>"
)


def _text(html: str) -> str:
    return re.sub(r"<[^>]*>", "", html)


def test_each_code_line_carries_its_indentation_and_the_text_is_unchanged():
    out = hang_wrapped_lines("<p>a.b</p>" + BLOCK)
    assert _text(out) == _text("<p>a.b</p>" + BLOCK)  # what is copied stays the same
    lines = re.findall(r'<span class="cl" style="--i:(\d+)">', out)
    assert lines == ["0", "4", "0", "0"]  # the string over two lines is kept whole
    assert '--i:0">&' not in out and "two\nlines" in out


def test_code_outside_highlighted_blocks_is_left_alone():
    assert hang_wrapped_lines("<pre>plain\n    text\n</pre>") == (
        "<pre>plain\n    text\n</pre>"
    )


def test_names_break_at_their_dots_only():
    html = '<span class="pre">attnlib.functional.attention</span> 1.5'
    assert break_names_at_dots(html) == (
        '<span class="pre">attnlib.<wbr>functional.<wbr>attention</span> 1.5'
    )
