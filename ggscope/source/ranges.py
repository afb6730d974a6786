"""Reading byte ranges of a model file in bounded chunks, without mapping them.

Why: ``ByteSource`` maps the whole file, and every page read through the map stays in
the process's resident set until the map is closed: streaming the 20 GB of a big model
through it "costs" 20 GB of RSS (``validate --deep`` peaked at 21 GB on such a file,
issue 13 item 5).  ``RangeReader`` reads files on disk with ``readinto`` into one
reused buffer (the page cache holds the data, not the process), copies a window of a
remote file and gives its pages back, and slices in-memory sources (``open_bytes``)
without a copy.  Reading instead of touching the map also means a file that shrinks
meanwhile is an error, never SIGBUS.  The one exception is asked for: a reader made with
``maps=True`` (the statistics' chunks) gives views of the map of a file on disk when
``reads_map`` holds -- the CLI's SIGBUS guard watches that map and the command opened
``changes.reads_through_map`` -- so a page that vanishes ends the command with the file's
line and exit status 2, as ``FileChanged`` would, and nothing is copied; its caller
gives the pages back (``source.release``).  Statistics, ``diff`` and the ``--deep`` rules read
tensor data through it, by way of the streaming engine (``ggscope.source.stream``).

Contract (``mf``/``file``: a ``ggscope.model.ModelFile``, or anything with its
``source`` and ``path``; this layer does not import the model): ``RangeReader(mf).read(start, nbytes[, file])`` returns a uint8 array of the
bytes ``[start, start + nbytes)`` of ``file`` (default ``mf``), valid until the next
``read`` (a view of the map on the mapped route: valid while the file is open); a file
on disk that is now another file, has another size or reads short raises
``ggscope.core.errors.FileChanged``.  ``RangeReader(mf, maps=True)`` may read through the
map (``reads_map(file)``: whether it does now).  ``read_range(file, start, nbytes)`` is
the same read into a new array (a tensor's bytes that outlive the call).  ``close()`` releases the
file handles (the reader is also a context manager).  One reader serves one thread.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ggscope.source.changes import file_changed, guarded, map_reads_on



__all__ = ["RangeReader", "read_range", "reads_map"]


def reads_map(file: Any) -> bool:
    """Whether a reader that may map (``RangeReader(file, maps=True)``) reads ``file``
    through its map now: a file mapped from disk whose map the SIGBUS guard watches,
    inside ``changes.reads_through_map``."""
    src = file.source
    return getattr(src, "identity", None) is not None and map_reads_on() and guarded(getattr(src, "watch", None))


class RangeReader:
    """Byte ranges of one file, read into a reused buffer (see the module docstring).

    Files opened from disk are read with ``readinto`` (page cache, not process RSS);
    remote files are fetched, copied into the buffer and their pages released, so memory
    stays one window; in-memory files (``open_bytes``) are sliced from their buffer.  A
    split model's tensors live in several files: ``read`` takes the tensor's own file.
    """

    def __init__(self, mf: Any, maps: bool = False) -> None:
        self.mf = mf
        self.fh = None
        self.maps = maps
        self.mapped = maps and reads_map(mf)
        if getattr(mf.source, "identity", None) is not None:       # mapped from disk: read, not touched
            self.fh = open(mf.source.reopen(), "rb", buffering=0)
        self.buf = np.empty(0, np.uint8)
        self.others: dict[int, RangeReader] = {}

    def read(self, start: int, nbytes: int, file: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """The bytes [start, start + nbytes) (into ``out`` when given, a uint8 array of
        at least ``nbytes``; else into the reused buffer, or a view of an in-memory file)."""
        if file is not None and file is not self.mf:
            other = self.others.get(id(file))
            if other is None:
                other = self.others[id(file)] = RangeReader(file, self.maps)
            return other.read(start, nbytes, out=out)
        src = self.mf.source
        if self.mapped and out is None:
            got = src.view(start, start + nbytes)
            if got.size != nbytes or start < 0:     # the map is the file as checked at reopen
                raise ValueError(f"{self.mf.path}: {nbytes} bytes at offset {start} are not inside "
                                 f"its {src.size} bytes")
            return got
        if self.fh is None and not src.remote and out is None:
            return src.view(start, start + nbytes)
        if out is None:
            if self.buf.size < nbytes:
                self.buf = np.empty(nbytes, np.uint8)
            out = self.buf[:nbytes]
        else:
            out = out.reshape(-1)[:nbytes]
        if self.fh is None:
            got = src.view(start, start + nbytes)
            out = out[:got.size]
            np.copyto(out, got)
            del got
            src.release(start, start + nbytes)
            return out
        self.fh.seek(start)
        got = self.fh.readinto(memoryview(out))
        while got is not None and got < nbytes:
            more = self.fh.readinto(memoryview(out[got:]))
            if not more:
                break
            got += more
        if got != nbytes:
            raise file_changed(self.mf.path, f"it shrank: {nbytes} bytes at offset {start} read short "
                                            f"(mapped size {src.size})")
        return out

    def close(self) -> None:
        for other in self.others.values():
            other.close()
        if self.fh is not None:
            self.fh.close()
            self.fh = None

    def __enter__(self) -> "RangeReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_range(file: Any, start: int, nbytes: int) -> np.ndarray:
    """A new uint8 array of the bytes [start, start + nbytes) of ``file``, clipped to the
    file as ``ByteSource.view`` clips; read, never taken from the map of a file on disk."""
    src = file.source
    start = max(0, start)
    nbytes = max(0, min(start + nbytes, src.size) - start)
    if getattr(src, "identity", None) is None:
        return src.view(start, start + nbytes)
    with RangeReader(file) as r:
        return r.read(start, nbytes, out=np.empty(nbytes, np.uint8))
