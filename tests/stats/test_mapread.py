"""Statistics read through the file's map under the CLI's SIGBUS guard (issue 27 item 2).

Under ``changes.reads_through_map`` with the guard watching the file's map (what
``ggscope stats`` runs), ``tensor_stats`` takes views of the map instead of read(2)
copies; a library caller (no guard, or outside the block) still reads and gets
``FileChanged``.  Checked here: the views really are the map's (but for pass two of a
tensor above ``RAW_CACHE_BYTES``, which reads: measured cheaper than faulting its pages
in twice); the results are the read route's to the bit on every route (codes, fused
blocks, F32 in place, numpy decoding), inside and above the budget, on one and two
threads; each pass views every byte once; no mapped page of the tensor stays resident
afterwards, nor after each chunk of a one-pass tensor above the budget; a file cut under
``ggscope stats`` in the middle of a tensor ends with the guard's one line and exit
status 2, never a signal; resident memory stays bounded over a 1 GiB+ tensor.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.core.errors import FileChanged
from ggscope.source import changes, mapped, ranges
from ggscope.stats import chunks, tensors
from ggscope.stats.tensors import tensor_stats

gguf = pytest.importorskip("gguf")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_reading import CHUNK, _tiles, write_model  # noqa: E402  (the same five routes)

REPO = Path(__file__).resolve().parents[2]
NAMES = ["q8_0", "q4_1", "f32", "f64", "bf16"]


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return write_model(tmp_path_factory.mktemp("mapread") / "routes.gguf")


@pytest.fixture
def guard(monkeypatch):
    """The real guard installed in this process, as ``ggscope.cli.main`` installs it
    (its handler stays: it acts only on a fault inside a watched map, which nothing here
    causes); ``changes``' state is restored afterwards.  The tensors here are 0.2-2 MiB:
    the floor below which even the mapped route reads is lowered to none."""
    monkeypatch.setattr(chunks, "MAP_MIN_BYTES", 0)
    monkeypatch.setattr(changes, "_guard", None)
    monkeypatch.setattr(changes, "_watches", changes._watches)
    if not changes.guard_mapped_reads():
        pytest.skip("ggscope.source._guard not built (no C compiler at install)")


@pytest.fixture
def reads(monkeypatch):
    """(start, nbytes, whether the bytes given are a view of the file's map) of every read."""
    seen: list[tuple[int, int, bool]] = []
    real = ranges.RangeReader.read

    def read(self, start, nbytes, file=None, out=None):
        got = real(self, start, nbytes, file, out)
        if file is None or file is self.mf:
            seen.append((start, nbytes, bool(np.shares_memory(got, self.mf.source.array))))
        return got
    monkeypatch.setattr(ranges.RangeReader, "read", read)
    return seen


def _mapped_rss_kib(path: Path) -> int:
    """Resident KiB of this process's maps of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:    # a map's first line
                inside = len(head) >= 6 and os.path.realpath(head[5]) == os.path.realpath(path)
            elif inside and head and head[0] == "Rss:":
                total += int(head[1])
    return total


@pytest.mark.parametrize("budget", ["within", "above"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_the_guarded_route_views_the_map_and_agrees_to_the_bit(model, guard, reads, monkeypatch, name, threads,
                                                               budget):
    t = ggscope.open(model).tensor(name)
    if budget == "above":
        monkeypatch.setattr(tensors, "RAW_CACHE_BYTES", t.nbytes - 1)
    library = tensor_stats(t, chunk_elems=CHUNK, threads=threads)
    assert reads and not any(view for *_, view in reads)              # read(2) copies
    reads.clear()
    with changes.reads_through_map():
        got = tensor_stats(t, chunk_elems=CHUNK, threads=threads)
    assert got == library
    passes = 1 if name == "bf16" else 2     # pass two reads the map again (nothing kept)
    # views of the map, but for a two-pass tensor above the budget (read(2), measured)
    assert reads and all(view == (passes == 1 or budget == "within") for *_, view in reads)
    if name == "f64":                       # decoded once into floats: pass two reads nothing
        passes = 1
    one = len(reads) // passes
    assert len(reads) == passes * one
    assert all(_tiles([(s, n) for s, n, _ in reads[k * one:(k + 1) * one]], t) for k in range(passes))


def test_no_mapped_page_of_the_tensor_stays_resident(tmp_path, guard, monkeypatch):
    """After a tensor, its pages have left the resident set (``ByteSource.release``):
    within the budget at the end, above it after each chunk.  Without the release the
    map's pages would stay (checked: the same run with release a no-op keeps them)."""
    path = tmp_path / "big.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("w", np.random.default_rng(1).standard_normal(4 << 20).astype(np.float16))   # 8 MiB
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    t = ggscope.open(path).tensor("w")
    resident = []
    real_run = tensors.Chunks.run

    def run(self, work, done0):             # the map's resident size right after the last chunk
        out = real_run(self, work, done0)
        resident.append(_mapped_rss_kib(path))
        return out
    monkeypatch.setattr(tensors.Chunks, "run", run)
    with changes.reads_through_map():
        for budget in (tensors.RAW_CACHE_BYTES, 1 << 20):
            monkeypatch.setattr(tensors, "RAW_CACHE_BYTES", budget)
            resident.clear()
            tensor_stats(t, threads=2)
            assert _mapped_rss_kib(path) < 64, budget                    # the header's pages at most
            if budget < t.nbytes:
                assert resident[-1] < 64                                # released chunk by chunk
        monkeypatch.setattr(mapped.ByteSource, "release", lambda self, start, end: None)
        tensor_stats(t, threads=2)
    assert _mapped_rss_kib(path) >= t.nbytes // 1024                      # the control: kept without it


def test_a_library_caller_reads_with_read2_and_gets_file_changed(model, tmp_path, reads, guard):
    """Without the block (a library caller; the guard may be installed by someone else)
    the bytes are copied with read(2); inside it, a map the guard no longer watches
    (older than its last ``WATCHED``) is read too; and a file that shrinks is
    ``FileChanged``, never a fault."""
    path = tmp_path / "shrinks.gguf"
    path.write_bytes(model.read_bytes())
    t = ggscope.open(path).tensor("q8_0")
    tensor_stats(t, chunk_elems=CHUNK)
    assert reads and not any(view for *_, view in reads)
    reads.clear()
    with changes.reads_through_map():
        assert ranges.reads_map(t.file)
        changes._watches += changes._guard.WATCHED                  # the guard has forgotten this map
        assert not ranges.reads_map(t.file)
        tensor_stats(t, chunk_elems=CHUNK)
    assert reads and not any(view for *_, view in reads)
    with open(path, "r+b") as f:
        f.truncate(t.offset + t.nbytes // 2)
    with pytest.raises(FileChanged):
        tensor_stats(t, chunk_elems=CHUNK)


def test_without_the_guard_the_block_changes_nothing(model, tmp_path, reads, monkeypatch):
    monkeypatch.setattr(changes, "_guard", None)
    path = tmp_path / "shrinks.gguf"
    path.write_bytes(model.read_bytes())
    t = ggscope.open(path).tensor("bf16")
    with changes.reads_through_map():
        assert not ranges.reads_map(t.file)
        tensor_stats(t, chunk_elems=CHUNK)
        assert reads and not any(view for *_, view in reads)
        with open(path, "r+b") as f:
            f.truncate(t.offset + t.nbytes // 2)
        with pytest.raises(FileChanged):
            tensor_stats(t, chunk_elems=CHUNK)


# The real CLI in a child (a signal there is a negative status here): once every thread
# holds a view of its first chunk of the tensor named, the file is cut at the tensor's
# start, before the kernels read those views -- on two threads both then fault at once.
CHILD = """
import os, sys, threading
from ggscope.stats import chunks
chunks.MAP_MIN_BYTES = 0            # (the floor: these tensors are 0.2-2 MiB)
target, name, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
real = chunks.Chunks.raw
done, lock, meet = [], threading.Lock(), threading.Barrier(threads)

def raw(self, i):
    part = real(self, i)
    if self.t.name == name and not done:
        assert self.mapped, "not the mapped route"
        try:
            meet.wait(timeout=60)
        except threading.BrokenBarrierError:
            pass
        with lock:
            if not done:
                done.append(1)
                os.truncate(target, self.t.offset)
    return part

chunks.Chunks.raw = raw
from ggscope.cli import main
sys.exit(main(sys.argv[4:]))
"""


def _cli(path: Path, name: str, *argv: str, script: str = CHILD, threads: int = 1) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", script, str(path), name, str(threads), *argv], capture_output=True,
                          text=True, env=env, cwd=str(REPO), timeout=600)


def _guard_built() -> None:
    import importlib.util
    if importlib.util.find_spec("ggscope.source._guard") is None:
        pytest.skip("ggscope.source._guard not built (no C compiler at install)")


def _the_guards_line(out: subprocess.CompletedProcess, path: Path) -> None:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])      # never a signal (< 0)
    assert "Traceback" not in out.stderr and "AssertionError" not in out.stderr, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and "shrank below a page ggscope had mapped" in lines[0], lines
    assert out.stdout == ""


@pytest.mark.parametrize("name", NAMES)
def test_a_file_cut_in_the_middle_of_a_tensor_is_the_guards_line_and_exit_2(model, tmp_path, name):
    _guard_built()
    path = tmp_path / "cut.gguf"
    path.write_bytes(model.read_bytes())
    _the_guards_line(_cli(path, name, "stats", "--threads", "1", str(path), name), path)


@pytest.mark.parametrize("qtype", ["F16", "Q8_0"])
def test_two_threads_faulting_at_once_still_give_one_line(tmp_path, qtype):
    """Both threads hold a view of a chunk when the file is cut: both fault, the guard
    writes one line and ends the process (before, with ``SA_RESETHAND``, a second fault
    during the first one's handler took the default action: a bare SIGBUS)."""
    _guard_built()
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize
    x = (np.random.default_rng(2).standard_normal((4096, 4096)) * 0.02).astype(np.float32)   # 16 Mi: 4+ chunks
    path = tmp_path / f"{qtype}.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("w", quantize(x, Q[qtype]), raw_dtype=Q[qtype])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    _the_guards_line(_cli(path, "w", "stats", "--threads", "2", str(path), threads=2), path)


RSS_CHILD = """
import sys
from ggscope.cli import main
status = main(sys.argv[4:])
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(status, hwm, file=sys.stderr)
"""


def test_resident_memory_stays_bounded_over_a_tensor_above_a_gib(tmp_path):
    """A 1.1 GiB F16 tensor of a sparse file (zeros, no disk): ``ggscope stats`` views all
    of it through the map and stays far below its size (VmHWM, not getrusage: ru_maxrss
    keeps the forked parent's size across exec).  Holding the pages to the end would
    peak above 1.1 GiB."""
    _guard_built()
    path = tmp_path / "sparse.gguf"
    n = 9 << 26                                      # 576 Mi F16 elements: 1.125 GiB
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor_info("w", (n,), np.dtype(np.float16), n * 2)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    start = path.stat().st_size
    with open(path, "r+b") as f:                    # the data: a hole (reads as zeros)
        f.truncate(start + (-start % 32) + n * 2)
    out = _cli(path, "w", "stats", "--json", str(path), script=RSS_CHILD)
    status, hwm_kib = map(int, out.stderr.split()[-2:])
    assert status == 0 and '"zeros": 603979776' in out.stdout, out.stderr[-2000:]
    assert hwm_kib < 200 << 10, hwm_kib            # KiB: 55 MiB measured; 1.2 GB held to the end


def test_a_tensor_below_the_floor_is_read_even_on_the_mapped_route(model, guard, reads, monkeypatch):
    """Below ``MAP_MIN_BYTES`` the copy is cheaper than mapping and releasing (measured)."""
    t = ggscope.open(model).tensor("bf16")
    monkeypatch.setattr(chunks, "MAP_MIN_BYTES", t.nbytes + 1)
    with changes.reads_through_map():
        assert ranges.reads_map(t.file)
        tensor_stats(t, chunk_elems=CHUNK)
    assert reads and not any(view for *_, view in reads)
    reads.clear()
    monkeypatch.setattr(chunks, "MAP_MIN_BYTES", t.nbytes)
    with changes.reads_through_map():
        tensor_stats(t, chunk_elems=CHUNK)
    assert reads and all(view for *_, view in reads)
