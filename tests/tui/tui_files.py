"""Helpers of the TUI tests: files to open (fixtures q8, truncated), a sparse 20 GB GGUF, and
``settle_until`` (let the app run until a condition holds)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

Q8 = FIXTURES / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
BIG = 20 * 2**30


@pytest.fixture
def q8() -> Path:
    if not Q8.is_file():
        pytest.skip(f"{Q8} missing; run python fixtures/make_fixtures.py")
    return Q8


@pytest.fixture
def truncated(tmp_path, q8) -> Path:
    """The Q8_0 fixture cut inside its metadata: a damaged file that must still open."""
    p = tmp_path / "truncated.gguf"
    p.write_bytes(q8.read_bytes()[:1000])
    return p


def write_sparse_20gb(path: Path) -> Path:
    """A GGUF whose one F32 tensor spans 20 GiB of holes: gguf-py writes the header,
    ``os.truncate`` extends the file without writing data."""
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    n = BIG // 4
    w.add_tensor_info("huge.weight", [n], np.dtype(np.float32), BIG, raw_dtype=gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = path.stat().st_size
    data_offset = -(-header // 32) * 32
    os.truncate(path, data_offset + BIG)
    if os.stat(path).st_blocks * 512 > 64 * 2**20:
        path.unlink()
        pytest.skip("the filesystem of tmp_path does not keep sparse files")
    return path


LONG_TEXT = "".join(f"line {i:03d}: the quick brown fox jumps over the lazy dog\n" for i in range(90)) + "\x1b[31mend"


def write_long_values(path: Path) -> Path:
    """A GGUF written by gguf-py with a 5,000-character description (a terminal escape
    at its end) and a 300-item string array, for the detail pane's pages."""
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    w.add_description(LONG_TEXT)
    w.add_array("test.words", [f"word{i}" for i in range(300)])
    w.add_tensor("x", np.arange(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


async def settle_until(pilot, done, quick: int = 200, polls: int = 6000) -> None:
    """Let the app's workers and messages run until ``done()``: ``quick`` bare turns (what a
    quiet machine needs), then turns of 10 ms, ``polls`` of them at most - a bound for a
    broken test, not a measurement.  The panes of a parsed file mount after some screen
    refreshes (frames on Textual's clock), which bare turns can outrun: a CI rehearsal
    with two busy loops beside it ran out of 1000 bare turns.  A worker cancelled because
    the app exited (an unreadable file) counts as finished."""
    from textual.worker import WorkerCancelled
    for i in range(quick + polls):
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause(None if i < quick else 0.01)
        if done():
            return
