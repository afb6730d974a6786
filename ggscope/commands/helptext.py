"""Help texts that fit the terminal: descriptions and epilogs re-wrapped to its width.

Why: the commands' DESCRIPTION and EPILOG are written as paragraphs, example lines and
"label: text" notes; argparse either wraps everything into one paragraph (its default)
or nothing (``RawDescriptionHelpFormatter``), so a narrow terminal wrapped them
mid-word.  ``HelpFormatter`` keeps the layout and wraps each part at word boundaries:

- a paragraph (lines starting in column 0; a line "``label: text``" or a blank line
  starts a new one) is refilled to the width, at most ``MAX_WIDTH`` for reading;
- an example line (indented) is kept whole when it fits; else its trailing comment
  (after a run of three or more spaces) moves to the next line, and a command still too
  long is broken between its words (outside quotes) with a shell continuation
  ``\\``, so it stays copyable;
- a heading ("``examples:``") is kept.
No word is ever split; a single word longer than the width stays whole.
"""
from __future__ import annotations

import argparse
import re
import textwrap

__all__ = ["HelpFormatter", "wrap_help", "MAX_WIDTH"]

MAX_WIDTH = 100
_LABEL = re.compile(r"^[a-zA-Z][\w ()/-]{0,30}: ")
_COMMENT = re.compile(r"^(?P<cmd>.*?\S)(?P<gap> {3,})(?P<note>\S.*)$")


def _shell_words(cmd: str) -> list[str]:
    """``cmd`` split at the spaces outside quotes (a quoted argument is one word)."""
    words, cur, quote = [], "", ""
    for ch in cmd.strip():
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if cur:
                words.append(cur)
            cur = ""
            continue
        cur += ch
    return words + [cur] if cur else words


def _continued(cmd: str, width: int, cont: str) -> list[str]:
    """A shell command broken between words with `` \\`` continuations (never inside a
    quoted argument: a backslash-newline there would be part of it)."""
    indent = cmd[:len(cmd) - len(cmd.lstrip())]
    lines, cur = [], indent
    for w in _shell_words(cmd):
        if cur.strip() and len(cur) + 1 + len(w) + 2 > width:
            lines.append(cur + " \\")
            cur = cont + w
        else:
            cur = f"{cur} {w}" if cur.strip() else cur + w
    return lines + [cur]


def _example(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    m = _COMMENT.match(line)
    head, note = (m.group("cmd"), m.group("note")) if m else (line, None)
    out = [head] if len(head) <= width else _continued(head, width, indent + "    ")
    if note:
        out += textwrap.wrap(note, width, initial_indent=indent + "  # " if not note.startswith("#") else indent + "  ",
                             subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False)
    return out


def wrap_help(text: str, width: int) -> str:
    """``text`` (a DESCRIPTION or EPILOG) laid out for ``width`` columns (module docstring)."""
    width = max(20, width)
    fill = min(width, MAX_WIDTH)
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.extend(textwrap.wrap(" ".join(para), fill, break_long_words=False, break_on_hyphens=False))
            para.clear()
    for line in text.splitlines():
        if not line.strip():
            flush()
            out.append("")
        elif line[0] == " ":
            flush()
            out.extend(_example(line.rstrip(), width))
        elif line.rstrip().endswith(":") and len(line) < 40:
            flush()
            out.append(line.rstrip())
        else:
            if _LABEL.match(line):
                flush()
            para.append(line.strip())
    flush()
    return "\n".join(out)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter with descriptions and epilogs wrapped by ``wrap_help``."""

    def _fill_text(self, text, width, indent):
        return textwrap.indent(wrap_help(text, width - len(indent)), indent)

    def _split_lines(self, text, width):
        """An option's help, wrapped at spaces only (argparse's default also breaks
        after hyphens: ``llama-gguf-`` / ``hash``)."""
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)
