"""The first screen's facts painted before Textual is imported (issue 26 item 9).

Why: a GGUF header's facts are known a few milliseconds after start (``model.peek``),
but Textual's import and first frame of the browser take longer than a bare Textual
app's whole start.  So the launcher (``tui.run``) paints those facts itself, as plain
ANSI, in the alternate screen Textual is about to use, in the places and words of the
browser's first frame (``first_screen``: the summary line, the tab labels, the
overview's facts); Textual's first frame then repaints the same words over them.

The contract:

* Only on a terminal: stdin, stdout and the stream Textual draws on
  (``sys.__stderr__``, as Textual's ``LinuxDriver``) are TTYs, on POSIX, with no
  ``TEXTUAL_DRIVER`` (another driver draws elsewhere) and a ``TERM`` that is not
  ``dumb``.  Otherwise ``show`` paints nothing and says so (False): the no-terminal
  path (``commands.tui``), ``--help`` and the tests' headless runs never get here or
  get False.
* What is written: enter the alternate screen (``ESC[?1049h``, exactly what Textual's
  driver writes first), hide the cursor and turn off line wrap (as Textual does next),
  clear it, then each row at its own cursor position.  Every string from the file
  passes ``first_screen.file_text`` (the one escaping) before it is measured, clipped
  to the terminal's width and height and folded as the overview folds it.  Colours
  (ANSI names) only where the browser would colour: not under ``NO_COLOR``, not for
  ``TERM=dumb``; bold, dim, italic and reverse stand in for them otherwise.
* No blank gap: ``tui.driver.keeping_preframe`` is the Textual driver the app then
  runs with; it drops its first ``ESC[?1049h`` (the screen is already the alternate
  one, and some terminals clear it on a repeated switch), so the facts stay until
  Textual's first frame replaces them.  Textual's own exit then restores the terminal
  as always (``ESC[?1049l``, the cursor shown).
* If Textual never takes the screen over (an import fails, Ctrl+C during start-up),
  ``withdraw`` undoes exactly what ``show`` did: line wrap on, the main screen back,
  the cursor shown.
* Work is bounded by the screen: a file string is cut to a screenful of characters
  before it is escaped (``first_screen.peek_facts``).
"""
from __future__ import annotations

import os
import re
import sys
import unicodedata

from ggscope.tui.first_screen import PANE_KEYS, PEEK_PENDING, TAB_LABELS, TABS, peek_facts, summary_line
from ggscope.tui.layout import left_width

__all__ = ["show", "withdraw", "frame", "cells", "clip", "fold", "ENTER", "LEAVE"]

ENTER = "\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[H\x1b[2J"   # alternate screen, cursor hidden, no wrap, cleared
LEAVE = "\x1b[?7h\x1b[?1049l\x1b[?25h"               # wrap on, main screen back, cursor shown (as Textual)

# SGR per role: (with colours, without) - ANSI names, so the terminal's palette applies
_STYLE = {
    "summary": ("1;97;44", "1;7"),
    "label": ("1;36", "1"),
    "active": ("1", "1"),
    "dim": ("2", "2"),
    "pending": ("3", "3"),
    "border": ("34", ""),
    "": ("", ""),
}


def _terminal() -> int | None:
    """The fd Textual will draw on, when the pre-frame may paint there."""
    out = sys.__stderr__
    try:
        if (os.name != "posix" or os.environ.get("TEXTUAL_DRIVER")
                or os.environ.get("TERM", "") in ("dumb", "unknown")
                or not all(s is not None and s.isatty() for s in (sys.__stdin__, sys.stdout, out))):
            return None
        return out.fileno()
    except (AttributeError, ValueError, OSError):      # a closed or replaced stream
        return None


def _colour() -> bool:
    """Textual drops colours under NO_COLOR (any value; a dumb terminal gets no pre-frame)."""
    return "NO_COLOR" not in os.environ


def show(peek, name: str) -> bool:
    """Paint the first screen of ``peek`` (a ``model.peek.Peek``) for the file ``name``;
    True when painted (the caller must then ``withdraw`` unless Textual took over)."""
    fd = _terminal()
    if fd is None:
        return False
    try:
        cols, rows = os.get_terminal_size(fd)
    except OSError:
        return False
    if cols < 1 or rows < 1:
        return False
    data = frame(peek, name, cols, rows, colour=_colour()).encode("utf-8", "replace")
    return _write(fd, data) > 0         # any byte may have switched the screen: withdraw then


def withdraw() -> None:
    """Undo ``show``: what Textual writes on exit for these modes."""
    fd = _terminal()
    if fd is not None:
        _write(fd, LEAVE.encode())


def _write(fd: int, data: bytes) -> int:
    """Write all of ``data`` (a terminal may take it in parts); the bytes written."""
    done = 0
    try:
        while done < len(data):
            done += os.write(fd, data[done:])
    except OSError:
        pass
    return done


def cells(text: str) -> int:
    """Terminal columns of ``text`` (escaped text: no controls left): wide East Asian
    characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def clip(text: str, width: int) -> str:
    """The longest prefix of ``text`` that fits ``width`` columns."""
    if cells(text) <= width:
        return text
    out, used = [], 0
    for c in text:
        w = cells(c)
        if used + w > width:
            break
        out.append(c)
        used += w
    return "".join(out)


def fold(text: str, width: int) -> list[str]:
    """``text`` as lines of at most ``width`` columns, broken between words where it
    can be and inside a word longer than a line (as the overview's folding column)."""
    if width < 1:
        return [""]
    lines, line = [], ""
    for word in re.findall(r"\s*\S+\s*|\s+", text):
        if cells(line + word.rstrip()) <= width:
            line += word
            continue
        if line.strip():
            lines.append(line.rstrip())
            line = ""
            word = word.lstrip()
        while cells(word.rstrip()) > width:
            head = clip(word, width)
            lines.append(head)
            word = word[len(head):]
        line = word
    lines.append(line.rstrip())
    return lines


def frame(peek, name: str, cols: int, rows: int, *, colour: bool) -> str:
    """The pre-frame for a ``cols`` x ``rows`` terminal: ``ENTER``, then every row at its
    own position (never a line feed: nothing can scroll).  The layout is the browser's:
    the summary line across the top, the left pane (``layout.left_width``) with the tab
    labels, their rule and the overview (padding 1, labels, two spaces, values), its
    right border down to the footer's row, which stays empty (no keys work yet)."""
    pick = 0 if colour else 1
    out = [ENTER]

    def put(row: int, col: int, text: str, role: str = "") -> None:
        if row >= rows or col >= cols or not text:
            return
        text = clip(text, cols - col)
        sgr = _STYLE[role][pick]
        out.append(f"\x1b[{row + 1};{col + 1}H" + (f"\x1b[{sgr}m{text}\x1b[0m" if sgr else text))

    summary = clip(fold(summary_line(peek, name), cols)[0], cols)   # a one-line Static: its first line
    put(0, 0, summary + " " * (cols - cells(summary)), "summary")
    left = left_width(cols)
    inner = left - 1                                  # the pane without its right border
    if rows > 2:
        for r in range(1, rows - 1):                  # the left pane's border, down to the footer
            put(r, inner, "▕", "border")
        col = 0
        for tab in TABS:                              # the tab labels, padded 1 as Textual's tabs
            label = f" {TAB_LABELS[tab]} "
            put(1, col, clip(label, max(0, inner - col)), "active" if tab == TABS[0] else "dim")
            col += cells(label)
        active = cells(TAB_LABELS[TABS[0]])          # the rule, the active tab's part lit
        put(2, 0, clip("╸", inner), "dim")
        put(2, 1, clip("━" * active, inner - 1), "border")
        put(2, 1 + active, clip("╺" + "━" * inner, inner - 1 - active), "dim")
    row, last = 3, rows - 2                           # the footer's row stays empty
    lines = _overview(peek, inner - 2, cols * rows)   # the overview's padding, one column each side
    if len(lines) > last - row + 1:                   # taller than the pane: a scrollbar takes 2 columns
        lines = _overview(peek, inner - 4, cols * rows)
    for line in lines[:max(0, last - row + 1)]:
        for col, text, role in line:
            put(row, col, text, role)
        row += 1
    return "".join(out)


def _overview(peek, width: int, limit: int) -> list[list[tuple[int, str, str]]]:
    """The overview's lines in a pane ``width`` columns wide, as (column, text, role)
    pieces: the facts grid (labels, two spaces, values folded in their column), a blank
    line, the findings line and the pane keys, folded as Rich folds them."""
    facts = peek_facts(peek, limit=max(1, limit))
    label_w = max(cells(label) for label, _ in facts)
    value_w = max(1, min(width - label_w - 2, max(cells(v or "…") for _, v in facts)))
    lines: list[list[tuple[int, str, str]]] = []
    for label, value in facts:
        for i, line in enumerate(fold(value if value is not None else "…", value_w)):
            lines.append(([(1, clip(label, width), "label")] if i == 0 else [])
                         + [(1 + label_w + 2, clip(line, max(0, width - label_w - 2)),
                             "" if value is not None else "dim")])
    lines.append([])
    for text, role in ((f"findings  {PEEK_PENDING}", "pending"), (PANE_KEYS, "dim")):
        for i, line in enumerate(fold(text, width)):
            lines.append([(1, line, role)] + ([(1, clip("findings", width), "label")]
                                              if i == 0 and role == "pending" else []))
    return lines
