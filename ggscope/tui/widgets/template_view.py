"""A chat template in the detail pane: its text with line numbers, the flagged line lit.

Why: a template is code; shown as one long string its structure is invisible and a
finding's "line 12, column 5" points nowhere.  The detail pane shows the selected
template key - or the template a finding names - as numbered lines, with the line the
finding names highlighted.

Contract: file text becomes ``rich.text.Text`` built from plain strings (never markup),
each line passed through ``core.escape.escape_text`` and with invisible characters shown as
``\\uXXXX``; at most ``MAX_LINES`` lines of at most ``MAX_COLS`` characters are drawn.
"""
from __future__ import annotations

import re
from typing import Any

from rich.text import Text

from ggscope.core.escape import escape_text

__all__ = ["template_source", "template_text", "MAX_LINES", "MAX_COLS"]

MAX_LINES = 2000
MAX_COLS = 2000
_KEY = "tokenizer.chat_template"
_LINE = re.compile(r"line (\d+), column \d+")


def _is_template_key(key: Any) -> bool:
    return isinstance(key, str) and (key == _KEY or key.startswith(_KEY + "."))


def template_source(app: Any, key: Any, value: Any, finding: Any) -> tuple[str, int | None] | None:
    """(template text, flagged line) when the selection is a template key or a finding
    about one, else None."""
    if _is_template_key(key) and isinstance(value, str):
        return value, None
    if finding is None:
        return None
    mf = getattr(app, "mf", None)
    by_path = {p: k for k, p in getattr(mf, "metadata_nodes", {}).items()}
    fkey = by_path.get(getattr(finding, "path", ""))
    if not _is_template_key(fkey) or not isinstance(mf.metadata.get(fkey), str):
        return None
    m = _LINE.search(getattr(finding, "message", ""))
    return mf.metadata[fkey], int(m.group(1)) if m else None


def _shown(line: str) -> str:
    from ggscope.rules.templates.hidden import invisible  # start-up: numpy, asyncio only when used
    if len(line) > MAX_COLS:
        line = line[:MAX_COLS] + f"… ({len(line) - MAX_COLS:,} more characters)"
    hidden = {i for i, _ in invisible(line)}
    if hidden:
        line = "".join(f"\\u{ord(c):04x}" if i in hidden else c for i, c in enumerate(line))
    return escape_text(line)


def template_text(text: str, flagged: int | None = None) -> Text:
    lines = text.split("\n")
    width = len(str(min(len(lines), MAX_LINES)))
    out = Text()
    out.append(f"\n{len(lines):,} lines\n", style="bold")
    for no, line in enumerate(lines[:MAX_LINES], 1):
        lit = no == flagged
        out.append(f"{no:>{width}} ", style="bold red" if lit else "dim")
        out.append(_shown(line) + "\n", style="on dark_red" if lit else "")
    if len(lines) > MAX_LINES:
        out.append(f"… {len(lines) - MAX_LINES:,} more lines\n", style="italic")
    return out
