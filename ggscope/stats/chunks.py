"""A tensor's raw blocks in chunks, read through the one streaming engine.

Why: every statistics route walks the same chunks of whole blocks, once or twice, on
both cores, with cancel and progress; ``ggscope.source.stream`` does the reading
(``readinto`` per thread, so pages never pile up and a file that shrinks meanwhile is
``FileChanged``, not SIGBUS), the pool and the cancel check.  This module only knows
blocks: chunk ``i`` is ``step`` blocks from block ``i``, and progress is counted in
elements.

Contract: ``Chunks(t, lay, chunk_elems, threads, task, cancel, passes, kernels,
cache_bytes)``; ``raw(i)`` the ``(rows, block_bytes)`` uint8 blocks of the chunk
starting at block ``i`` (valid until this thread's next ``raw``); ``run(work, done0)``
-> ``[work(i) for i in starts]`` in order, advancing ``task`` to ``done0`` plus the
elements done after each chunk; ``scratch(key, make)`` a per-thread object; ``check()``
raises ``Cancelled``; ``close()`` closes the readers.  A tensor whose data the file
does not hold raises ``ValueError`` before anything is read.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.facts.ggml_types import Layout
from ggscope.source.stream import Stream

if TYPE_CHECKING:
    from ggscope.core.progress import Task
    from ggscope.model.modelfile import TensorInfo

__all__ = ["Chunks"]


class Chunks:
    """Chunks of a tensor's raw blocks on the streaming engine (module docstring)."""

    def __init__(self, t: "TensorInfo", lay: Layout, chunk_elems: int, threads: int, task: "Task",
                 cancel: Any, passes: int, kernels: Any, cache_bytes: int) -> None:
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
        self.step = max(1, chunk_elems // lay.block_elems)
        self.starts = list(range(0, self.n_blocks, self.step))
        self.stream = Stream(threads=threads, cancel=cancel, what=f"statistics of {t.name!r}",
                             remote=t.file.source.remote)
        self.task = task
        self.total = passes * t.n_elements
        self.kernels = kernels
        self.native = kernels.__name__ == "ggscope.stats.cstats"      # the kernels compiled at install
        self.cache_bytes = cache_bytes

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

    def scratch(self, key: str, make: Callable[[], Any]) -> Any:
        """A per-thread object (buffers, count tables) made once per thread."""
        return self.stream.scratch(key, make)

    def check(self) -> None:
        self.stream.check()

    def raw(self, i: int) -> np.ndarray:
        rows = min(self.step, self.n_blocks - i)
        bb = self.lay.block_bytes
        reader = self.stream.reader(self.t.file)     # type: ignore[arg-type]
        part = reader.read(self.t.offset + i * bb, rows * bb)
        return part.reshape(rows, bb)

    def run(self, work: Callable[[int], Any], done0: int) -> list[Any]:
        """``[work(i) for i in starts]`` on the stream's threads, in order."""
        done = done0

        def advance(i: int, _: Any) -> None:
            nonlocal done
            done += min(self.step, self.n_blocks - i) * self.lay.block_elems
            self.task.update(done, self.total)

        return self.stream.map(work, self.starts, advance)
