"""State kept per process (``ggscope.core.perprocess``): a forked child gets a fresh value
and a lock it can take, even one another thread of the parent held at the fork; the
parent's state is untouched; and the stream's pools, the spare buffers and the counting
tables all go through it."""
from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from ggscope.core.perprocess import PerProcess

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX")

CHILD_WAIT = 60            # a safety net for a hung child, never a measurement


def in_child(work) -> object:
    """``work()`` in a forked child; its JSON result, or ``"hung"`` if the child never
    answered (a lock held forever), or ``"died"`` if it exited without answering."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                       # the child: never back into pytest
        code = 0
        try:
            os.close(r)
            os.write(w, json.dumps(work()).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    deadline = time.monotonic() + CHILD_WAIT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([r], [], [], 0.5)
            if ready:
                part = os.read(r, 1 << 16)
                if not part:
                    break
                data += part
        else:
            os.kill(pid, signal.SIGKILL)
            return "hung"
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    return json.loads(data) if data else "died"


def take(state: PerProcess, timeout: float = 5.0):
    """The state's value, read under its lock; ``"locked"`` if the lock stays held."""
    if not state.lock.acquire(timeout=timeout):
        return "locked"
    try:
        return list(state.value)
    finally:
        state.lock.release()


def test_a_forked_child_gets_a_fresh_value_and_a_lock_it_can_take():
    state = PerProcess(list)
    with state.lock:
        state.value.append("parent")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:                  # another thread holds the lock across the fork
        with state.lock:
            held.set()
            release.wait(CHILD_WAIT)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(CHILD_WAIT)
        assert in_child(lambda: take(state)) == []
        assert state.lock.locked()                      # the parent's lock is still the holder's
    finally:
        release.set()
        t.join()
    assert take(state) == ["parent"]                    # and its value untouched


def test_forks_while_threads_of_the_parent_use_the_state():
    """Threads keep taking the lock and counting while the main thread forks: every
    child can take the lock and starts from nothing; the parent's count loses nothing."""
    state = PerProcess(dict)
    stop = threading.Event()
    done = [0] * 3

    def count(k: int) -> None:
        while not stop.is_set():
            with state.lock:
                state.value[k] = state.value.get(k, 0) + 1
            done[k] += 1

    threads = [threading.Thread(target=count, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        answers = [in_child(lambda: take(state, timeout=2.0)) for _ in range(12)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert answers == [[]] * 12
    assert state.value == {k: n for k, n in enumerate(done)}


def test_the_engines_state_is_fresh_in_a_child(tmp_path):
    """The stream's pools and spare read buffers, the statistics' spare tensor buffer and
    counting tables: the parent has them after a tensor's statistics, a child none."""
    pytest.importorskip("gguf")
    import ggscope
    from ggscope.source import stream
    from ggscope.stats import chunks, counters
    from ggscope.stats.tensors import tensor_stats
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "stats"))   # in any import mode
    from test_reading import CHUNK, write_model
    mf = ggscope.open(write_model(tmp_path / "m.gguf"))
    for t in mf.tensors:
        tensor_stats(t, chunk_elems=CHUNK, threads=2)
    states = {"pools": stream._POOLS, "spare reads": stream._SPARE, "spare tensor": chunks._KEPT,
              "tables": counters._FREE}

    def sizes() -> dict:
        return {k: len(v) if isinstance(v, list) else v for k, v in ((k, take(s)) for k, s in states.items())}
    parent = sizes()
    assert all(n and n != "locked" for n in parent.values()), parent
    assert in_child(sizes) == {k: 0 for k in states}
    assert sizes() == parent

    def stats_again() -> dict:          # and the child's own work fills its own
        got = [tensor_stats(t, chunk_elems=CHUNK, threads=2) == tensor_stats(t, chunk_elems=CHUNK, threads=1)
               for t in mf.tensors]
        return {"agree": all(got), "pools": sizes()["pools"]}
    assert in_child(stats_again) == {"agree": True, "pools": 1}
