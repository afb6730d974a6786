"""Text forms of values for the browser's labels, tables and detail pane.

Every string that comes from the inspected file passes ``file_text`` - ggscope's one
escaping (``ggscope.core.escape.escape_text``: controls, format characters such as
U+202E and U+200B, separators and bytes that are not UTF-8 become visible escapes) -
and reaches a widget only as ``rich.text.Text`` (``plain``), never as a markup string:
``[/bold]`` or ``[@click=app.quit]`` in a file is shown as written.  Tables use
``widgets.plain_table.PlainTable``, which makes every str cell such a ``Text``;
notifications pass ``markup=False``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from ggscope.core.escape import escape_text


def _is_array(value: Any) -> bool:
    # numpy arrays without importing numpy: the browser paints before numpy loads
    return hasattr(value, "dtype") and hasattr(value, "shape") and getattr(value, "ndim", 0) > 0


__all__ = ["short_value", "human_bytes", "file_text", "plain", "value_pages", "PAGE_CHARS", "count", "summary_line"]

PAGE_CHARS = 2000            # a long string is shown this many characters a page


def file_text(text: Any, *, keep_newlines: bool = False) -> str:
    """``text`` from a file, escaped (``core.escape.escape_text``); ``keep_newlines``
    keeps line feeds as line breaks (the detail pane's pages) and escapes the rest."""
    return escape_text(text, keep="\n" if keep_newlines else "")


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


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


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


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary_line(mf: Any, name: str) -> str:
    """The browser's top line: the file given, format, byte order, size, keys, tensors;
    for a split model the shard given and every shard's size (``model.split``).  ``mf``
    may be a ``model.peek.Peek`` (the same facts, read before the parse)."""
    name = file_text(name)
    if mf is None:
        return f" {name}  ·  parsing …"
    if getattr(mf, "n_tensors", None) is not None:      # a header peek (model.peek) before the parse
        return (f" {name}  ·  {mf.format} v{mf.version}  ·  {mf.endian}-endian  ·  {human_bytes(mf.size)}  ·  "
                f"{count(mf.n_keys, 'key')}  ·  {count(mf.n_tensors, 'tensor')}")
    shards = mf.extra.get("shards")
    name += f" (shard {mf.extra.get('shard_given', 1)} of {len(shards)})" if shards else ""
    text = (f" {name}  ·  {mf.format} v{mf.version}  ·  {mf.endian}-endian  ·  "
            f"{human_bytes(sum(mf.extra.get('shard_sizes') or [mf.source.size]))}  ·  "
            f"{count(len(mf.metadata), 'key')}  ·  {count(len(mf.tensors), 'tensor')}")
    if mf.damage is not None:
        text += f"  ·  DAMAGED at {mf.damage.start:#x}"
    return text
