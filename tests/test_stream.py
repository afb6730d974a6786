"""The one streaming engine (ggscope.source.stream) that stats, diff and --deep share.

What must hold: results in order whatever the threads; one cancel exception (the old
public names are it); progress through ggscope.core.progress; every read through a
RangeReader that reads (never maps) a file on disk and turns a file that shrank, grew
or was replaced into FileChanged; PIECE one number for Python and C.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.core import progress
from ggscope.core.errors import Cancelled, FileChanged
from ggscope.source.ranges import RangeReader, read_range
from ggscope.source.stream import Stream

EXAMPLE = Path(__file__).resolve().parents[1] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


@pytest.fixture
def copy(tmp_path):
    p = tmp_path / "m.gguf"
    shutil.copyfile(EXAMPLE, p)
    return p


def test_the_old_cancel_names_are_the_one_exception():
    import ggscope.diff
    import ggscope.stats
    assert ggscope.stats.StatsCancelled is Cancelled and ggscope.diff.DiffCancelled is Cancelled


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_map_keeps_order_and_reports_each_item_in_the_calling_thread(threads):
    me = threading.get_ident()
    seen = []
    with Stream(threads=threads) as s:
        got = s.map(lambda x: (x * x, threading.get_ident()), range(50),
                    lambda x, r: seen.append((x, threading.get_ident())))
    assert [v for v, _ in got] == [x * x for x in range(50)]
    assert seen == [(x, me) for x in range(50)]
    if threads > 1:
        assert any(t != me for _, t in got)          # the work ran on the pool


def test_cancel_stops_before_the_next_item_and_no_worker_outlives_the_call():
    ev = threading.Event()
    running = []

    def work(x):
        running.append(x)
        if x == 3:
            ev.set()
        return x
    with Stream(threads=2, cancel=ev, what="the test") as s, pytest.raises(Cancelled, match="the test cancelled"):
        s.map(work, range(10_000))
    n = len(running)
    assert n < 10_000
    assert len(running) == n                         # nothing still running after map raised


def test_an_error_in_one_item_is_raised_once_and_the_rest_dropped():
    def work(x):
        if x == 5:
            raise ValueError("item 5")
        return x
    with Stream(threads=2) as s, pytest.raises(ValueError, match="item 5"):
        s.map(work, range(100))


def test_readers_are_per_thread_and_slot_and_closed_with_the_stream(copy):
    mf = ggscope.open(str(copy))
    with Stream(threads=2) as s:
        pairs = s.map(lambda _: (id(s.reader(mf, 0)), id(s.reader(mf, 1)), threading.get_ident()), range(64))
        readers = [r for r, _ in s._readers]
    by_thread: dict[int, set] = {}
    for a, b, t in pairs:
        assert a != b
        by_thread.setdefault(t, set()).add((a, b))
    assert all(len(v) == 1 for v in by_thread.values())          # made once per thread
    assert readers and all(r.fh is None for r in readers)       # closed


def test_progress_adapter_and_task_share_one_protocol():
    calls = []
    with progress.from_callback(lambda d, t: calls.append((d, t)), "x", 10) as task:
        task.update(3)
        task.advance(2)
    assert calls == [(3, 10), (5, 10)]
    drawn = []

    class Rec:
        def __init__(self, desc, total):
            drawn.append((desc, total))

        def update(self, done, total=None, desc=None):
            drawn.append((done, total, desc))

        def advance(self, n):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass
    t = ggscope.open(str(EXAMPLE)).tensor("blk.0.attn_q.weight")
    with progress.use(Rec):
        t.stats()
    assert drawn[0] == ("blk.0.attn_q.weight", 2 * t.n_elements)
    assert drawn[-1][:2] == (2 * t.n_elements, 2 * t.n_elements)


def test_reads_equal_the_bytes_and_never_come_from_the_map(copy):
    mf = ggscope.open(str(copy))
    want = copy.read_bytes()
    t = mf.tensor("token_embd.weight")
    with RangeReader(mf) as r:
        got = r.read(t.offset, t.nbytes)
        assert got.tobytes() == want[t.offset:t.offset + t.nbytes]
        assert not np.shares_memory(got, mf.source.array)
    raw = t.raw()
    assert raw.tobytes() == want[t.offset:t.offset + t.nbytes] and not np.shares_memory(raw, mf.source.array)
    assert read_range(mf, mf.source.size - 3, 100).tobytes() == want[-3:]      # clipped like view()
    assert mf.source.pread(0, 4) == b"GGUF"


def test_a_short_read_is_file_changed_naming_the_file(copy):
    mf = ggscope.open(str(copy))
    t = mf.tensors[-1]
    with RangeReader(mf) as r:
        os.truncate(copy, t.offset + 10)                # shrinks after the reader opened it
        with pytest.raises(FileChanged, match="shrank") as exc:
            r.read(t.offset, t.nbytes)
    assert str(copy) in str(exc.value)


@pytest.mark.parametrize("how", ["truncate", "append", "replace"])
def test_a_changed_file_is_file_changed_for_every_reader(copy, how):
    mf = ggscope.open(str(copy))
    t = mf.tensors[-1]
    if how == "truncate":
        os.truncate(copy, t.offset)
    elif how == "append":
        with open(copy, "ab") as fh:
            fh.write(b"\0")
    else:
        other = copy.with_suffix(".new")
        shutil.copyfile(EXAMPLE, other)
        os.replace(other, copy)
    for read in (lambda: t.raw(), lambda: mf.source.pread(0, 4), lambda: t.stats(),
                 lambda: RangeReader(mf).read(t.offset, t.nbytes)):
        with pytest.raises(FileChanged):
            read()


def test_in_memory_files_are_sliced_without_a_copy():
    data = EXAMPLE.read_bytes()
    mf = ggscope.open_bytes(data)
    t = mf.tensors[0]
    with RangeReader(mf) as r:
        assert np.shares_memory(r.read(t.offset, t.nbytes), mf.source.array)


def test_piece_is_one_number_for_python_and_c():
    from ggscope.stats import cstats, kernels_numpy
    assert cstats.PIECE is kernels_numpy.PIECE
    if cstats._cstats is None:
        pytest.skip("ggscope.stats._cstats not built")
    assert cstats._cstats.PIECE == kernels_numpy.PIECE          # csrc/_ctargets.h


def _map_in_child(q) -> None:
    with Stream(threads=2) as s:
        q.put(s.map(lambda x: x + 1, range(64)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX")
def test_a_forked_child_gets_its_own_pool():
    """``validate --jobs`` forks after the parent used the pool: the child's work must
    run, not wait for threads that exist only in the parent."""
    import multiprocessing
    with Stream(threads=2) as s:
        assert s.map(lambda x: x, range(64)) == list(range(64))     # the parent's pool is up
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_map_in_child, args=(q,))
    child.start()
    child.join(120)                 # a safety net for a hang, never a measurement
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child's stream never ran its work")
    assert child.exitcode == 0 and q.get(timeout=10) == list(range(1, 65))
