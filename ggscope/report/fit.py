"""Tables that fit the terminal they are printed on: one mechanism for every command.

Why: a Rich table wider than the console shrinks every column, numbers and headings
included, to ``…``; a reader would rather lose the least telling columns whole.  So a
table declares its columns with a priority (lower survives a narrow terminal longer),
and ``FittingTable`` keeps as many as the console's width allows, in that order, and
says in its caption which it left out (``--json`` and piped text keep them all).  The
first column (a name) may fold to at most ``NAME_WIDTH`` characters; numbers never wrap.

Contract: ``FittingTable(columns, rows, title)`` is a Rich renderable; ``columns`` are
``Column(heading, right, priority)``; ``rows`` are lists of already escaped strings
(``core.escape``: file text never reaches Rich as markup - every cell becomes a
``rich.text.Text``); ``row_style(i)`` and ``cell_style(col, text)`` colour them.
``fitting(columns, rows, width)`` is the column choice alone, for tests and callers.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["Column", "FittingTable", "fitting", "NAME_WIDTH"]

NAME_WIDTH = 24          # a name folds to this width before any other column goes
_BORDER = 4              # a table's outer border and padding
_PER_COLUMN = 3          # a column's separator and padding


class Column(NamedTuple):
    heading: str
    right: bool          # right-aligned (numbers)
    priority: int        # lower survives a narrow terminal longer


def _widths(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int]:
    widths = [max([len(c.heading), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    widths[0] = min(widths[0], NAME_WIDTH)
    return widths


def fitting(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Indices of the columns that fit ``width``, in table order: by priority while they
    fit; a column empty in every row is left out; the first by priority always stays."""
    widths = _widths(columns, rows)
    chosen: list[int] = []
    used = _BORDER
    for i in sorted(range(len(columns)), key=lambda i: columns[i].priority):
        if rows and not any(r[i] for r in rows):
            continue
        if used + widths[i] + _PER_COLUMN <= width or not chosen:
            chosen.append(i)
            used += widths[i] + _PER_COLUMN
    return sorted(chosen)


class FittingTable:
    """A Rich renderable: the table with as many columns as the width allows (module docstring)."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[Sequence[str]], title: str | None = None, *,
                 row_style: Callable[[int], str | None] | None = None,
                 cell_style: Callable[[int, str], str] | None = None) -> None:
        self.columns, self.rows, self.title = list(columns), [list(r) for r in rows], title
        self.row_style, self.cell_style = row_style, cell_style

    def __rich_console__(self, console, options):
        from rich.table import Table
        from rich.text import Text
        chosen = fitting(self.columns, self.rows, options.max_width)
        dropped = [c.heading for i, c in enumerate(self.columns)
                   if i not in chosen and any(r[i] for r in self.rows)]
        table = Table(title=self.title, caption=("left out for width: " + ", ".join(dropped)
                                                 + "; --json has every column") if dropped else None,
                      caption_justify="left")
        widths = _widths(self.columns, self.rows)
        spare = options.max_width - _BORDER - sum(widths[i] + _PER_COLUMN for i in chosen)
        full = max([len(self.columns[0].heading), *(len(r[0]) for r in self.rows)])
        for i in chosen:                   # the name takes what the kept columns leave, up to its longest
            c = self.columns[i]
            table.add_column(c.heading, justify="right" if c.right else "left", overflow="fold",
                             no_wrap=c.right, min_width=min(full, widths[0] + max(spare, 0)) if i == 0 else None)
        for n, row in enumerate(self.rows):
            cells = [Text(row[i], style=self.cell_style(i, row[i]) if self.cell_style else "") for i in chosen]
            table.add_row(*cells, style=self.row_style(n) if self.row_style else None)
        yield table
