"""Data frames formatted for readers."""

from __future__ import annotations

from ..utils import check_int

__all__ = ["table"]


def table(
    df,
    *,
    precision: int = 3,
    headers: dict | None = None,
    formats: dict | None = None,
    index: bool = False,
    na: str = "—",
    caption: str | None = None,
):
    """A data frame formatted for readers: words for headers, fixed decimals, no index.

    Parameters
    ----------
    df : pandas DataFrame
        The table.
    precision : int
        Decimals of every float column without an entry in ``formats``.
    headers : dict, optional
        ``{column: header}``: the words a reader sees instead of the column names
        (columns not named keep their names, with underscores as spaces).
    formats : dict, optional
        ``{column: format}`` for particular columns, e.g. ``{"time": "{:.2e}"}`` or a
        callable.
    index : bool
        Show the row index (default: hidden; name rows with a column instead).
    na : str
        Shown for missing values.
    caption : str, optional
        The table's caption.

    Returns
    -------
    pandas Styler
        Displays as an HTML table that wraps its headers to fit the column.
    """
    import pandas as pd  # only the tables need pandas

    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    precision = check_int(precision, "precision", minimum=0)
    if precision > 12:
        raise ValueError(f"precision must be at most 12, got {precision}")
    headers = dict(headers or {})
    unknown = set(headers) - set(df.columns)
    if unknown:
        raise ValueError(
            f"headers names columns not in df: {sorted(map(str, unknown))}"
        )
    formats = dict(formats or {})
    unknown = set(formats) - set(df.columns)
    if unknown:
        raise ValueError(
            f"formats names columns not in df: {sorted(map(str, unknown))}"
        )
    names = {
        c: headers.get(c, str(c).replace("_", " ") if isinstance(c, str) else c)
        for c in df.columns
    }
    out = df.rename(columns=names)
    styler = out.style.format(precision=precision, na_rep=na)
    fixed = {names[c]: f for c, f in formats.items()}
    if fixed:  # only these columns: the others keep ``precision``
        styler = styler.format(fixed, na_rep=na, subset=list(fixed))
    if not index:
        styler = styler.hide(axis="index")
    if caption:
        styler = styler.set_caption(caption)
    numbers = [names[c] for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
    # numbers right-aligned under right-aligned headers, words left-aligned
    styler = styler.set_properties(subset=numbers, **{"text-align": "right"})
    styler = styler.set_table_attributes('class="attnlib-table"').set_table_styles(
        [{"selector": "th", "props": "white-space: normal; text-align: left;"}]
    )
    return styler.set_table_styles(
        {name: [{"selector": "th", "props": "text-align: right;"}] for name in numbers},
        overwrite=False,
    )
