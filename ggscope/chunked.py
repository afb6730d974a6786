"""Reading byte ranges of a model file in bounded chunks, without mapping them.

Why: ``ByteSource`` maps the whole file, and every page read through the map stays in
the process's resident set until the map is closed: streaming the 20 GB of a big model
through it "costs" 20 GB of RSS (``validate --deep`` peaked at 21 GB on such a file,
issue 13 item 5).  ``RangeReader`` reads files on disk with ``readinto`` into one
reused buffer (the page cache holds the data, not the process), and slices in-memory
sources (``open_bytes``) without a copy.  ``diff`` and the ``--deep`` rules read tensor
data through it; ``ggscope.stats`` streams the same way with ``pread``.

Contract: ``RangeReader(mf).read(start, nbytes)`` returns a uint8 array of exactly
``nbytes`` bytes, valid until the next ``read``; a short read raises ``OSError``.
``close()`` releases the file handle (the reader is also a context manager).
``release_pages(mf, start, end)`` drops the pages of ``[start, end)`` that a reader
through the map (``TensorInfo.raw()``) touched from the process's resident set; the
data stay in the page cache and the map stays valid (the next read faults them back).
"""
from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .modelfile import ModelFile

__all__ = ["RangeReader", "release_pages"]


class RangeReader:
    """Byte ranges of one file, read into a reused buffer (see the module docstring)."""

    def __init__(self, mf: "ModelFile") -> None:
        self.mf = mf
        self.fh = None
        if getattr(mf.source, "_mmap", None) is not None and os.path.isfile(mf.path):
            self.fh = open(mf.path, "rb", buffering=0)
        self.buf = np.empty(0, np.uint8)

    def read(self, start: int, nbytes: int) -> np.ndarray:
        if self.fh is None:
            out = self.mf.source.view(start, start + nbytes)
            if out.size != nbytes:
                raise OSError(f"{self.mf.path}: short read at offset {start}")
            return out
        if self.buf.size < nbytes:
            self.buf = np.empty(nbytes, np.uint8)
        out = self.buf[:nbytes]
        self.fh.seek(start)
        got = self.fh.readinto(memoryview(out))
        while got is not None and got < nbytes:
            more = self.fh.readinto(memoryview(out[got:]))
            if not more:
                break
            got += more
        if got != nbytes:
            raise OSError(f"{self.mf.path}: short read at offset {start}")
        return out

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None

    def __enter__(self) -> "RangeReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def release_pages(mf: "ModelFile", start: int, end: int) -> None:
    """Unmap the resident pages of ``[start, end)`` of ``mf``'s memory map, if it has one."""
    mm = getattr(mf.source, "_mmap", None)
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if mm is None or advice is None or end <= start:
        return
    lo = start - start % mmap.PAGESIZE
    hi = min(end, len(mm))
    if hi > lo:
        try:
            mm.madvise(advice, lo, hi - lo)
        except (OSError, ValueError):      # advice only: a refusal costs memory, never correctness
            pass
