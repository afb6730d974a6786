"""The terminal's progress bar: the reporter ``ggscope.core.progress`` draws through.

Only on a terminal (stderr a TTY); descriptions pass the one escaping
(``ggscope.core.escape``) and are given to Rich as plain text, never as markup.
"""
from __future__ import annotations

import sys

from ggscope.core.escape import escape_text
from ggscope.core.progress import NULL

__all__ = ["terminal_reporter", "BYTES_MIN"]

BYTES_MIN = 4 << 20          # byte transfers smaller than this show no bar


class _RichTask:
    def __init__(self, desc: str, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TaskProgressColumn,
                                   TextColumn, TimeRemainingColumn)
        self._bytes = desc.startswith("fetching ")
        count = DownloadColumn() if self._bytes else MofNCompleteColumn()
        self._bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), count,
                             TaskProgressColumn(), TimeRemainingColumn(),
                             console=Console(stderr=True), transient=True)
        self._task = self._bar.add_task(escape_text(desc), total=total)

    def advance(self, n: int) -> None:
        self._bar.advance(self._task, n)

    def update(self, done: int, total: int | None = None, desc: str | None = None) -> None:
        kw = {"completed": done}
        if total is not None:
            kw["total"] = total
        if desc is not None:
            kw["description"] = escape_text(desc)
        self._bar.update(self._task, **kw)

    def __enter__(self) -> "_RichTask":
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()


def terminal_reporter(stream=None):
    """A reporter drawing Rich bars on stderr, or None when stderr is no terminal."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def reporter(desc: str, total: int | None):
        if desc.startswith("fetching ") and (total or 0) < BYTES_MIN:
            return NULL
        return _RichTask(desc, total)
    return reporter
