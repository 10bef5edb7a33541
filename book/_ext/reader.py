"""Small HTML touches for readers, applied to every page's body.

Names break only at dots: inline code and API signatures
(``attnlib.functional.attention``) get a line-break opportunity (``<wbr>``) after each
dot between two name characters, so that a long name wraps as ``attnlib.`` /
``attention`` on a phone instead of mid-word (``_static/book.css`` no longer lets words
break anywhere). ``<wbr>`` is not copied with the text, unlike a zero-width space.

On a phone a long code line wraps (``_static/book.css``); its continuation is indented
two columns past the line's own indentation, so that the shape of the code survives the
wrap (:func:`hang_wrapped_lines`: each line of a highlighted block becomes a
``span.cl`` that carries its indentation as ``--i``; desktops see no change, and copying
keeps the text as it was).

The API reference leaves out named tuples' field aliases and members inherited from
PyTorch (:func:`skip_member`).
"""

from __future__ import annotations

import re

_PRE = re.compile(r'(<span class="pre">)([^<]*)(</span>)')
_DOT = re.compile(r"(?<=[\w)\]])\.(?=[A-Za-z_])")


def _wbr(match: re.Match) -> str:
    return match.group(1) + _DOT.sub(".<wbr>", match.group(2)) + match.group(3)


def break_names_at_dots(html: str) -> str:
    """``html`` with ``<wbr>`` after the dots of the names in ``span.pre`` elements."""
    return _PRE.sub(_wbr, html)


_BLOCK = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre>)', re.S)
_TAG = re.compile(r"<[^>]*>")


def _lines(body: str) -> str:
    """A highlighted block's lines, each in a ``span.cl`` that knows its indentation."""
    pieces, out, line = body.split("\n"), [], ""
    for i, piece in enumerate(pieces):
        line += piece
        opened = len(re.findall(r"<span\b", line)) - line.count("</span>")
        if i == len(pieces) - 1:
            out.append(line)  # after the last line break: usually nothing
        elif opened > 0:
            line += "\n"  # a token that runs over lines (a string): keep it whole
        else:
            indent = len(_TAG.sub("", line)) - len(_TAG.sub("", line).lstrip(" "))
            out.append(
                f'<span class="cl" style="--i:{min(indent, 40)}">{line}</span>\n'
            )
            line = ""
    return "".join(out)


def hang_wrapped_lines(html: str) -> str:
    """``html`` with every line of its highlighted code blocks in a ``span.cl``."""
    return _BLOCK.sub(lambda m: m.group(1) + _lines(m.group(2)) + m.group(3), html)


def _page_context(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = hang_wrapped_lines(break_names_at_dots(context["body"]))


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("autodoc-skip-member", skip_member)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def skip_member(app, what, name, obj, skip, options):
    """Leave out of the API reference what is not attnlib's: a named tuple's field
    aliases ("Alias for field number N"; the class's docstring lists its fields) and
    members a class inherits from PyTorch or the standard library."""
    doc = getattr(obj, "__doc__", None) or ""
    if what == "class" and doc.startswith("Alias for field number"):
        return True
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and module.split(".")[0] in ("torch", "builtins", "typing"):
        return True
    return None
