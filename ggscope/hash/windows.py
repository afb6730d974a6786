"""Tensor data as a stream of bounded windows, from disk, memory or HTTP ranges.

Why: hashing must run at the speed of the hash and the disk with bounded memory.
``llama-gguf-hash`` reads the whole file into memory first; mapping it would put every
page in ggscope's resident set (see ``ggscope.source.ranges``).  So a local file is read
with ``preadv`` into a few reused buffers (the page cache holds the data, the process
holds ``depth`` windows), a remote one by ranged GETs of the tensor data only (never the
header again, never the padding between far-apart tensors), several requests in flight
at once, and an in-memory source (``open_bytes``) is sliced.

Contract: ``stream(mf, tensors, threads=)`` yields ``(index, memoryview)`` pieces in
tensor order, each tensor's bytes ``[offset, offset + nbytes)`` in order and complete,
a zero-byte tensor as one empty piece; a view is valid until the next piece is taken.
Small neighbouring tensors share one read (gaps up to ``GAP`` bytes are read and
dropped), no read exceeds ``WINDOW`` bytes.  With ``threads > 1`` (always for remote
files) up to ``depth`` reads run ahead in worker threads.  A file on disk that ends
early or changes (size, modification time, inode) while it is read raises
``FileChanged``; a remote file that changes size or identity raises the source's
``RemoteError`` (``ggscope.source.remote``).
"""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ggscope.core.errors import GGScopeError

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile, TensorInfo

__all__ = ["FileChanged", "WINDOW", "GAP", "plan", "stream"]

WINDOW = 8 << 20          # bytes per read: large enough for the hash, small enough to bound memory
GAP = 64 << 10            # read through gaps up to this size rather than issue another request
REMOTE_DEPTH = 4          # remote reads in flight


class FileChanged(GGScopeError):
    """The file changed or ended while it was being hashed: its hashes would be wrong."""


def plan(tensors: Sequence["TensorInfo"], window: int = WINDOW, gap: int = GAP
         ) -> list[tuple[int, int, list[tuple[int, int, int]]]]:
    """Reads ``(start, end, pieces)``; a piece is ``(tensor index, start, end)`` inside it."""
    reads: list[tuple[int, int, list[tuple[int, int, int]]]] = []
    for i, t in enumerate(tensors):
        s0, e0 = t.offset, t.offset + t.nbytes
        chunks = [(s, min(e0, s + window)) for s in range(s0, e0, window)] or [(s0, s0)]
        for s, e in chunks:
            if reads:
                rs, re_, pieces = reads[-1]
                if re_ <= s <= re_ + gap and e - rs <= window:
                    pieces.append((i, s, e))
                    reads[-1] = (rs, e, pieces)
                    continue
            reads.append((s, e, [(i, s, e)]))
    return reads


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


class _Disk:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        self.id = _identity(os.fstat(self.fd))

    def read(self, start: int, end: int, buf: bytearray) -> memoryview:
        n = end - start
        mv = memoryview(buf)[:n]
        got = 0
        while got < n:
            k = os.preadv(self.fd, [mv[got:]], start + got)
            if k <= 0:
                raise FileChanged(f"{self.path}: the file ended at byte {start + got}, before the tensor data "
                                  f"its header describes (was it truncated while being read?)")
            got += k
        return mv

    def check(self) -> None:
        now = _identity(os.fstat(self.fd))
        try:
            named = _identity(os.stat(self.path))
        except OSError:
            named = None
        if now != self.id or (named is not None and named != self.id):
            raise FileChanged(f"{self.path}: the file changed while it was being hashed; hash it again")

    def close(self) -> None:
        os.close(self.fd)


class _Remote:
    def __init__(self, source) -> None:
        self.source = source
        self.reader = source.reader
        self.size = source.size

    def read(self, start: int, end: int, buf: bytearray) -> memoryview:
        if self.source.has(start, end):       # already fetched with the header: no second request
            return memoryview(self.source.read(start, end))
        data = self.reader.fetch(start, end)
        if len(data) != end - start:
            raise FileChanged(f"{self.reader.display}: the server sent {len(data)} of the {end - start} bytes "
                              f"at offset {start}")
        return memoryview(data)

    def check(self) -> None:
        if self.reader.size is not None and self.reader.size != self.size:
            raise FileChanged(f"{self.reader.display}: the file changed size while it was being hashed")

    def close(self) -> None:
        pass


class _Memory:
    def __init__(self, source) -> None:
        self.source = source

    def read(self, start: int, end: int, buf: bytearray) -> memoryview:
        v = self.source.view(start, end)
        if v.size != end - start:
            raise FileChanged(f"{self.source.path}: the data ends at byte {start + v.size}, before the tensor "
                              "data its header describes")
        return memoryview(v)

    def check(self) -> None:
        pass

    def close(self) -> None:
        pass


def _opener(mf: "ModelFile"):
    src = mf.source
    if src.remote:
        return _Remote(src)
    if getattr(src, "_mmap", None) is not None and os.path.isfile(mf.path):
        return _Disk(mf.path)
    return _Memory(src)


def stream(mf: "ModelFile", tensors: Sequence["TensorInfo"], *, threads: int = 1,
           window: int = WINDOW) -> Iterator[tuple[int, memoryview]]:
    """The tensors' bytes as pieces (see the module docstring)."""
    reads = plan(tensors, window)
    src = _opener(mf)
    try:
        remote = isinstance(src, _Remote)
        depth = REMOTE_DEPTH if remote else (1 if threads <= 1 else max(2, threads))
        size = 0 if remote or isinstance(src, _Memory) else max((e - s for s, e, _ in reads), default=0)
        if depth == 1:
            buf = bytearray(size)
            for s, e, pieces in reads:
                mv = src.read(s, e, buf)
                for i, ps, pe in pieces:
                    yield i, mv[ps - s:pe - s]
        else:
            with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="ggscope-hash-read") as pool:
                free = [bytearray(size) for _ in range(depth + 1)]
                pending: deque = deque()
                todo = iter(reads)
                try:
                    for _ in range(depth):
                        r = next(todo, None)
                        if r is None:
                            break
                        b = free.pop()
                        pending.append((r, b, pool.submit(src.read, r[0], r[1], b)))
                    while pending:
                        (s, e, pieces), b, fut = pending.popleft()
                        mv = fut.result()
                        for i, ps, pe in pieces:
                            yield i, mv[ps - s:pe - s]
                        del mv
                        free.append(b)
                        r = next(todo, None)
                        if r is not None:
                            b2 = free.pop()
                            pending.append((r, b2, pool.submit(src.read, r[0], r[1], b2)))
                finally:
                    for _, _, fut in pending:
                        fut.cancel()
        src.check()
    finally:
        src.close()
