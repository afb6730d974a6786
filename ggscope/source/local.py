"""Refuse what is not a regular file before opening it.

Why: opening a FIFO blocks until a writer appears, /dev/zero never ends and a directory
cannot be mapped; a CI gate or a browser must say so in one line instead.  A stat call
answers without opening, and this module imports nothing heavy, so the browser's
command can ask before its window is up.

It also keeps the record of the files mapped from disk (path, inode, size:
``record_mapped``), light enough for ``ggscope.cli.main`` to ask at the end of any
command whether one of the files it read changed meanwhile (``changed_since``): one
line and exit status 2 rather than a result that the file on disk no longer backs.
``file_changed`` makes the ``FileChanged`` to raise and marks the file as reported.

What is still read through a map (the parser, metadata arrays, the rules) cannot get
an error back when a page vanishes: ``guard_mapped_reads`` installs the SIGBUS guard
(``ggscope.source._guard``, C, built at install when a compiler is there; the CLI
installs it, a library caller keeps its own signal handling) and ``watch_mapping``
gives it each map and the line to write - the file's name, exit status 2.
"""
from __future__ import annotations

import os
import stat

from ggscope.core.errors import FileChanged, UnreadableFile

__all__ = ["check_regular_file", "record_mapped", "checkpoint", "changed_since", "file_changed",
           "guard_mapped_reads", "watch_mapping"]

# path -> (sequence number, (st_dev, st_ino), size) of each file mapped from disk
_MAPPED: dict[str, tuple[int, tuple[int, int], int]] = {}
_seq = 0
_guard = None                       # ggscope.source._guard once installed

_KINDS = ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
          (stat.S_ISCHR, "is a character device, not a regular file"),
          (stat.S_ISBLK, "is a block device, not a regular file"),
          (stat.S_ISSOCK, "is a socket, not a regular file"))


def check_regular_file(path: str) -> None:
    """Raise ``UnreadableFile`` (one line) unless ``path`` is a regular file; never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: no such file") from None
    except OSError as exc:
        raise UnreadableFile(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        why = next((w for test, w in _KINDS if test(st.st_mode)), "is not a regular file")
        raise UnreadableFile(f"{path}: {why}")


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
        from ggscope.source import _guard as guard
    except ImportError:                     # built without a compiler: the signal stays
        return False
    guard.install()
    _guard = guard
    return True


def watch_mapping(address: int, size: int, path: str) -> None:
    """Give the guard (when installed) one map of ``path`` and the line it writes if a
    page of it faults."""
    if _guard is None or size <= 0:
        return
    line = f"ggscope: {FileChanged(path, 'it shrank below a page ggscope had mapped')}\n"
    data = line.encode("utf-8", "backslashreplace")
    if len(data) > 1000:                    # the guard's fixed slot: keep the end, which names the change
        data = data[:400] + b"..." + data[-597:]
    _guard.watch(address, size, data)
