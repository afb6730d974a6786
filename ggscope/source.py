"""Read-only access to the bytes of a file.

Files are memory-mapped read-only (``mmap.ACCESS_READ``): opening a 20 GB model costs
the same as opening a small one, and pages of tensor data are only touched when a
consumer actually reads them.  Nothing in ggscope ever opens an inspected file for
writing.
"""
from __future__ import annotations

import mmap
import os

import numpy as np

from .errors import UnreadableFile

__all__ = ["ByteSource"]


class ByteSource:
    """A read-only byte buffer backed by an mmap (or by bytes, for tests)."""

    def __init__(self, data, path: str = "<memory>") -> None:
        self.path = path
        self._mmap = data if isinstance(data, mmap.mmap) else None
        self.buf = memoryview(data)
        self.size = len(self.buf)
        self.array = np.frombuffer(self.buf, dtype=np.uint8) if self.size else np.zeros(0, np.uint8)

    @classmethod
    def open(cls, path: str | os.PathLike) -> "ByteSource":
        path = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    return cls(b"", path)
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except IsADirectoryError as exc:
            raise UnreadableFile(f"{path}: is a directory") from exc
        except OSError as exc:
            raise UnreadableFile(f"{path}: {exc.strerror or exc}") from exc
        return cls(mm, path)

    def read(self, start: int, end: int) -> bytes:
        """Bytes in [start, end), clipped to the file."""
        return bytes(self.buf[max(0, start):max(0, min(end, self.size))])

    def view(self, start: int, end: int) -> np.ndarray:
        """A zero-copy uint8 view of [start, end), clipped to the file."""
        return self.array[max(0, start):max(0, min(end, self.size))]

    def find(self, sub: bytes, start: int, end: int) -> int:
        """Offset of ``sub`` in [start, end), or -1; does not copy the file."""
        if self._mmap is not None:
            return self._mmap.find(sub, start, end)
        hit = bytes(self.buf[start:end]).find(sub)
        return hit + start if hit >= 0 else -1

    def close(self) -> None:
        """Nothing to do eagerly: the map closes when the last numpy view of it is gone."""

    def __len__(self) -> int:
        return self.size

