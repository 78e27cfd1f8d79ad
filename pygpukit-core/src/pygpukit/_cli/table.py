"""Plain ASCII tables for the command line (cells wrap; nothing but ASCII is printed)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any


def ascii_text(value: Any) -> str:
    """`value` as text with anything outside printable ASCII replaced by '?'."""
    text = str(value)
    return "".join(c if " " <= c <= "~" or c == "\n" else "?" for c in text)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], widths: dict[int, int] | None = None
) -> str:
    """Rows under a header line; column `i` wraps at `widths[i]` characters when given."""
    limits = widths or {}
    cells: list[list[list[str]]] = []
    for row in [list(headers), *rows]:
        wrapped = []
        for i, value in enumerate(row):
            text = ascii_text(value)
            limit = limits.get(i)
            lines: list[str] = []
            for part in text.split("\n"):
                lines += (textwrap.wrap(part, limit) or [""]) if limit else [part]
            wrapped.append(lines)
        cells.append(wrapped)
    ncols = len(headers)
    width = [max(len(line) for row in cells for line in row[i]) for i in range(ncols)]
    rule = "+" + "+".join("-" * (w + 2) for w in width) + "+"
    out = [rule]
    for index, row in enumerate(cells):
        for k in range(max(len(c) for c in row)):
            parts = [(row[i][k] if k < len(row[i]) else "").ljust(width[i]) for i in range(ncols)]
            out.append("| " + " | ".join(parts) + " |")
        if index == 0:
            out.append(rule.replace("-", "="))
    out.append(rule)
    return "\n".join(out)


def heading(title: str) -> str:
    return f"\n{title}\n{'-' * len(title)}"
