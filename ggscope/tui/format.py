"""Text forms of values for the browser's labels, tables and detail pane.

Every string that comes from the inspected file passes ``file_text`` - ggscope's one
escaping (``ggscope.core.escape.escape_text``: controls, format characters such as
U+202E and U+200B, separators and bytes that are not UTF-8 become visible escapes) -
and reaches a widget only as ``rich.text.Text`` (``plain``), never as a markup string:
``[/bold]`` or ``[@click=app.quit]`` in a file is shown as written.  Tables use
``widgets.plain_table.PlainTable``, which makes every str cell such a ``Text``;
notifications pass ``markup=False``.  The first screen's words (``file_text``, the
summary line, the byte and count forms) live in ``first_screen``, which imports no Rich:
the launcher's pre-frame uses them before Rich loads; they are re-exported here.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from ggscope.tui.first_screen import count, file_text, human_bytes, summary_line  # the first screen's words (no rich)


def _is_array(value: Any) -> bool:
    # numpy arrays without importing numpy: the browser paints before numpy loads
    return hasattr(value, "dtype") and hasattr(value, "shape") and getattr(value, "ndim", 0) > 0


__all__ = ["short_value", "human_bytes", "file_text", "plain", "value_pages", "PAGE_CHARS", "count", "summary_line"]

PAGE_CHARS = 2000            # a long string is shown this many characters a page


def plain(text: str, style: str = "") -> Text:
    """Text already escaped (or ggscope's own) as a widget takes it: never markup."""
    return Text(text, style=style)


def short_value(value: Any, width: int = 60) -> str:
    """One line, at most ``width`` characters; arrays show their count and first items."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value[:16])
        text = b.hex(" ") + (" …" if len(value) > 16 else "")
    elif isinstance(value, str):
        text = f'"{file_text(value)}"'
    elif _is_array(value) or (isinstance(value, Sequence) and hasattr(value, "__len__")):
        n = len(value)
        head = ", ".join(f'"{file_text(x)}"' if isinstance(x, str) else _num(x) for x in list(value[:8]))
        text = f"[{n}] {head}" + (", …" if n > 8 else "")
    else:
        text = _num(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _num(x: Any) -> str:
    if hasattr(x, "dtype") and hasattr(x, "item"):       # a numpy scalar
        x = x.item()
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def value_pages(value: Any, page_items: int = 64) -> list[list[str]]:
    """A value in full, as pages of lines: a string in pieces of at most ``PAGE_CHARS``
    characters, ended at a line break where one is near (newlines kept, other control
    characters escaped), an array ``page_items`` items a page with
    their indexes, bytes as hex lines of 16, anything else one line."""
    if isinstance(value, str):
        text = file_text(value, keep_newlines=True)
        chunks, i = [], 0
        while i < len(text):               # pages end at a line break when one is near
            end = min(len(text), i + PAGE_CHARS)
            cut = text.rfind("\n", i + PAGE_CHARS // 2, end) + 1 if end < len(text) else end
            chunks.append(text[i:cut or end])
            i = cut or end
        return [[c.rstrip("\n")] for c in chunks] or [[""]]
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        lines = [b[i:i + 16].hex(" ") for i in range(0, len(b), 16)] or [""]
        return [lines[i:i + page_items] for i in range(0, len(lines), page_items)]
    if _is_array(value) or (isinstance(value, Sequence) and hasattr(value, "__len__")):
        n = len(value)
        pages = []
        for lo in range(0, n, page_items):
            items = list(value[lo:lo + page_items])
            pages.append([f"{lo + i:>8}  {short_value(x, 200)}" for i, x in enumerate(items)])
        return pages or [["(no items)"]]
    return [[short_value(value, 400)]]
