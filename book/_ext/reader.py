"""Small HTML touches for readers, applied to every page's body.

Names break only at dots: inline code and API signatures
(``attnlib.functional.attention``) get a line-break opportunity (``<wbr>``) after each
dot between two name characters, so that a long name wraps as ``attnlib.`` /
``attention`` on a phone instead of mid-word (``_static/book.css`` no longer lets words
break anywhere). ``<wbr>`` is not copied with the text, unlike a zero-width space.

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


def _page_context(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = break_names_at_dots(context["body"])


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
