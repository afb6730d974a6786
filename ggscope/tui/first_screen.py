"""The browser's first screen in words, without Rich or Textual.

Why: two painters show the first screen.  The launcher's pre-frame (``tui.preframe``)
writes it as plain ANSI before Textual is imported; the app's first frame repaints it
(the summary line, the tab labels, ``widgets.overview.OverviewPane.show_peek``).  Both
take their words from here, so the repaint changes colours, never what is said or
where (issue 26 item 9).  This module imports neither Rich nor Textual (nor numpy):
the pre-frame is drawn before any of them loads.

The contract: every string that comes from the inspected file passes ``file_text``
(``ggscope.core.escape.escape_text``, the one escaping); what these functions return
is plain text - a widget receives it as ``rich.text.Text`` (``tui.format.plain``),
never as markup, and the pre-frame writes it between its own escape sequences only.
"""
from __future__ import annotations

from typing import Any

from ggscope.core.escape import escape_text

__all__ = ["TABS", "TAB_LABELS", "PEEK_PENDING", "PANE_KEYS", "file_text", "human_bytes", "count",
           "summary_line", "peek_facts"]

TABS = ("overview", "metadata", "tensors", "findings", "structure")
TAB_LABELS = {"overview": "1 Overview", "metadata": "2 Metadata", "tensors": "3 Tensors",
              "findings": "4 Findings …", "structure": "5 Structure"}
PEEK_PENDING = "reading the tensors …"          # the findings line while the parse runs
PANE_KEYS = "2 metadata · 3 tensors · 4 findings · 5 structure"     # the overview's last line


def file_text(text: Any, *, keep_newlines: bool = False) -> str:
    """``text`` from a file, escaped (``core.escape.escape_text``); ``keep_newlines``
    keeps line feeds as line breaks (the detail pane's pages) and escapes the rest."""
    return escape_text(text, keep="\n" if keep_newlines else "")


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


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


def peek_facts(p: Any, limit: int | None = None) -> list[tuple[str, str | None]]:
    """The overview's facts from a header peek (``model.peek.Peek``), label and value;
    None where the parse has still to tell (shown as a dim "…").  ``limit`` cuts a file
    string to that many characters before it is escaped (a pre-frame shows at most a
    screenful; escaping only lengthens, so the escaped prefix is the same)."""
    from ggscope.model.summary import file_type_name  # light: the ggml type tables only

    def text(s: str | None) -> str | None:
        return file_text(s if limit is None else s[:limit]) if s else None

    ftype = file_type_name(p.file_type)
    return [
        ("format", f"{p.format} v{p.version}, {p.endian}-endian"),
        ("architecture", text(p.architecture)),
        ("name", text(p.name)),
        ("parameters", None),
        ("file type", text(ftype)),
        ("size", f"{human_bytes(p.size)} ({p.size:,} B)"),
        ("contents", f"{p.n_keys} metadata key{'s' * (p.n_keys != 1)}, "
                     f"{p.n_tensors} tensor{'s' * (p.n_tensors != 1)}"),
    ]
