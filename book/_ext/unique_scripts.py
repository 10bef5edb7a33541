"""Drop repeated ``<script>`` tags from every page.

sphinx-thebe 0.3.1 (and sphinx-togglebutton) register their inline scripts twice under
Sphinx 7.4 (once with filename None, once with ""); the thebe copy re-declares a
``const``, which the browser reports as an error on every page.
"""


def _unique_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        # Inline scripts come once with filename None and once with "": treat both
        # alike.
        key = (
            getattr(script, "filename", script) or "",
            str(getattr(script, "attributes", "")),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def setup(app):
    app.connect("html-page-context", _unique_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
