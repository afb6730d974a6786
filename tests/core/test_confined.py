"""core.confined: the child's budget is the kernel's, whatever the work does."""
from __future__ import annotations

import os
import signal
import time

import pytest

from ggscope.core.confined import SETUP_FAILED, confined

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def test_what_the_work_writes_arrives_and_a_clean_return_is_exit_0():
    out = confined(lambda write: (write(b"abc"), write(b"def")), memory=64 << 20, cpu=5, wall=20)
    assert (out.data, out.killed, out.signal, out.exit_code) == (b"abcdef", False, None, 0)


def test_a_raising_work_is_exit_1_with_what_it_wrote_before():
    def work(write):
        write(b"partial")
        raise ValueError("boom")
    out = confined(work, memory=64 << 20, cpu=5, wall=20)
    assert (out.data, out.exit_code, out.signal) == (b"partial", 1, None)


def test_memory_past_the_budget_fails_in_the_child_not_here():
    def work(write):
        blob = bytearray(256 << 20)          # 4x the budget
        write(str(len(blob)).encode())
    out = confined(work, memory=64 << 20, cpu=5, wall=20)
    assert out.data == b"" and out.exit_code == 1       # MemoryError in the child


def test_cpu_past_the_budget_is_ended_by_the_kernel():
    def work(write):
        while True:
            pass
    out = confined(work, memory=64 << 20, cpu=1, wall=60)
    assert not out.killed and out.signal in (signal.SIGXCPU, signal.SIGKILL)


def test_the_wall_clock_deadline_kills_a_child_that_waits():
    out = confined(lambda write: time.sleep(60), memory=64 << 20, cpu=5, wall=0.5)
    assert out.killed and out.signal == signal.SIGKILL and out.cpu_seconds < 1


def test_file_size_limit_applies_to_the_child(tmp_path):
    target = tmp_path / "big"

    def work(write):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # then write() fails with EFBIG instead of a signal
        with open(target, "wb") as f:
            f.write(b"x" * (1 << 20))
    out = confined(work, memory=64 << 20, cpu=5, wall=20, fsize=4096)
    assert out.exit_code == 1 and target.stat().st_size <= 4096


def test_setup_failure_is_its_own_status(monkeypatch):
    import resource

    def refuse(*a):
        raise ValueError("no")
    monkeypatch.setattr(resource, "setrlimit", refuse)
    out = confined(lambda write: write(b"x"), memory=64 << 20, cpu=5, wall=20)
    assert out.exit_code == SETUP_FAILED and out.data == b""
