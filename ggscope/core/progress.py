"""One progress abstraction: long work reports how far it is, the front end draws it.

Why: work that may take long (fetching a remote file's data, streaming tensors) lives in
layers that must not draw (nothing below ``report`` imports rich or textual), while
only the front end knows whether there is a terminal to draw on.  So the work calls
``task(description, total)`` and advances it; a *reporter* installed by the front end
(``ggscope.report.progress.terminal_reporter`` on a terminal, the browser's own widget,
or none at all) turns that into a bar.  With no reporter installed, progress costs one
function call per update and draws nothing.

Contract: ``with task(desc, total) as t: t.advance(n)`` (or ``t.update(done, total,
desc)``); ``desc`` may hold file-provided text - reporters escape it.  ``use(reporter)``
installs a reporter for the duration of a ``with`` block; a reporter is a callable
``(desc, total) -> Task`` whose result is a context manager with ``advance``/``update``.
``from_callback(cb, desc)`` adapts the callbacks of the public API
(``tensor_stats(progress=(done, total))``, ``diff_files(progress=(done, total, name))``)
to a ``Task``, so the work itself only ever speaks this protocol.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

__all__ = ["Task", "task", "use", "set_fallback", "NULL", "from_callback", "Callback"]


class Task(Protocol):
    def advance(self, n: int) -> None: ...
    def update(self, done: int, total: int | None = None, desc: str | None = None) -> None: ...


class _Null:
    def advance(self, n: int) -> None:
        pass

    def update(self, done: int, total: int | None = None, desc: str | None = None) -> None:
        pass

    def __enter__(self) -> "_Null":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


NULL = _Null()
_state = threading.local()
_default: Callable | None = None
_fallback: Callable | None = None      # set by the ggscope package: a bar on a terminal for library use


def _reporter() -> Callable | None:
    return getattr(_state, "reporter", None) or _default or _fallback


def _silent(desc: str, total: int | None = None) -> _Null:
    return NULL


def set_fallback(reporter: Callable | None) -> None:
    """The reporter used when none is installed with ``use`` (the package sets one that
    draws on a terminal, so library users see long fetches as the CLI does)."""
    global _fallback
    _fallback = reporter


def task(desc: str, total: int | None = None):
    """A progress task (a context manager with ``advance``/``update``); a no-op when no
    reporter is installed."""
    r = _reporter()
    return NULL if r is None else r(desc, total)


@contextlib.contextmanager
def use(reporter: Callable | None, *, process_wide: bool = True) -> Iterator[None]:
    """Install ``reporter`` for the block (process-wide by default, so worker threads
    report too; ``process_wide=False`` limits it to this thread).  ``None`` silences
    progress for the block (no fallback bar either: the browser draws its own)."""
    global _default
    if reporter is None:
        reporter = _silent
    if process_wide:
        old, _default = _default, reporter
        try:
            yield
        finally:
            _default = old
    else:
        old = getattr(_state, "reporter", None)
        _state.reporter = reporter
        try:
            yield
        finally:
            _state.reporter = old


class Callback:
    """A ``Task`` that calls ``cb(done, total)`` (or ``cb(done, total, desc)`` when
    ``with_desc``) on every change: the public API's progress hooks."""

    def __init__(self, cb: Callable, total: int | None, desc: str = "", with_desc: bool = False) -> None:
        self.cb, self.total, self.desc, self.with_desc = cb, total, desc, with_desc
        self.done = 0

    def advance(self, n: int) -> None:
        self.update(self.done + n)

    def update(self, done: int, total: int | None = None, desc: str | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if desc is not None:
            self.desc = desc
        if self.with_desc:
            self.cb(done, self.total, self.desc)
        else:
            self.cb(done, self.total)

    def __enter__(self) -> "Callback":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def from_callback(cb: Callable | None, desc: str, total: int | None = None, *, with_desc: bool = False):
    """``cb`` as a ``Task`` when given, else ``task(desc, total)`` (the installed reporter)."""
    return task(desc, total) if cb is None else Callback(cb, total, desc, with_desc)
