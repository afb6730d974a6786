"""A tensor's raw blocks in chunks, read through the one streaming engine.

Why: every statistics route walks the same chunks of whole blocks, once or twice, on
both cores, with cancel and progress; ``ggscope.source.stream`` does the reading
(``readinto`` per thread, so pages never pile up and a file that shrinks meanwhile is
``FileChanged``, not SIGBUS), the pool and the cancel check.  This module only knows
blocks: chunk ``i`` is ``step`` blocks from block ``i``, and progress is counted in
elements.

Each byte is read once per tensor when it fits ``keep_bytes``: a route whose pass two
reads the raw blocks again (``keep()``, called before pass one) gets pass one's chunks
read straight into one tensor-sized buffer, and pass two reads them from there instead
of from the file.  Measured on one thread (benchmarks/stats_vs_ggml.py's Q8_0 data): the
kernel's page-cache copy is 16 % of a pass over a file written in large pieces and 30 %
over a real model file, whose page cache is in 4 KiB pages as a download leaves it;
keeping the bytes saves one copy but writes them to memory instead of a cache-sized
buffer.  Net CPU: even below the L3 cache's size; 10-16 % less on 34-64 MB tensors of
a file written 4 KiB at a time, about 5 % more on the same written in large pieces;
13-20 % less on gemma-3-270m's 178 MB token_embd (with a budget that holds it); and one
download instead of two for a remote file.  Above the budget, or for an in-memory
file (sliced, never copied), every pass reads its chunks as before, into this thread's
reused chunk buffer.  The tensor-sized buffer is the process's one spare (``_KEPT``,
like the stream's spare chunk buffers), reused rather than faulted in again per
tensor: at most ``keep_bytes`` stay allocated between tensors -- anonymous memory,
never the file's mapped pages.

A route that reads its bytes once (counting F16/BF16 codes, BIT1 bits) reads each chunk
in windows of ``WINDOW_BYTES`` (``windows(i)``) into one buffer per thread that outlives
the call.  Before, it read each 8 MiB chunk into the reader's buffer, made per call on
the calling thread: the second one-thread call of a process faulted in some 800 pages
(500 of them that fresh buffer: glibc's mmap threshold moves after the first free; the
rest ``counted.from_value_counts``' temporaries), 2 ms of a 17 ms F16 tensor -- the gap
between benchmarks/stats_vs_ggml.py's one-core wall clock (that call) and its CPU time
(the next one, which found the pages in place).  Measured on that tensor, one thread, the window's
size barely matters: 1, 2, 4 and 8 MiB within 3 % (noise), 512 KiB 5-10 % slower (more
count_codes calls, each ending with a flush of its byte table); the read(2) copy into a
window in L2 was not measurably cheaper than into an 8 MiB buffer in this machine's
32 MiB L3.  The two-pass routes keep the tensor-sized buffer: reading the tensor twice
from the page cache instead (``RAW_CACHE_BYTES`` 0, each chunk into the thread's reused
chunk buffer, which stays in L3) measured 5 % slower on one core for Q8_0 and 4 % for
Q5_K, 32 Mi elements.  Why read(2) at all, when a map would copy nothing: a
page of a map whose file is truncated meanwhile is SIGBUS, even once faulted in (the
kernel unmaps it), and ``FileChanged`` is this engine's promise to a library caller.

The mapped route (``mapped``): under the CLI's SIGBUS guard, inside
``changes.reads_through_map`` (``ggscope stats``), a page that vanishes ends the
command with the file's line and exit status 2 -- what ``FileChanged`` ends it with --
so there ``ggscope.source.ranges.reads_map`` holds and every chunk is a view of the
file's map: no read(2) copy, no window buffer, pass two reads the map again (``keep()``
is a no-op), and the mapped pages leave the resident set (``ByteSource.release``) when
the tensor is done -- at most ``keep_bytes`` of them, the kept buffer's budget -- or
after each chunk for a one-pass tensor above it.  Measured one core against one
(benchmarks/stats_vs_ggml.py, 32 Mi elements, the same run): F16 +21-25 %, Q8_0
+19-25 %, Q5_K +14-20 % on a file written in large pieces (large folios); on one written
4 KiB at a time (``--small-pages``: 4 KiB pages, more faults for the map, slower reads
too) less and noisier, F16 +4-18 %, Q8_0 -3..+17 %, Q5_K -6..+18 % over five runs;
512 MiB of F16 (one pass, released per chunk) +23-29 %.  Two cases keep
read(2): a two-pass tensor above the budget (its pages released per chunk are faulted
in again by pass two: 7-9 % more CPU than two reads into the cache-sized chunk buffer,
512 MiB Q8_0), and a tensor below ``MAP_MIN_BYTES`` (per tensor, one core: 17-512 KiB
of Q8_0/F16 cost 10-14 us, 2-5 %, more mapped -- the release, the faults; 1-2 MiB 2-4 %
less, 4 MiB 9-19 %, 16-32 MiB 6-14 %).  gemma-3-270m gains nothing (its quantized
tensors are 0.1-1.3 MB, its 178 MB token_embd above the budget).  ``MADV_POPULATE_READ``
per chunk measured no better than faulting the pages in as the kernels touch them.

Contract: ``Chunks(t, lay, chunk_elems, threads, task, cancel, passes, kernels,
cache_bytes, keep_bytes=0)``; ``keep()`` asks for the tensor's bytes to be kept for
pass two (a no-op above ``keep_bytes``; ``kept`` is the buffer, or None); chunks hold
at most ``chunk_elems`` elements, on several threads split into a multiple of the
threads where each piece keeps ``SPLIT_MIN_ELEMS`` (``_step``); ``raw(i)`` the ``(rows, block_bytes)`` uint8 blocks of the chunk starting at block
``i`` (valid until this thread's next ``raw``, or until ``close()`` when kept or mapped); ``windows(i)``
the same chunk as pieces of at most ``WINDOW_BYTES`` (a one-pass route); ``run(work, done0)``
-> ``[work(i) for i in starts]`` in order, advancing ``task`` to ``done0`` plus the
elements done after each chunk; ``scratch(key, make)`` a per-thread object; ``check()``
raises ``Cancelled``; ``close()`` closes the readers.  A tensor whose data the file
does not hold raises ``ValueError`` before anything is read.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.core.perprocess import PerProcess
from ggscope.facts.ggml_types import Layout
from ggscope.source.ranges import reads_map
from ggscope.source.stream import Stream

if TYPE_CHECKING:
    from ggscope.core.progress import Task
    from ggscope.model.modelfile import TensorInfo

__all__ = ["Chunks"]

SPLIT_MIN_ELEMS = 1 << 18          # elements below which a chunk is not split for another thread
WINDOW_BYTES = 2 << 20             # a one-pass route's read (measured: 1-8 MiB alike, 512 KiB slower)
MAP_MIN_BYTES = 1 << 20            # smaller tensors are read even on the mapped route (measured)
_WINDOW = threading.local()         # this thread's window buffer (at most WINDOW_BYTES), between reads
# the spare tensor-sized buffer (at most one, of at most keep_bytes); fresh in a forked child
_KEPT: PerProcess[list[np.ndarray]] = PerProcess(list)


def _step(n_blocks: int, block_elems: int, chunk_elems: int, threads: int) -> int:
    """Blocks per chunk: at most ``chunk_elems`` elements; on several threads, as many
    equal chunks as a multiple of the threads needs (a tensor of one or two chunks --
    most of a real model's -- ran on one thread while the other waited, and a short last
    chunk left a thread idle at the end), but none below ``SPLIT_MIN_ELEMS``: handing a
    chunk to the pool costs more than a small one's work."""
    step = max(1, chunk_elems // block_elems)
    if threads > 1:
        n_chunks = -(-n_blocks // step)
        pieces = min(-(-n_chunks // threads) * threads, n_blocks * block_elems // SPLIT_MIN_ELEMS)
        if pieces >= n_chunks:
            step = -(-n_blocks // pieces)
    return step


class Chunks:
    """Chunks of a tensor's raw blocks on the streaming engine (module docstring)."""

    def __init__(self, t: "TensorInfo", lay: Layout, chunk_elems: int, threads: int, task: "Task",
                 cancel: Any, passes: int, kernels: Any, cache_bytes: int, keep_bytes: int = 0) -> None:
        self.t, self.lay = t, lay
        self.n_blocks = t.n_elements // lay.block_elems
        need = self.n_blocks * lay.block_bytes
        if t.file is None:
            raise ValueError(f"tensor {t.name!r} belongs to no file: there are no bytes to read")
        size = t.file.source.size
        held = max(0, min(t.offset + t.nbytes, size) - max(0, t.offset))
        if t.offset < 0 or held != need:
            raise ValueError(f"tensor {t.name!r} ({t.layout}): needs {need} bytes of data, "
                             f"the file holds {held}")
        # the CLI's guarded route: views of the file's map, no copy (``ranges.reads_map``),
        # except pass two of a tensor above the budget (its pages would be faulted in twice)
        self.mapped = reads_map(t.file) and MAP_MIN_BYTES <= need and (passes == 1 or need <= keep_bytes)
        self.stream = Stream(threads=threads, cancel=cancel, what=f"statistics of {t.name!r}",
                             remote=t.file.source.remote, maps=self.mapped)
        self.step = _step(self.n_blocks, lay.block_elems, chunk_elems, self.stream.threads)
        self.starts = list(range(0, self.n_blocks, self.step))
        self.task = task
        self.total = passes * t.n_elements
        self.kernels = kernels
        self.native = kernels.__name__ == "ggscope.stats.cstats"      # the kernels compiled at install
        self.cache_bytes = cache_bytes
        self.need = need
        # read files only: an in-memory file is sliced, a kept copy would cost a copy
        src = t.file.source
        self.keep_bytes = keep_bytes if (getattr(src, "identity", None) is not None or src.remote) else 0
        self.hold = keep_bytes              # mapped: pages held until close up to this, else per chunk
        if self.mapped:                     # pass two reads the map again: nothing to keep
            self.keep_bytes = 0
        self.kept: np.ndarray | None = None     # the tensor's bytes, chunk k read when filled[k]
        self.filled: list[bool] = []

    def keep(self) -> None:
        """Keep the chunks pass one reads for pass two, if the tensor fits the budget."""
        if self.kept is not None or not 0 < self.need <= self.keep_bytes:
            return
        with _KEPT.lock:
            spare = _KEPT.value
            buf = spare.pop() if spare and spare[-1].size >= self.need else None
        self.kept = buf if buf is not None else np.empty(self.need, np.uint8)
        self.filled = [False] * len(self.starts)

    def fused(self) -> Any:
        """The fused decode + statistics passes of the kernels in use (``ggscope.stats.cstats``
        or numba's ``ggscope.stats.fused``), or None on the numpy kernels."""
        if self.kernels.__name__.endswith("kernels_numpy"):
            return None
        if self.native:
            return self.kernels
        from ggscope.stats import fused  # start-up: numpy, numba, yaml only when used
        return fused

    def close(self) -> None:
        self.stream.close()
        if self.mapped:                     # no mapped page stays resident after the tensor
            self.t.file.source.release(self.t.offset, self.t.offset + self.need)  # type: ignore[union-attr]
        kept, self.kept = self.kept, None
        if kept is not None:
            with _KEPT.lock:            # keep the larger one: the next tensor faults in nothing
                spare = _KEPT.value
                if not spare or spare[0].size < kept.size:
                    spare[:] = [kept]

    def scratch(self, key: str, make: Callable[[], Any]) -> Any:
        """A per-thread object (buffers, count tables) made once per thread."""
        return self.stream.scratch(key, make)

    def check(self) -> None:
        self.stream.check()

    def raw(self, i: int) -> np.ndarray:
        rows = min(self.step, self.n_blocks - i)
        bb = self.lay.block_bytes
        if self.kept is not None:
            part = self.kept[i * bb:(i + rows) * bb]
            k = i // self.step
            if not self.filled[k]:      # pass one: read into the kept buffer, pass two: read from it
                got = self.stream.reader(self.t.file).read(self.t.offset + i * bb, rows * bb, out=part)  # type: ignore[arg-type]
                part = got.reshape(rows, bb)        # (a short read of a remote window fails here, as unkept)
                self.filled[k] = True
                return part
            return part.reshape(rows, bb)
        reader = self.stream.reader(self.t.file)     # type: ignore[arg-type]
        part = reader.read(self.t.offset + i * bb, rows * bb)
        return part.reshape(rows, bb)

    def windows(self, i: int) -> Iterator[np.ndarray]:
        """The chunk starting at block ``i`` as ``(rows, block_bytes)`` uint8 pieces of
        whole blocks in order, each valid until the next: for a route that reads its bytes
        once.  From a file on disk each piece is at most ``WINDOW_BYTES``, read into this
        thread's one window buffer (kept for the thread's next chunk, so nothing is faulted
        in per tensor); the mapped route, an in-memory or remote file, or a block above the
        window gives the chunk as ``raw(i)`` does (a view, a slice, one download)."""
        bb = self.lay.block_bytes
        if self.mapped or getattr(self.t.file.source, "identity", None) is None or bb > WINDOW_BYTES:  # type: ignore[union-attr]
            yield self.raw(i)
            return
        end = min(i + self.step, self.n_blocks)
        per = WINDOW_BYTES // bb
        reader = self.stream.reader(self.t.file)     # type: ignore[arg-type]
        buf = _WINDOW.__dict__.pop("buf", None)     # taken while in use: a nested route makes its own
        if buf is None or buf.size < per * bb:
            buf = np.empty(per * bb, np.uint8)
        try:
            for j in range(i, end, per):
                rows = min(per, end - j)
                yield reader.read(self.t.offset + j * bb, rows * bb, out=buf).reshape(rows, bb)
        finally:
            _WINDOW.buf = buf

    def run(self, work: Callable[[int], Any], done0: int) -> list[Any]:
        """``[work(i) for i in starts]`` on the stream's threads, in order."""
        done = done0
        if self.mapped and self.need > self.hold:   # a big tensor's pages go as each chunk is done
            work = self._releasing(work)

        def advance(i: int, _: Any) -> None:
            nonlocal done
            done += min(self.step, self.n_blocks - i) * self.lay.block_elems
            self.task.update(done, self.total)

        return self.stream.map(work, self.starts, advance)

    def _releasing(self, work: Callable[[int], Any]) -> Callable[[int], Any]:
        """``work`` that gives the chunk's mapped pages back once it is done with them."""
        bb, src = self.lay.block_bytes, self.t.file.source  # type: ignore[union-attr]

        def released(i: int) -> Any:
            try:
                return work(i)
            finally:
                src.release(self.t.offset + i * bb, self.t.offset + min(i + self.step, self.n_blocks) * bb)
        return released
