"""Read-only access to the bytes of a file, local or remote.

Local files are memory-mapped read-only (``mmap.ACCESS_READ``): opening a 20 GB model
costs the same as opening a small one, and pages of tensor data are only touched when a
consumer actually reads them.  Nothing in ggscope ever opens an inspected file for
writing.

Remote files (``RemoteByteSource``) keep the same shape - ``.buf`` and ``.array`` span
the whole file - over an anonymous, sparse mapping of the remote size: untouched pages
cost no memory.  The size is the server's claim, so the reader checks it against
``netguard.MAX_REMOTE_SIZE`` before this map (and the block table) is made from it.  Bytes arrive by HTTP range in 64 KiB blocks through one choke point,
``ensure(start, end)``; ``read`` and ``view`` call it, so every consumer that reads
through them (tensor data, rules, the hex view) fetches exactly what it touches.  The
spec engine reads ``.buf`` directly, so ``ggscope.open`` fetches the header before it
parses (``prefix``).  ``release`` gives fetched pages back once a consumer is done.
Local sources accept ``ensure``/``release`` as no-ops, so nothing above this module
needs to know which kind it holds.

A local file can shrink while it is mapped (another process truncates it): touching a
mapped page past its new end kills the process with SIGBUS.  So tensor data and the
hex view never read through the map: ``reopen`` gives a descriptor of the *same* file
(``FileChanged`` when the path now names another inode or another size) for
``ggscope.source.ranges`` to ``readinto``, and ``pread`` reads a range through it, a
short read being ``FileChanged`` too (the statistics of ``ggscope stats`` read
through the map when the CLI's SIGBUS guard watches it: ``ggscope.source.ranges``).
``release`` drops a local map's pages from the resident set (the page cache keeps
them).  Every file mapped from disk is recorded
(``ggscope.source.changes``: path, inode, size) so that a command can end
with one line instead of a result read from a file rewritten under it.
"""
from __future__ import annotations

import mmap
import os
import sys

import numpy as np

from ggscope.core.errors import UnreadableFile
from ggscope.source.changes import file_changed, record_mapped, watch_mapping
from ggscope.source.local import check_regular_file, is_remote
from ggscope.core import progress

__all__ = ["ByteSource", "RemoteByteSource", "open_source", "check_regular_file"]

BLOCK = 1 << 16                         # unit of remote fetches and of the fetched-block map
_FETCH_CHUNK = 8 << 20                  # one request fetches at most this much
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)


class ByteSource:
    """A read-only byte buffer backed by an mmap (or by bytes, for tests)."""

    remote = False
    identity: tuple[int, int] | None = None     # (st_dev, st_ino) of a file mapped from disk
    watch: int | None = None                    # the SIGBUS guard's token for this map (changes.guarded)
    _fd: int | None = None

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
                st = os.fstat(fh.fileno())
                if st.st_size == 0:
                    return cls(b"", path)
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except IsADirectoryError as exc:
            raise UnreadableFile(f"{path}: is a directory") from exc
        except OSError as exc:
            raise UnreadableFile(f"{path}: {exc.strerror or exc}") from exc
        src = cls(mm, path)
        src.identity = (st.st_dev, st.st_ino)
        record_mapped(path, src.identity, src.size)
        src.watch = watch_mapping(src.array.__array_interface__["data"][0], src.size, path)   # SIGBUS there: one line
        return src

    def reopen(self) -> int:
        """A new read-only descriptor of the file this source mapped (the caller closes
        it); ``FileChanged`` when the path is gone, names another file, or the file's
        size is no longer the mapped size."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise file_changed(self.path, f"it cannot be opened again: {exc.strerror or exc}") from None
        st = os.fstat(fd)
        why = ("the path now names another file" if (st.st_dev, st.st_ino) != self.identity else
               f"{self.size} bytes when opened, {st.st_size} now" if st.st_size != self.size else "")
        if why:
            os.close(fd)
            raise file_changed(self.path, why)
        return fd

    def pread(self, start: int, end: int) -> bytes:
        """Bytes in [start, end), clipped to the file, like ``read`` - but a file mapped
        from disk is read with ``pread``, never through the map, so a file that shrank
        meanwhile is ``FileChanged`` instead of SIGBUS."""
        if self.identity is None:
            return self.read(start, end)
        start, end = max(0, start), max(0, min(end, self.size))
        if start >= end:
            return b""
        if self._fd is None:
            self._fd = self.reopen()
        data = os.pread(self._fd, end - start, start)
        if len(data) != end - start:
            raise file_changed(self.path, f"it shrank below offset {end} (mapped size {self.size})")
        return data

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

    def ensure(self, start: int, end: int) -> None:
        """Make [start, end) readable through ``.buf``/``.array``; a local file always is."""

    def release(self, start: int, end: int) -> None:
        """A consumer is done with [start, end): the map's pages there (whole pages around
        it) leave the process's resident set (``MADV_DONTNEED``: the page cache keeps the
        file's bytes, a later read maps them again); bytes in memory, or in a map this
        source did not make from a file (anonymous memory would be zeroed), stay."""
        if self.identity is None or self._mmap is None or not hasattr(self._mmap, "madvise"):
            return
        page = mmap.PAGESIZE
        start, end = max(0, start) // page * page, min(end, self.size)
        if end > start:
            self._mmap.madvise(mmap.MADV_DONTNEED, start, end - start)

    def close(self) -> None:
        """Closes the descriptor ``pread`` holds; the map closes when the last numpy view
        of it is gone."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.close()

    def __len__(self) -> int:
        return self.size


def open_source(path: str | os.PathLike) -> ByteSource:
    """A ``ByteSource`` for a local path or an ``http(s)://`` / ``hf://`` URL."""
    if is_remote(path):
        return RemoteByteSource.open(str(path))
    return ByteSource.open(path)


class RemoteByteSource(ByteSource):
    """A remote file behind a sparse anonymous map; see the module docstring."""

    remote = True

    def __init__(self, reader, head: bytes, path: str) -> None:
        size = reader.size or 0      # at most netguard.MAX_REMOTE_SIZE: the reader checked the claim
        if size:
            try:
                mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE)
            except (OSError, OverflowError, ValueError) as exc:
                raise UnreadableFile(f"{path}: cannot reserve {size} bytes of address space for the remote "
                                     f"file ({getattr(exc, 'strerror', None) or exc})") from None
            super().__init__(mm, path)
        else:
            super().__init__(b"", path)
        self.reader = reader
        self._have = np.zeros(-(-size // BLOCK), dtype=bool)
        if head:
            self._store(0, head)

    @classmethod
    def open(cls, url: str, first: int = 256 << 10) -> "RemoteByteSource":  # type: ignore[override]
        """Fetch the first ``first`` bytes (one request; it also tells the file's size)."""
        from ggscope.source.remote import open_reader  # the network stack (asyncio, aiohttp): only for a URL
        reader = open_reader(url)
        head = reader.fetch(0, first)
        return cls(reader, head, url)

    # ---- the choke point ----------------------------------------------------------------
    def ensure(self, start: int, end: int) -> None:
        start, end = max(0, start), min(end, self.size)
        if start >= end:
            return
        b0, b1 = start // BLOCK, -(-end // BLOCK)
        missing = np.flatnonzero(~self._have[b0:b1])
        if not missing.size:
            return
        missing += b0
        # runs of consecutive missing blocks, each fetched in requests of at most _FETCH_CHUNK
        breaks = np.flatnonzero(np.diff(missing) != 1)
        firsts = np.concatenate(([missing[0]], missing[breaks + 1]))
        lasts = np.concatenate((missing[breaks], [missing[-1]]))
        runs = [(int(a) * BLOCK, min(int(z + 1) * BLOCK, self.size)) for a, z in zip(firsts, lasts)]
        total = sum(e - s for s, e in runs)
        with progress.task(f"fetching {self.path.rsplit('/', 1)[-1]}", total) as bar:
            for s, e in runs:
                for a in range(s, e, _FETCH_CHUNK):
                    z = min(e, a + _FETCH_CHUNK)
                    self._store(a, self.reader.fetch(a, z))
                    bar.advance(z - a)

    def _store(self, start: int, data: bytes) -> None:
        if not data:
            return
        end = start + len(data)
        assert self._mmap is not None
        self._mmap[start:end] = data
        # a block counts as fetched only when all of it (or the file's tail) arrived
        b0 = -(-start // BLOCK) if start % BLOCK else start // BLOCK
        b1 = len(self._have) if end >= self.size else end // BLOCK
        if b1 > b0:
            self._have[b0:b1] = True

    def has(self, start: int, end: int) -> bool:
        """Whether [start, end) is held now (a read of it costs no request)."""
        start, end = max(0, start), min(end, self.size)
        return start >= end or bool(self._have[start // BLOCK:-(-end // BLOCK)].all())

    def fetched(self) -> int:
        """Bytes of the file held now (whole blocks)."""
        n = int(self._have.sum()) * BLOCK
        return min(n, self.size)

    def prefix(self, n: int) -> ByteSource:
        """The first ``n`` bytes as a plain source of size ``n`` (fetched first)."""
        n = max(0, min(n, self.size))
        self.ensure(0, n)
        return ByteSource(self.buf[:n], self.path)

    def release(self, start: int, end: int) -> None:
        """Drop the whole blocks inside [start, end) from memory; they are fetched again if read."""
        b0, b1 = -(-max(0, start) // BLOCK), min(end, self.size) // BLOCK
        if end >= self.size:
            b1 = len(self._have)
        if b1 <= b0 or self._mmap is None:
            return
        s, e = b0 * BLOCK, min(b1 * BLOCK, self.size)
        page = mmap.PAGESIZE
        e_page = e - e % page if e < self.size else -(-e // page) * page
        if hasattr(self._mmap, "madvise") and e_page > s:
            self._mmap.madvise(mmap.MADV_DONTNEED, s, e_page - s)
            self._have[b0:b1] = False

    # ---- reads go through ensure ----------------------------------------------------------
    def read(self, start: int, end: int) -> bytes:
        self.ensure(start, end)
        return super().read(start, end)

    def view(self, start: int, end: int) -> np.ndarray:
        self.ensure(start, end)
        return super().view(start, end)

    def find(self, sub: bytes, start: int, end: int) -> int:
        self.ensure(start, end)
        return super().find(sub, start, end)
