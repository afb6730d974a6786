"""State that belongs to one process: made again, with a new lock, in a forked child.

Why: the streaming engine's thread pools and spare read buffers
(``ggscope.source.stream``), the statistics' spare tensor-sized buffer
(``ggscope.stats.chunks``) and their lent counting tables (``ggscope.stats.counters``)
are kept per process and guarded by a lock.  A child of ``os.fork`` (``validate --jobs``,
``core.confined`` under the chat-template sandbox and ``tools/fuzz.py``) must not
inherit them: only the forking thread exists there, so an executor that believes it
has idle threads queues work forever, and a lock another thread held at the fork stays
held for good.  Each module used to reset its own by hand; this is the one mechanism.

Why a fork hook and not a pid check on each use: the hook runs once per fork, before
any code of the child, so a use costs one attribute read (no ``getpid`` system call per
lent table); and a check on use would have to replace the lock while another thread of
the child may already be using it, where the hook runs while the child has one thread.
``os.fork`` runs the hook whoever calls it (``multiprocessing``'s fork context,
``core.confined``); a fork from C that execs at once (``subprocess``) runs no Python
code in the child and needs none.

Contract: ``state = PerProcess(make)`` at a module's import; ``state.value`` is the
object ``make()`` made for this process and ``state.lock`` the ``threading.Lock`` that
guards it: read and change ``value`` inside ``with state.lock:`` (the ``with`` releases
the lock it took even if a fork replaced ``state.lock`` meanwhile).  In a forked child
every live ``PerProcess`` gets ``value = make()`` and a new lock before the child's own
code runs; the parent's are untouched.  ``make`` must be cheap and must not take any
lock (it runs in the fork hook).  Without ``os.register_at_fork`` (a platform that
cannot fork) there is nothing to reset.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

T = TypeVar("T")

_LIVE: "weakref.WeakSet[PerProcess]" = weakref.WeakSet()     # reset in a forked child


class PerProcess(Generic[T]):
    """A value and its lock, made again in a forked child (module docstring)."""

    __slots__ = ("_make", "value", "lock", "__weakref__")

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self.value: T = make()
        self.lock = threading.Lock()
        _LIVE.add(self)

    def _reset(self) -> None:
        self.value = self._make()
        self.lock = threading.Lock()


def _after_fork_in_child() -> None:
    for state in list(_LIVE):
        state._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
