"""Proves the Kaitai differential harness itself right before anyone trusts it.

A tiny spec (substreams, positional instances incl. ones on other streams, even one
parsed later in the walk, a switch with
user and primitive cases, an enum, repeat-expr and repeat-eos) parses a hand-crafted
byte string; the expected offsets below were computed by hand from the byte layout, not
from the harness.  ``compare`` is checked on hand-built ggscope ``Node`` trees.
"""
from __future__ import annotations

import numpy as np
import pytest

from ggscope.ksy.node import LazyChildren, Node
from kaitai_oracle import (KaitaiCompileError, KaitaiUnavailable, Record, compare,
                           kaitai_records, node_modules_dir)
import kaitai_oracle

SELFTEST_KSY = """\
meta:
  id: selftest
  endian: le
  encoding: UTF-8
seq:
  - id: magic
    contents: "ST"
  - id: num_items
    type: u1
  - id: items
    type: item
    repeat: expr
    repeat-expr: num_items
  - id: ofs_tail
    type: u2
  - id: blob
    size: 4
    type: blob
instances:
  tail:
    pos: ofs_tail
    size: 4
    type: tail
  twice_items:
    value: num_items * 2
types:
  item:
    seq:
      - id: kind
        type: u1
        enum: kind
      - id: body
        type:
          switch-on: kind
          cases:
            'kind::word': word
            'kind::text': text
            'kind::num': u4
  word:
    seq:
      - id: value
        type: u2be
    instances:
      peek_blob:
        io: _root.blob._io
        pos: 0
        type: u1
  text:
    seq:
      - id: len_value
        type: u1
      - id: value
        type: str
        size: len_value
  blob:
    seq:
      - id: a
        type: u1
      - id: b
        type: u1
    instances:
      at_end:
        pos: 2
        type: u2
      first_byte:
        io: _root._io
        pos: 0
        type: u1
  tail:
    seq:
      - id: values
        type: s2
        repeat: eos
enums:
  kind:
    1: word
    2: text
    3: num
"""

# offset: bytes                      meaning
DATA = (b"ST"                        # 0x00 magic
        b"\x03"                      # 0x02 num_items = 3
        b"\x01\x12\x34"              # 0x03 item 0: kind word, u2be 0x1234
        b"\x02\x03" + "hé".encode()  # 0x06 item 1: kind text, len 3, "hé" (3 UTF-8 bytes)
        + b"\x03\xef\xbe\xad\xde"    # 0x0b item 2: kind num, u4le 0xdeadbeef
        b"\x18\x00"                  # 0x10 ofs_tail = 24
        b"\x0a\x0b\x01\x02"          # 0x12 blob substream: a, b, at_end = u2le 0x0201
        b"\xff\xff"                  # 0x16 never read
        b"\xfe\xff\x07\x00")         # 0x18 tail substream: s2le -2, 7

EXPECTED = [
    Record("magic", 0, 2, b"ST"),
    Record("num_items", 2, 3, 3),
    Record("items", 3, 16, None),
    Record("items[0]", 3, 6, None),
    Record("items[0]/kind", 3, 4, 1),
    Record("items[0]/body", 4, 6, None),
    Record("items[0]/body/value", 4, 6, 0x1234),
    Record("items[0]/body/peek_blob", 18, 19, 0x0A),  # io: a substream the walk meets later
    Record("items[1]", 6, 11, None),
    Record("items[1]/kind", 6, 7, 2),
    Record("items[1]/body", 7, 11, None),
    Record("items[1]/body/len_value", 7, 8, 3),
    Record("items[1]/body/value", 8, 11, "hé"),
    Record("items[2]", 11, 16, None),
    Record("items[2]/kind", 11, 12, 3),
    Record("items[2]/body", 12, 16, 0xDEADBEEF),
    Record("ofs_tail", 16, 18, 24),
    Record("blob", 18, 22, None),
    Record("blob/a", 18, 19, 0x0A),
    Record("blob/b", 19, 20, 0x0B),
    Record("blob/at_end", 20, 22, 0x0201),     # pos 2 inside the substream at 18
    Record("blob/first_byte", 0, 1, ord("S")),  # io: _root._io, pos 0
    Record("tail", 24, 28, None),
    Record("tail/values", 24, 28, [-2, 7]),
    Record("tail/values[0]", 24, 26, -2),
    Record("tail/values[1]", 26, 28, 7),
]


@pytest.fixture(scope="module")
def selftest(tmp_path_factory):
    d = tmp_path_factory.mktemp("ksc")
    ksy = d / "selftest.ksy"
    ksy.write_text(SELFTEST_KSY, encoding="utf-8")
    data = d / "selftest.bin"
    data.write_bytes(DATA)
    return ksy, data


def test_records_match_hand_computed_offsets(selftest):
    ksy, data = selftest
    assert kaitai_records(ksy, data) == EXPECTED


def test_max_array_cuts_element_records_only(selftest):
    ksy, data = selftest
    recs = {r.path: r for r in kaitai_records(ksy, data, max_array=1)}
    assert "items[0]/body/value" in recs and "items[1]" not in recs
    assert "tail/values[1]" not in recs
    assert recs["tail/values"].value == [-2, 7]


def test_compiler_rejection_is_an_error_not_a_skip(tmp_path):
    node_modules_dir()  # skip when the compiler is absent
    bad = tmp_path / "bad.ksy"
    bad.write_text("meta:\n  id: bad\nseq:\n  - id: x\n    type: no_such_type\n", encoding="utf-8")
    with pytest.raises(KaitaiCompileError, match="no_such_type"):
        kaitai_records(bad, bad)


def test_missing_compiler_raises_a_skip(monkeypatch, tmp_path):
    monkeypatch.setattr(kaitai_oracle, "NODE_MODULE_DIRS", (tmp_path / "nope",))
    with pytest.raises(KaitaiUnavailable, match="install_ksc.sh"):
        node_modules_dir()


# --------------------------------------------------------------------------- compare

def _leaf(name, path, start, end, value):
    return Node(name, path, "u1", start, end, value)


def _tree(*, values_end=28, values=np.array([-2, 7], dtype=np.int16), first_byte=0x53,
          drop_magic=False):
    """A hand-built ggscope tree for part of the selftest file."""
    def item(i):
        start, end, kind = [(3, 6, 1), (6, 11, 2), (11, 16, 3)][i]
        return Node("items", f"items[{i}]", "item", start, end, children=[
            _leaf("kind", f"items[{i}]/kind", start, start + 1, kind)])

    elems = LazyChildren(2, lambda i: _leaf("values", f"tail/values[{i}]", 24 + 2 * i,
                                            26 + 2 * i, int(values[i])))
    kids = [
        _leaf("num_items", "num_items", 2, 3, np.uint8(3)),
        Node("items", "items", "item[]", 3, 16, children=LazyChildren(3, item)),
        Node("blob", "blob", "blob", 18, 22, children=[
            _leaf("first_byte", "blob/first_byte", 0, 1, first_byte)]),
        Node("tail", "tail", "tail", 24, 28, children=[
            Node("values", "tail/values", "s2[]", 24, values_end, values, children=elems)]),
    ]
    if not drop_magic:
        kids.insert(0, _leaf("magic", "magic", 0, 2, memoryview(b"ST")))
    return Node("", "", "selftest", 0, 28, children=kids)


CHECKED = ("magic", "num_items", "items[0]/kind", "items[2]/kind", "blob/first_byte", "tail")


def test_compare_accepts_an_equal_tree():
    assert compare(EXPECTED, _tree(), paths=CHECKED) == []


def test_compare_reports_each_kind_of_mismatch():
    problems = compare(EXPECTED, _tree(values_end=27, values=np.array([-2, 8], np.int16),
                                       first_byte=0x54, drop_magic=True), paths=CHECKED)
    text = "\n".join(problems)
    assert "magic: missing in ggscope" in text
    assert "tail/values: range differs: kaitai [0x18, 0x1c), ggscope [0x18, 0x1b)" in text
    assert "tail/values: value differs: element 1: kaitai 7" in text
    assert "tail/values[1]: value differs: kaitai 7, ggscope 8" in text
    assert "blob/first_byte: value differs: kaitai 83, ggscope 84" in text
    assert len(problems) == 5


def test_compare_ignore_leaves_paths_out():
    assert compare(EXPECTED, _tree(drop_magic=True), paths=CHECKED, ignore=["magic"]) == []


def test_compare_paths_filter_and_unchecked_paths_are_missing():
    assert compare(EXPECTED, _tree(), paths=["items[1]"]) == [
        "items[1]/body: missing in ggscope (kaitai has [0x7, 0xb))",
        "items[1]/body/len_value: missing in ggscope (kaitai has [0x7, 0x8))",
        "items[1]/body/value: missing in ggscope (kaitai has [0x8, 0xb))",
    ]
