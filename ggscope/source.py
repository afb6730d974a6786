"""Read-only access to the bytes of a file.

Files are memory-mapped read-only (``mmap.ACCESS_READ``): opening a 20 GB model costs
the same as opening a small one, and pages of tensor data are only touched when a
consumer actually reads them.  Nothing in ggscope ever opens an inspected file for
writing.
"""
from __future__ import annotations

import mmap
import os
import stat

import numpy as np

from .errors import UnreadableFile

__all__ = ["ByteSource", "check_regular_file"]

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
        """Map ``path`` read-only; refuse anything but a regular file *before* opening it
        (opening a FIFO blocks until a writer appears; /dev/zero never ends)."""
        path = os.fspath(path)
        check_regular_file(path)
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

