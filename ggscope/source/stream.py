"""One streaming engine: work over bounded windows of a file's bytes, on one pool.

Why: statistics, ``diff`` and the ``--deep`` rules all read tensor data that can be
larger than memory, window by window, on both cores, and must stop when the caller
says so and tell a front end how far they are.  Written once here, the three share one
reader (``ggscope.source.ranges.RangeReader``: ``readinto`` a reused buffer, so pages
never pile up in the process and a file that shrinks meanwhile is
``ggscope.core.errors.FileChanged``, not SIGBUS), one thread pool per process, one
cancel exception (``ggscope.core.errors.Cancelled``) and one progress protocol
(``ggscope.core.progress``).

Contract: ``with Stream(threads=THREADS, cancel=None, what="...") as s:``

* ``s.map(work, items, done=None)`` -> ``[work(x) for x in items]``, in order, run on
  ``threads`` threads of the process-wide pool (inline for one thread, one item, a
  call from a pool thread, or ``remote=True``: one reader at a time for a remote file).
  ``cancel`` (a callable, or an object with ``is_set()`` such as ``threading.Event``)
  is polled before each item and raises ``Cancelled("<what> cancelled")``; on any
  error the items not yet started are dropped and no worker outlives the call.
  ``done(x, result)`` runs in the calling thread after each item, in order: the place
  to advance a ``core.progress`` task.
* ``Stream(..., maps=True)``: its readers may read through the file's map
  (``ggscope.source.ranges.reads_map``); the caller then releases the pages it read.
* ``s.reader(file, slot=0)``: this thread's ``RangeReader`` of ``file`` for ``slot``
  (two slots read two windows that must both stay valid, e.g. both sides of a diff);
  ``s.scratch(key, make)``: this thread's object made once (buffers, count tables).
* ``close()`` (or leaving the ``with``) closes every reader the stream opened.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ggscope.core.errors import Cancelled
from ggscope.core.perprocess import PerProcess
from ggscope.source.ranges import RangeReader

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor   # imported where a pool starts (5 ms)

__all__ = ["Stream", "THREADS", "cancelled"]

THREADS = 2                  # threads per stream by default: the cores of a laptop, not more

_POOLS: PerProcess[dict[int, "ThreadPoolExecutor"]] = PerProcess(dict)    # one per thread count
_in_pool = threading.local()
# (pool thread, slot) -> the read buffer a closed stream's reader left there: the next
# stream's reader in that thread takes it instead of faulting in a new one (measured:
# 2-3 ms of a 28 ms F16 tensor); only the pool's threads, which live as long as the
# process, keep one, so at most ``threads x slots`` chunk-sized buffers stay allocated;
# both are fresh in a forked child (``core.perprocess``: the parent's pool threads do not
# exist there, and an executor that believes it has idle ones would queue work forever)
_SPARE: PerProcess[dict[tuple[int, int], object]] = PerProcess(dict)


def _pool(threads: int) -> "ThreadPoolExecutor":
    """One pool per thread count for the process: a model's tensors (the TUI, ``stats``
    of every tensor, ``diff``) reuse its threads instead of starting new ones each time."""
    from concurrent.futures import ThreadPoolExecutor
    with _POOLS.lock:
        pools = _POOLS.value
        if threads not in pools:
            pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="ggscope-stream",
                                                initializer=setattr, initargs=(_in_pool, "yes", True))
        return pools[threads]


def cancelled(cancel: Any) -> bool:
    """Whether a cancel hook (None, a callable, or an object with ``is_set()``) says stop."""
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


class Stream:
    """Windows of work on the shared pool, with per-thread readers (module docstring)."""

    def __init__(self, *, threads: int = THREADS, cancel: Any = None, what: str = "reading",
                 remote: bool = False, maps: bool = False) -> None:
        self.threads = 1 if remote else max(1, int(threads))
        self.maps = maps
        self.cancel = cancel
        self.what = what
        self.local = threading.local()
        self._readers: list[tuple[RangeReader, tuple[int, int] | None]] = []
        self._lock = threading.Lock()

    def check(self) -> None:
        if cancelled(self.cancel):
            raise Cancelled(f"{self.what} cancelled")

    def scratch(self, key: str, make: Callable[[], Any]) -> Any:
        d = self.local.__dict__
        if key not in d:
            d[key] = make()
        return d[key]

    def reader(self, file: Any, slot: int = 0) -> RangeReader:
        def make() -> RangeReader:
            r = RangeReader(file, self.maps)
            home = (threading.get_ident(), slot) if getattr(_in_pool, "yes", False) else None
            if home is not None:
                with _SPARE.lock:
                    r.buf = _SPARE.value.pop(home, r.buf)      # type: ignore[assignment]
            with self._lock:
                self._readers.append((r, home))
            return r
        return self.scratch(f"reader:{id(file)}:{slot}", make)

    def map(self, work: Callable[[Any], Any], items: Iterable[Any],
            done: Callable[[Any, Any], None] | None = None) -> list[Any]:
        items = list(items)

        def guarded(x: Any) -> Any:
            self.check()
            return work(x)

        results: list[Any] = []
        if self.threads == 1 or len(items) <= 1 or getattr(_in_pool, "yes", False):
            for x in items:
                r = guarded(x)
                results.append(r)
                if done is not None:
                    done(x, r)
            return results
        from concurrent.futures import wait
        pool = _pool(self.threads)
        futures = []
        try:
            for x in items:
                futures.append(pool.submit(guarded, x))
            for x, fut in zip(items, futures):
                r = fut.result()
                results.append(r)
                if done is not None:
                    done(x, r)
        except BaseException:
            for fut in futures:
                fut.cancel()
            wait(futures)                   # no worker outlives the call
            raise
        return results

    def close(self) -> None:
        with self._lock:
            readers, self._readers = self._readers, []
        with _SPARE.lock:
            for r, home in readers:
                if home is not None and r.buf.size:
                    _SPARE.value[home] = r.buf
        for r, _ in readers:
            r.close()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
