"""Files that change under ggscope: which ones did, and a guard for mapped pages that vanish.

Why: a model file can shrink, grow or be replaced while a command reads it (a download
still running, a converter rewriting its output).  Reads of tensor data notice it
(``ggscope.source.ranges``: a short read, another inode, another size) and raise
``FileChanged``; but a result may have been computed from bytes the file no longer
holds without any read noticing, and what is read through the map (the parser,
metadata arrays, the rules) gets no error at all - touching a page past the new end
kills the process with SIGBUS.  This module keeps the record of the files mapped from
disk (path, inode, size: ``record_mapped``) so ``ggscope.cli.main`` can end any command
with one line and exit status 2 when one of them changed (``changed_since``), and
installs the SIGBUS guard (``ggscope.source._guard``, C, built at install when a
compiler is there): ``watch_mapping`` gives it each map and the line to write.  The
CLI installs the guard; a library caller keeps its own signal handling.  Light
(``os`` and ``ggscope.core``), so the CLI can import it before any command.

Contract: ``file_changed(path, detail)`` -> the ``FileChanged`` to raise (the file is
then reported and ``changed_since`` leaves it out); ``checkpoint()`` -> a mark;
``changed_since(mark)`` -> one message per file mapped after the mark that is now gone,
another file or another size; ``guard_mapped_reads()`` -> whether the guard is on; ``watch_mapping``
-> a token, ``guarded(token)`` whether that map is still watched;
``with reads_through_map():`` lets readers that ask read tensor data through watched
maps (``map_reads_on()``), the choice of a command whose answer to a changed file is
exit status 2 anyway.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ggscope.core.errors import FileChanged

__all__ = ["record_mapped", "checkpoint", "changed_since", "file_changed", "guard_mapped_reads", "watch_mapping",
           "guarded", "reads_through_map", "map_reads_on"]

# path -> (sequence number, (st_dev, st_ino), size) of each file mapped from disk
_MAPPED: dict[str, tuple[int, tuple[int, int], int]] = {}
_seq = 0
_guard = None                       # ggscope.source._guard once installed
_watches = 0                        # maps given to the guard so far (the guard keeps its last WATCHED)
_map_reads = 0                      # ``reads_through_map`` blocks open now


def record_mapped(path: str, identity: tuple[int, int], size: int) -> None:
    """Remember that ``path`` (this inode, this size) is mapped and read from now on."""
    global _seq
    _seq += 1
    _MAPPED[path] = (_seq, identity, size)


def checkpoint() -> int:
    """A mark: ``changed_since(mark)`` looks only at files mapped after it."""
    return _seq


def file_changed(path: str, detail: str) -> FileChanged:
    """The ``FileChanged`` to raise for ``path``; ``changed_since`` no longer lists it."""
    _MAPPED.pop(path, None)
    return FileChanged(path, detail)


def changed_since(mark: int) -> list[str]:
    """One message per file mapped after ``mark`` that is now gone, another file or
    another size, and that no ``FileChanged`` reported yet."""
    out = []
    for path, (seq, identity, size) in list(_MAPPED.items()):
        if seq <= mark:
            continue
        try:
            st = os.stat(path)
        except OSError as exc:
            why = f"it cannot be read any more: {exc.strerror or exc}"
        else:
            why = ("the path now names another file" if (st.st_dev, st.st_ino) != identity else
                   f"{size} bytes when opened, {st.st_size} now" if st.st_size != size else "")
        if why:
            out.append(str(file_changed(path, why)))
    return out


def guard_mapped_reads() -> bool:
    """Install the SIGBUS guard when the install built it (True if it is on): a page of a
    watched map that vanished because the file shrank ends the process with that file's
    line and exit status 2 instead of a bare signal."""
    global _guard
    try:
        from ggscope.source import _guard as guard  # compiled: absent when built without a compiler (handled below)
    except ImportError:                     # built without a compiler: the signal stays
        return False
    guard.install()
    _guard = guard
    return True


def watch_mapping(address: int, size: int, path: str) -> int | None:
    """Give the guard (when installed) one map of ``path`` and the line it writes if a
    page of it faults; the watch's token for ``guarded`` (None: not watched)."""
    global _watches
    if _guard is None or size <= 0:
        return None
    line = f"ggscope: {FileChanged(path, 'it shrank below a page ggscope had mapped')}\n"
    data = line.encode("utf-8", "backslashreplace")
    if len(data) > 1000:                    # the guard's fixed slot: keep the end, which names the change
        data = data[:400] + b"..." + data[-597:]
    _guard.watch(address, size, data)
    _watches += 1
    return _watches


def guarded(token: int | None) -> bool:
    """Whether the map ``watch_mapping`` gave ``token`` is still watched: the guard keeps
    the last ``WATCHED`` maps (``ggscope.source._guard``), older ones fault as before."""
    # (a guard built before it exported WATCHED: no map counts as watched, read(2) stays)
    return _guard is not None and token is not None and _watches - token < getattr(_guard, "WATCHED", 0)


@contextlib.contextmanager
def reads_through_map() -> Iterator[None]:
    """Within the block, readers that may (``map_reads_on``) read tensor data through the
    file's map instead of copying it with read(2): a command whose outcome for a file that
    changed is one line and exit status 2 anyway (``stats``) enters it, so a page that
    vanishes is the guard's line, where read(2) would have raised ``FileChanged``."""
    global _map_reads
    _map_reads += 1
    try:
        yield
    finally:
        _map_reads -= 1


def map_reads_on() -> bool:
    """Whether tensor data may be read through watched maps now: the guard is installed
    and a ``reads_through_map`` block is open (a library caller has neither)."""
    return _guard is not None and _map_reads > 0
