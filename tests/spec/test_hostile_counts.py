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
