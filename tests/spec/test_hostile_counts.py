"""Counts a file claims but its bytes cannot back never drive work or memory.

The BIT1 header below (issue 13) claims 2**32 - 1 layers of zero width: each layer
takes no bytes, so nothing in the file bounds the loop.  The parse must stop at once
with a damage node naming the count, not run for hours.
"""
from __future__ import annotations

import struct

import ggscope
from ggscope.source.mapped import ByteSource
from ggscope.ksy.engine import MAX_ZERO_SIZE_ELEMENTS, parse_spec
from ggscope.ksy.model import compile_spec
import yaml


def _spec(text: str):
    return compile_spec(yaml.safe_load(text))


def test_bit1_zero_width_layers_with_huge_count_stop_at_once():
    data = struct.pack("<4s7Iq", b"BIT1", 1, 0, 0, 0xFFFFFFFF, 0, 0, 0, 65536)
    mf = ggscope.open_bytes(data, "hostile.bit1")
    assert mf.damage is not None
    assert mf.damage.path == "layers"
    assert "4294967295 elements" in mf.damage.error and "no bytes" in mf.damage.error
    assert len(mf.tensors) <= 2


def test_repeat_expr_of_empty_elements_is_refused_before_looping():
    text = """
meta: {id: t, endian: le}
seq:
  - {id: n, type: u4}
  - {id: xs, type: empty, repeat: expr, repeat-expr: n}
types:
  empty: {seq: []}
"""
    r = parse_spec(_spec(text), ByteSource(struct.pack("<I", 0xFFFFFFFF)))
    assert r.error is not None and r.error.path == "xs"
    kids = r.root.child("xs").children
    assert len(kids) <= 2


def test_a_few_empty_elements_are_still_fine():
    text = """
meta: {id: t, endian: le}
seq:
  - {id: n, type: u4}
  - {id: xs, type: empty, repeat: expr, repeat-expr: n}
types:
  empty: {seq: []}
"""
    r = parse_spec(_spec(text), ByteSource(struct.pack("<I", 3)))
    assert r.error is None
    assert MAX_ZERO_SIZE_ELEMENTS >= 3


def _gguf_kvs(n: int, alignment_at: int | None = None) -> bytes:
    def s(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b
    parts = [b"GGUF", struct.pack("<IQQ", 3, 0, n)]
    for i in range(n):
        if i == alignment_at:
            parts.append(s(b"general.alignment") + struct.pack("<II", 4, 64))
        else:
            parts.append(s(f"custom.key_{i}".encode()) + struct.pack("<II", 4, i))
    return b"".join(parts)


def test_more_metadata_entries_than_the_zero_size_cap_are_no_damage():
    """ggml reads any number of entries; GGUF's alignment search (one zero-size probe per
    entry, stopping at the last) must not be taken for a hostile count."""
    import ggscope
    n = MAX_ZERO_SIZE_ELEMENTS * 2
    mf = ggscope.open_bytes(_gguf_kvs(n), "many-keys.gguf")
    assert mf.damage is None and len(mf.metadata) == n
    data = _gguf_kvs(n, alignment_at=n - 10)
    mf = ggscope.open_bytes(data, "many-keys.gguf")
    assert mf.damage is None and mf.alignment == 64


def test_zero_size_until_elements_stop_within_the_stream_size():
    text = """
meta: {id: t, endian: le}
seq:
  - {id: xs, type: empty, repeat: until, repeat-until: 'false'}
types:
  empty: {seq: []}
"""
    r = parse_spec(_spec(text), ByteSource(b"\0" * 16))
    assert r.error is not None and r.error.damage.kind == "zero-size-elements"
    assert len(r.root.child("xs").children) <= MAX_ZERO_SIZE_ELEMENTS + 2


def test_parsing_many_records_runs_no_full_garbage_collection():
    """The collector's passes over every live object made 10k -> 40k entries cost 1.8 s ->
    15.5 s; the parse pauses it (core.gcpause), so no older-generation pass runs."""
    import gc

    import ggscope
    data = _gguf_kvs(20_000)
    ggscope.open_bytes(_gguf_kvs(10), "warm.gguf")
    gc.collect()
    before = [s["collections"] for s in gc.get_stats()]
    mf = ggscope.open_bytes(data, "many-keys.gguf")
    after = [s["collections"] for s in gc.get_stats()]
    assert mf.damage is None and gc.isenabled()
    assert after[1] - before[1] == 0 and after[2] - before[2] == 0, (before, after)
