"""Captioned, numbered tables that read the same in the built book and in a notebook.

A chapter shows a table by ending a cell with :func:`book_table`. The object it returns carries
two representations: MyST Markdown (a ``table`` directive with a caption and a label), which the
book renders as a numbered table that the text can cite with ``{numref}``, and HTML with a
``<caption>``, which Jupyter shows when the chapter is opened as a notebook. The book's
configuration asks myst-nb to prefer the Markdown and to parse it as MyST.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import pandas as pd

from ._validation import check_real

_LABEL = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class BookTable:
    """A table with its caption and cross-reference label.

    Attributes
    ----------
    frame : pandas.DataFrame
        The cells, already formatted as the reader should see them.
    caption : str
        One or two sentences that say what the table shows (MyST Markdown is allowed).
    label : str
        The target name, cited in the text as ``{numref}`label```.
    index : bool
        Whether the frame's index is shown as the first column(s).
    """

    frame: pd.DataFrame
    caption: str
    label: str
    index: bool = False

    def _repr_markdown_(self) -> str:
        body = self.frame.to_markdown(index=self.index, disable_numparse=True)
        return f":::{{table}} {self.caption}\n:name: {self.label}\n\n{body}\n:::\n"

    def _repr_html_(self) -> str:
        table = self.frame.to_html(index=self.index, border=0, escape=True)
        caption = f"<caption>{html.escape(self.caption)}</caption>"
        return table.replace(">", ">" + caption, 1)


def book_table(frame: pd.DataFrame, caption: str, label: str, *, index: bool = False) -> BookTable:
    """Wrap a formatted DataFrame as a captioned, labelled table for the book.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table, with every cell formatted as it should read (strings or numbers).
    caption : str
        What the table shows; it must not contain a line break.
    label : str
        Lower-case letters, digits and hyphens, starting with a letter (for example
        ``"tab-attendance"``); unique in the book.
    index : bool, default False
        Show the frame's index as its first column(s).

    Returns
    -------
    BookTable
        Display it as a cell's last value.

    Raises
    ------
    TypeError
        If ``frame`` is not a DataFrame or ``caption``/``label`` are not strings.
    ValueError
        If the frame is empty, the caption is empty or spans lines, or the label is malformed.

    Examples
    --------
    >>> import pandas as pd
    >>> table = book_table(pd.DataFrame({"patients": [12]}), "Cohort size.", "tab-size")
    >>> print(table._repr_markdown_().splitlines()[:2])
    [':::{table} Cohort size.', ':name: tab-size']
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    if frame.empty:
        raise ValueError("frame must have at least one row and one column")
    if not isinstance(caption, str) or not isinstance(label, str):
        raise TypeError("caption and label must be strings")
    if not caption.strip() or "\n" in caption:
        raise ValueError("caption must be one non-empty line")
    if not _LABEL.match(label):
        raise ValueError(
            f"label must be lower-case letters, digits and hyphens starting with a letter, "
            f"got {label!r}"
        )
    return BookTable(frame=frame, caption=caption.strip(), label=label, index=index)


def percentile_name(percent: object) -> str:
    """A percentile's name in prose.

    Parameters
    ----------
    percent : float
        The percentile, from 0 to 100.

    Returns
    -------
    str
        Its ordinal: ``"5th"``, ``"1st"``, ``"2.5th"``.

    Examples
    --------
    >>> [percentile_name(p) for p in (1, 2.5, 12, 22, 50, 97.5)]
    ['1st', '2.5th', '12th', '22nd', '50th', '97.5th']
    """
    percent = check_real(percent, "percent", low=0.0, high=100.0)
    text = f"{percent:g}"
    if not percent.is_integer() or int(percent) % 100 in (11, 12, 13):
        return text + "th"
    return text + {1: "st", 2: "nd", 3: "rd"}.get(int(percent) % 10, "th")


def and_list(items: object) -> str:
    """Words joined as prose lists them: ``"a"``, ``"a and b"``, ``"a, b and c"``.

    Examples
    --------
    >>> and_list(["10th", "50th", "90th"])
    '10th, 50th and 90th'
    """
    if isinstance(items, str):
        raise TypeError("items must be a sequence of words, not one string")
    words = [str(item) for item in items]
    if not words:
        raise ValueError("items must hold at least one word")
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
