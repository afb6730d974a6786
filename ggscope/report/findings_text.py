"""Findings as text: one line each, ``file:start: severity CODE [name] message (path)``.

Why: the shape compilers and linters use, so editors and ``grep`` understand it.
Colour (severity only) when asked to; the caller decides (only on a terminal).
"""
from __future__ import annotations

from collections.abc import Iterable

from ggscope.rules import Finding
from ggscope.core.escape import escape_text

__all__ = ["line", "render", "summary"]

_COLOURS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}


def line(f: Finding, colour: bool = False) -> str:
    sev = f.severity.value
    if colour:
        sev = f"{_COLOURS[sev]}{sev}\x1b[0m"
    where = f"{escape_text(f.file)}:{f.start if f.start is not None else 0}"
    path = f" ({escape_text(f.path)})" if f.path else ""
    return f"{where}: {sev} {f.code} [{f.rule}] {escape_text(f.message)}{path}"


def render(findings: Iterable[Finding], colour: bool = False) -> str:
    return "".join(line(f, colour) + "\n" for f in findings)


def summary(findings: list[Finding], n_files: int, n_unreadable: int = 0) -> str:
    """``3 files checked, 1 unreadable: 2 errors, 0 warnings, 1 info`` - a file that
    could not be read is counted, never silently left out."""
    counts = {s: sum(1 for f in findings if f.severity.value == s) for s in ("error", "warning", "info")}
    unreadable = f", {n_unreadable} unreadable" if n_unreadable else ""
    return (f"{_count(n_files, 'file')} checked{unreadable}: {_count(counts['error'], 'error')}, "
            f"{_count(counts['warning'], 'warning')}, {_count(counts['info'], 'info')}")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
