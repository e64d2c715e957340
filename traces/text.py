"""Text for people, at 80 columns: labelled fields that wrap under their value, and counts with
thousands separators.

Terminals, CI logs and pasted issues are 80 columns wide more often than not; a table that
needs 160 is read with its lines broken in the middle of its cells. So what trajbench prints or
writes for people (`profiles`, `eval check`, report.txt) is laid out as a label and its value,
the value wrapped under itself. Numbers of many digits get thousands separators
(`1,234,567`), as the rest of the project prints them.
"""

from __future__ import annotations

import textwrap

#: The width every listing for people fits in.
TEXT_WIDTH = 80


def field_lines(label: str, value: str, *, label_width: int, indent: int = 0, width: int = TEXT_WIDTH) -> list[str]:
    """`label` padded to `label_width`, then `value` wrapped to `width` with later lines under
    the value's start. A word longer than the room (a path, a URL) stays whole on its own line:
    cut, it could not be copied."""
    head = " " * indent + label.ljust(label_width) + "  "
    lines = textwrap.wrap(
        value,
        width=width,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [head.rstrip()]


def format_count(n: int | float) -> str:
    """An integer count with thousands separators: 30335 → `30,335`."""
    return f"{round(n):,}"


def format_number(v: float | None, width: int = 7) -> str:
    """A measured value in at most `width` characters: one decimal below 1,000, whole numbers
    with separators above, then k (1,000) and M (1,000,000) as the project's sizes are written;
    `-` for a missing value."""
    if v is None:
        return "-"
    text = f"{v:,.1f}" if abs(v) < 1000 else f"{v:,.0f}"
    for div, unit in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
        if len(text) <= width:
            break
        text = f"{v / div:,.0f}{unit}"
    return text
