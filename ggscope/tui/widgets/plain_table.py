"""``PlainTable``: a ``DataTable`` whose text cells are never markup.

Why: Textual's ``DataTable`` parses a str cell as Rich markup, so a tensor named
``[/bold]`` crashes the browser (MarkupError), ``[link=URL]`` becomes a hyperlink and
``[@click=app.quit]`` a click action.  Every table of the browser derives from this
one: a str cell becomes a ``rich.text.Text`` of exactly that text (already escaped
with ``tui.format.file_text`` where it comes from the file); ``Text`` cells and other
renderables pass unchanged.
"""
from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

__all__ = ["PlainTable"]


def _cell(value: Any) -> Any:
    return Text(value) if isinstance(value, str) else value


class PlainTable(DataTable):
    """``DataTable`` with str cells shown as plain text; see the module docstring."""

    def add_row(self, *cells: Any, **kw: Any):
        return super().add_row(*map(_cell, cells), **kw)

    def update_cell(self, row_key: Any, column_key: Any, value: Any, *, update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, _cell(value), update_width=update_width)
