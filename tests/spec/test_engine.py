"""The interpreter's semantics, on small inline specs and crafted bytes.

The bulk scanner must give exactly what the one-element-at-a-time loop gives; damage
must become an error node at the right path; hostile counts, nesting and zero-size
loops must be refused before any allocation or endless loop.
"""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest
import yaml

from ggscope.ksy.node import find
from ggscope.source.mapped import ByteSource
from ggscope.ksy.engine import MAX_DEPTH, parse_spec
from ggscope.ksy.expr import compile_expr
from ggscope.ksy.model import compile_spec

ENTRY_FAST = """
meta: {id: t, endian: le}
seq:
  - {id: flag, type: u1}
  - {id: n, type: u4}
  - {id: entries, type: entry, repeat: expr, repeat-expr: n}
types:
  entry:
    seq:
      - {id: len, type: u4}
      - {id: text, type: str, size: len, encoding: UTF-8}
      - {id: score, type: f4, if: _root.flag != 0}
"""
# the same layout, but the element type has a param: no bulk scan, one by one
ENTRY_SLOW = ENTRY_FAST.replace("type: entry, repeat", "type: entry(0), repeat").replace(
    "  entry:\n    seq:", "  entry:\n    params: [{id: unused, type: u1}]\n    seq:")


def spec(text: str):
    return compile_spec(yaml.safe_load(text))


def entries_bytes(strings, scores):
    out = b""
    for s, sc in zip(strings, scores):
        out += struct.pack("<I", len(s)) + s + (struct.pack("<f", sc) if sc is not None else b"")
    return out


@pytest.mark.parametrize("seed", range(12))
def test_bulk_scan_equals_element_loop(seed):
    rng = random.Random(seed)
    flag = rng.random() < 0.5
    n = rng.randint(0, 300)
    strings = [bytes(rng.choice(b"ab\x00\xc3\xa9z ") for _ in range(rng.choice([0, 1, 2, 5, 255, 256, 300])))
               for _ in range(n)]
    strings = [s.replace(b"\x00", b"") if rng.random() < 0.7 else s for s in strings]
    scores = [rng.uniform(-5, 5) if flag else None for _ in range(n)]
    data = bytes([flag]) + struct.pack("<I", n) + entries_bytes(strings, scores) + b"\x00" * rng.randint(0, 3)
    fast = parse_spec(spec(ENTRY_FAST), ByteSource(data))
    slow = parse_spec(spec(ENTRY_SLOW), ByteSource(data))
    assert fast.error is None and slow.error is None
    fa, sa = find(fast.root, "entries"), find(slow.root, "entries")
    assert fa.end == sa.end
    assert fa.value is not None, "the bulk path was not taken"
    assert fa.value.tolist() == [e["text"].value for e in sa.children]
    if flag:
        assert np.array_equal(fa.value.fields["score"],
                              np.array([e["score"].value for e in sa.children], np.float32))
    for i in range(n):
        a, b = fa.children[i], sa.children[i]
        assert (a.start, a.end) == (b.start, b.end)
        assert [(k.name, k.start, k.end, k.value) for k in a.children] == \
               [(k.name, k.start, k.end, k.value) for k in b.children]


@pytest.mark.parametrize("which", [ENTRY_FAST, ENTRY_SLOW])
def test_truncated_element_is_reported_at_its_field(which):
    data = b"\x01" + struct.pack("<I", 3) + entries_bytes([b"abc", b"defgh", b"ij"], [1.0, 2.0, 3.0])
    cut = data[:-5]          # inside the last entry's text
    r = parse_spec(spec(which), ByteSource(cut))
    assert r.error is not None and r.error.end is None
    assert r.error.path == "entries[2]/text"
    assert "runs past the end" in r.error.error
    assert r.error.start == len(data) - 4 - 2


def test_count_that_cannot_fit_is_refused_before_allocation():
    text = "meta: {id: t, endian: le}\nseq:\n  - {id: n, type: u8}\n  - {id: xs, type: u4, repeat: expr, repeat-expr: n}\n"
    r = parse_spec(spec(text), ByteSource(struct.pack("<Q", 2**62) + b"\x00" * 8))
    assert r.error.path == "xs" and "need" in r.error.error


def test_nesting_is_bounded():
    text = """
meta: {id: t, endian: le}
seq: [{id: top, type: node}]
types:
  node:
    seq:
      - {id: more, type: u1}
      - {id: child, type: node, if: more != 0}
"""
    r = parse_spec(spec(text), ByteSource(b"\x01" * 10_000))
    assert r.error is not None and f"deeper than {MAX_DEPTH}" in r.error.error


def test_zero_size_elements_do_not_loop_forever():
    text = """
meta: {id: t, endian: le}
seq: [{id: xs, type: empty, repeat: eos}]
types:
  empty: {seq: []}
"""
    r = parse_spec(spec(text), ByteSource(b"\x00"))
    assert r.error is not None and "consume no bytes" in r.error.error


def test_contents_mismatch_and_switch_without_case():
    text = """
meta: {id: t, endian: le}
seq:
  - {id: magic, contents: AB}
  - {id: kind, type: u1}
  - id: body
    type:
      switch-on: kind
      cases: {1: u4, 2: u2}
"""
    assert "expected" in parse_spec(spec(text), ByteSource(b"XB\x01")).error.error
    r = parse_spec(spec(text), ByteSource(b"AB\x07\x00\x00\x00\x00"))
    assert r.error.path == "body" and "no case" in r.error.error
    ok = parse_spec(spec(text), ByteSource(b"AB\x02\x34\x12"))
    assert ok.error is None and find(ok.root, "body").value == 0x1234


def test_big_endian_and_calculated_endianness():
    text = """
meta: {id: t}
seq:
  - {id: order, type: u1}
  - {id: body, type: body}
types:
  body:
    meta:
      endian:
        switch-on: _root.order
        cases: {0: le, 1: be}
    seq: [{id: x, type: u2}, {id: ys, type: u2, repeat: expr, repeat-expr: 2}]
"""
    le = parse_spec(spec(text), ByteSource(b"\x00\x01\x00\x02\x00\x03\x00"))
    be = parse_spec(spec(text), ByteSource(b"\x01\x00\x01\x00\x02\x00\x03"))
    assert find(le.root, "body/x").value == 1 == find(be.root, "body/x").value
    assert list(find(le.root, "body/ys").value) == [2, 3] == list(find(be.root, "body/ys").value)


@pytest.mark.parametrize("text,expected", [
    ("7 / 2", 3), ("-7 / 2", -4), ("7 % 3", 1), ("-7 % 3", 2), ("1 << 4 | 1", 17),
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("1 < 2 and not 2 < 1", True), ("3 > 2 ? 10 : 20", 10),
    ("0x10 + 0b11 + 1_000", 1019), ("[1, 2, 3].size", 3), ("'abc'.length", 3), ("5 & 4 == 4", True),
    ("x == 1 ? 10 : x == 2 ? 20 : 30", 20),
])
def test_expression_semantics(text, expected):
    class Obj:
        def attr(self, name):
            return {"x": 2}[name]

    class Ctx:
        obj, io, index, under = Obj(), None, None, None

    fn, _ = compile_expr(text, lambda parts: 0)
    assert fn(Ctx) == expected
