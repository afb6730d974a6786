"""The compact string store (ksy.strings.StringArray): what it holds, and that it gives
back every offset, string and JSON text of the plain representation.

Memory is counted, never timed: the store's own ``nbytes`` per string, the bytes numpy
and Python allocate while a file of many empty strings is opened and written as JSON
(tracemalloc, in a child process), and that numba stays out of that process (issue 23,
item 6: 16 M empty strings took 16 bytes a string in int64 starts and lengths, plus
numba, plus the file).
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ggscope.ksy.scan as scan_mod
import ggscope.report.jsonable as J
from ggscope.ksy.scan import scan_length_prefixed
from ggscope.ksy.strings import StringArray

REPO = Path(__file__).resolve().parents[2]


def _array(strings, width=8, tail=0, pad=5):
    data = bytearray(b"\x09" * pad)
    starts = []
    for s in strings:
        starts.append(len(data))
        data += struct.pack("<Q" if width == 8 else "<I", len(s)) + s + b"\x02" * tail
    return np.frombuffer(bytes(data), np.uint8), starts


@pytest.mark.parametrize("strings, per_string", [
    ([b""] * 100_000, 1), ([b"", b"a"] * 50_000, 1), ([b"x" * 300] * 3_000, 2), ([b"y" * 70_000] * 3, 4)])
def test_the_store_costs_the_narrowest_width_per_string(strings, per_string):
    """Lengths in the narrowest dtype that holds the longest, positions derived: about
    ``per_string`` bytes a string (int64 starts and lengths cost 16)."""
    arr, starts = _array(strings)
    lens, end = scan_length_prefixed(arr, 5, len(strings), 8, True, len(arr))
    sa = StringArray(arr, 5, lens, 8, "utf-8")
    assert end == len(arr) and sa.offsets().tolist() == starts
    n = len(strings)
    assert sa.nbytes <= per_string * n + 8 * (n // 4096 + 1)
    assert sa.nbytes >= per_string * n


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 8192, 8193])
@pytest.mark.parametrize("tail", [0, 4])
def test_offsets_parts_and_strings_at_block_edges(n, tail):
    """Random access through the per-block marks, at and around their edges."""
    strings = [str(i % 300).encode() * (i % 3) for i in range(n)]
    arr, starts = _array(strings, width=4, tail=tail)
    sa = StringArray(arr, 5, np.array([len(s) for s in strings], np.uint16), 4, "utf-8", tail=tail)
    assert sa.offsets().tolist() == starts and len(sa) == n
    for lo, hi in ((0, n), (n // 2, n), (max(0, n - 1), n), (4095, 4097)):
        assert sa.offsets(lo, hi).tolist() == starts[lo:hi]
        assert sa.part(lo, hi).tolist() == [s.decode() for s in strings[lo:hi]]
    assert sa.tolist() == [s.decode() for s in strings]
    assert [sa.raw(i) for i in range(0, n, 997)] == strings[::997]


@pytest.mark.parametrize("tail", [0, 4])
def test_starts_of_a_few_ids_sum_per_id_and_agree_with_the_vectorised_route(tail, monkeypatch):
    """``starts`` of at most ``_FEW`` ids (a rule's special tokens) sums each id's block
    prefix and builds no block-of-lengths rows (the vectorised route's fixed cost was
    0.25 ms for one id); both routes give the offsets ``offsets`` gives, at block edges,
    in any order, with repeats."""
    import ggscope.ksy.strings as strings_mod
    n = 3 * 4096 + 17
    strings = [b"s%d" % i * (i % 4) for i in range(n)]
    arr, starts = _array(strings, width=8, tail=tail)
    sa = StringArray(arr, 5, np.array([len(s) for s in strings], np.uint8), 8, "utf-8", tail=tail)
    few = [n - 1, 0, 4096, 4095, 8191, 4096, 12288, 7, n - 1]
    rows = []
    real_zeros = np.zeros

    class Numpy:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def zeros(shape, *a, **k):
            rows.append(shape)
            return real_zeros(shape, *a, **k)
    monkeypatch.setattr(strings_mod, "np", Numpy())
    assert sa.starts(few).tolist() == [starts[i] for i in few]
    assert rows == [] and sa._marks is None     # no block rows, no mark table: the lengths before them summed
    sa._mark_table()
    assert sa.starts(few).tolist() == [starts[i] for i in few]      # the marks made: the vectorised route
    many = few + list(range(0, n, 97))
    assert sa.starts(many).tolist() == [starts[i] for i in many]
    assert rows                                 # past _FEW ids: the vectorised route
    with pytest.raises(IndexError):
        sa.starts([0, n])


def test_placed_strings_keep_relative_offsets():
    """A column of records (tensor names) lies at irregular places: uint32 offsets
    relative to the first, in any order."""
    strings = [b"blk.%d.attn_q.weight" % i for i in range(50)]
    arr, starts = _array(strings, width=8)
    order = list(reversed(range(50)))
    sa = StringArray.placed(arr, np.array([starts[i] for i in order]), np.array([len(strings[i]) for i in order]),
                            8, "utf-8")
    assert sa.rel.dtype == np.uint32 and sa.lens.dtype == np.uint8
    assert sa.tolist() == [strings[i].decode() for i in order]
    assert sa.offsets().tolist() == [starts[i] for i in order]
    assert sa.part(10, 13).tolist() == [strings[i].decode() for i in order[10:13]]


@pytest.mark.parametrize("compiled", [True, False])
def test_json_written_in_pieces_is_the_whole_text(compiled, monkeypatch):
    """``write_value_json`` writes a string array a part at a time; the pieces join to
    ``json.dumps`` of the whole list, also when some parts need escaping or hold bytes
    that are not UTF-8 and others do not."""
    import io
    if compiled and J._cjson is None:
        pytest.skip("ggscope.report._cjson not built")
    if not compiled:
        monkeypatch.setattr(J, "_cjson", None)
    monkeypatch.setattr(J, "_PART", 7)
    strings = [b"a", b"", b"tok", b'q"uote', b"\xff\xfe", b"back\\slash", b"\x01"] + [b"w%d" % i for i in range(30)]
    for tail in (0, 4):
        arr, _ = _array(strings, tail=tail)
        sa = StringArray(arr, 5, np.array([len(s) for s in strings], np.uint8), 8, "utf-8", tail=tail)
        whole = json.dumps(J.jsonable(sa), ensure_ascii=False, allow_nan=False)
        out = io.StringIO()
        J.write_value_json(sa, out)
        assert out.getvalue() == J.value_json(sa) == whole
        assert json.loads(whole)[:3] == ["a", "", "tok"] and json.loads(whole)[4] == {"bytes": "fffe"}


_CHILD = """
import sys, tracemalloc, io
tracemalloc.start()
from ggscope.model.open import open as gopen
from ggscope.report.jsonable import write_value_json
mf = gopen(sys.argv[1])
v = mf.metadata["tokenizer.ggml.tokens"]
opened = tracemalloc.get_traced_memory()[1]
class Sink(io.TextIOBase):
    n = 0
    def write(self, s):
        self.n += len(s)
        return len(s)
sink = Sink()
write_value_json(v, sink)
print(len(v), opened, tracemalloc.get_traced_memory()[1], sink.n, "numba" in sys.modules)
"""


def test_many_empty_strings_cost_about_a_byte_each(tmp_path):
    """A GGUF of 1 M empty strings (8 MB): opening it and writing the array's JSON
    allocate about a byte a string beyond the import baseline, not the 16 of int64
    starts and lengths nor the array's whole JSON text, and numba is never imported."""
    if scan_mod._cscan is None:
        pytest.skip("ggscope.ksy._cscan not built (the numpy route walks with numba)")
    n = 1 << 20
    p = tmp_path / "empty.gguf"
    s = lambda b: struct.pack("<Q", len(b)) + b                     # noqa: E731
    with open(p, "wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 2))
        fh.write(s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama"))
        fh.write(s(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, n))
        fh.write(b"\0" * (8 * n))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD), str(p)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    count, opened, peak, written, numba = r.stdout.split()
    assert int(count) == n and int(written) == 4 * n          # '""' and ', ' per string, brackets
    assert numba == "False"
    assert int(opened) < 2 * n + (24 << 20)                   # the store plus the imports
    assert int(peak) < 4 * n + (24 << 20)                     # one part of text at a time


@pytest.mark.parametrize("compiled", [True, False])
def test_a_limit_past_the_buffer_stops_at_its_end(compiled, monkeypatch):
    """A stream that claims more bytes than the buffer holds: the walk stops where the
    buffer ends (ScanStop at the element that does not fit), never reads past it."""
    if compiled and scan_mod._cscan is None:
        pytest.skip("ggscope.ksy._cscan not built")
    if not compiled:
        monkeypatch.setattr(scan_mod, "_cscan", None)
    arr, starts = _array([b"ab", b"", b"cde"])
    lens, end = scan_length_prefixed(arr, 5, 3, 8, True, len(arr) + 1000)
    assert lens.tolist() == [2, 0, 3] and end == len(arr)
    with pytest.raises(scan_mod.ScanStop) as e:
        scan_length_prefixed(arr[:-1], 5, 3, 8, True, len(arr) + 1000)
    assert (e.value.index, e.value.offset) == (2, starts[2])
