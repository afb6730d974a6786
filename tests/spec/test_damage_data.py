"""Damage is data (issue 22): the engine's consumers decide on ``Damage`` fields, never on words.

Each test either checks the fields the engine records for a known stop, or rewords
every damage sentence and checks that no verdict moves: which rule owns the damage
(``rules.common.damage_kind``) and how far the remote opener grows its prefix
(``model.open._bytes_needed``).
"""
from __future__ import annotations

import importlib.util
import struct
import sys
from pathlib import Path

import pytest

import ggscope
from ggscope.ksy import damage as damage_mod
from ggscope.ksy.damage import KINDS, Damage
from ggscope.model.open import _bytes_needed
from ggscope.rules.common import damage_kind

REPO = Path(__file__).resolve().parents[2]


def _gguf(n_tensors: int, n_kv: int, kvs: bytes = b"") -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kvs


def _kv_str(key: bytes, val: bytes) -> bytes:
    return struct.pack("<Q", len(key)) + key + struct.pack("<I", 8) + struct.pack("<Q", len(val)) + val


def test_a_cut_field_records_what_it_needs_and_what_remains():
    data = _gguf(0, 1, _kv_str(b"general.name", b"abcdef"))[:-3]
    d = ggscope.open_bytes(data).damage.damage
    assert (d.kind, d.expected, d.remaining) == ("size-past-end", 6, 3)
    assert d.bytes_needed == 6 and d.field.endswith("value/data")


def test_a_count_the_file_cannot_back_records_the_count():
    kv = struct.pack("<Q", 3) + b"abc" + struct.pack("<I", 9) + struct.pack("<IQ", 8, 1 << 40)
    d = ggscope.open_bytes(_gguf(0, 1, kv)).damage.damage
    assert d.kind == "count-too-large" and d.count == 1 << 40 and d.expected == 8 << 40 and d.remaining == 0


def test_an_unknown_value_type_records_the_value():
    kv = struct.pack("<Q", 3) + b"abc" + struct.pack("<I", 13) + b"\0" * 8
    mf = ggscope.open_bytes(_gguf(0, 1, kv))
    assert mf.damage.damage.kind == "no-case" and mf.damage.damage.value == 13
    assert damage_kind(mf) == "invalid-value-type"


def test_the_sentence_is_made_from_the_data():
    d = Damage("truncated", "a/b", 10, expected=4, remaining=1)
    assert d.sentence == "needs 4 bytes, only 1 remain (truncated)"
    with pytest.raises(ValueError):
        Damage("no-such-kind", "a", 0)


def test_every_kind_has_words():
    assert set(damage_mod._WORDS) == set(KINDS)


def _corpus():
    spec = importlib.util.spec_from_file_location("damage_corpus", REPO / "fixtures" / "damage_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["damage_corpus"] = mod
    spec.loader.exec_module(mod)
    return mod


def _verdicts(cases):
    out = []
    for case in cases:
        mf = ggscope.open_bytes(case.data, case.name)
        err = mf.damage
        out.append((case.name, damage_kind(mf),
                    _bytes_needed(err, len(case.data) // 2 + 1, len(case.data)) if err is not None else None))
    return out


def test_rewording_every_sentence_moves_no_verdict(monkeypatch):
    dc = _corpus()
    cases = []
    for label, data in sorted(dc.seeds().items()):
        cases += [*dc.cuts(label, data), *dc.mutations(label, data)][:150]
    before = _verdicts(cases)
    assert {k for _, k, _ in before} >= {"truncated-file", "count-cannot-fit"}
    monkeypatch.setattr(damage_mod, "_WORDS", {k: (lambda d: "reworded") for k in KINDS})
    assert _verdicts(cases) == before


def test_nesting_too_deep_is_judged_on_its_kind(monkeypatch):
    from ggscope.validate import validate
    value = b"".join(struct.pack("<IQ", 9, 1) for _ in range(80)) + struct.pack("<IQ", 4, 1) + b"\0" * 4
    kv = struct.pack("<Q", 3) + b"abc" + struct.pack("<I", 9) + value
    mf = ggscope.open_bytes(_gguf(0, 1, kv), "deep.gguf")
    assert mf.damage.damage.kind == "too-deep"
    monkeypatch.setattr(damage_mod, "_WORDS", {k: (lambda d: "reworded") for k in KINDS})
    mf = ggscope.open_bytes(_gguf(0, 1, kv), "deep.gguf")
    assert damage_kind(mf) == "invalid-value-type"
    gg104 = [f for f in validate(mf) if f.code == "GG104"]
    assert gg104 and "nested" in gg104[0].message and gg104[0].path == "metadata_kv[0]"
