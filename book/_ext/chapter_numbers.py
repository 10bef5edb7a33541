"""Number equations, figures and tables by chapter: (5.3), Fig. 7b.2, Table 3.1.

Without a numbered table of contents Sphinx counts them through the whole book (07b's
equations were numbered in the thirties); a numbered table of contents would instead
call 07a, 07b and 08 chapters 7, 8 and 9 and print those numbers before titles that
already carry their own. So the chapter's label is taken from its file name
(``book/07b_continuous_attention`` gives ``7b``) and every numbered object of that page
is renumbered from 1 under that label, after Sphinx has assigned its book-wide numbers.
Pages that are not chapters (preface, closing, appendices) number from 1 without a
prefix. Equation numbers, ``{eq}`` and ``{numref}`` references all read these numbers.
"""

import re

_CHAPTER = re.compile(r"(?:^|/)0*(\d+[a-z]?)_[^/]+$")


def chapter_label(docname: str) -> str | None:
    """``"7b"`` for ``book/07b_continuous_attention``; None for a page not a chapter."""
    match = _CHAPTER.search(docname)
    return match.group(1) if match else None


def _renumber(app, env):
    changed = []
    for docname, by_type in env.toc_fignumbers.items():
        label = chapter_label(docname)
        for numbers in by_type.values():
            ordered = sorted(numbers, key=numbers.get)  # document order
            new = {
                ident: (label, i) if label else (i,)
                for i, ident in enumerate(ordered, 1)
            }
            if new != numbers:
                numbers.clear()
                numbers.update(new)
                changed.append(docname)
    return changed


def setup(app):
    # After Sphinx's own numbering (TocTreeCollector, priority 500) has run.
    app.connect("env-get-updated", _renumber, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
