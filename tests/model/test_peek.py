"""The header peek (``model.peek``) against the full parse: the same facts or none.

Every GGUF among the shared fixtures and the bundled example, and damaged copies of
the example (cut at offsets through the header, a value type overwritten, counts
inflated): wherever the peek answers, its facts are the parse's.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from ggscope.model.peek import peek
from ggscope.model.split import open_model
from ggscope.model.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def parse_facts(path: str):
    mf = open_model(path)
    s = summarize(mf)
    return (mf.format, mf.version, mf.endian, mf.source.size, len(mf.metadata), len(mf.tensors),
            s.architecture, s.name, mf.metadata.get("general.file_type"))


def assert_agrees(path: str) -> bool:
    p = peek(path)
    if p is None:
        return False
    fmt, version, endian, size, n_keys, n_tensors, arch, name, ftype = parse_facts(path)
    assert (p.format, p.version, p.endian, p.size, p.n_keys, p.n_tensors) == (fmt, version, endian, size, n_keys, n_tensors)
    assert p.architecture == (arch or None) and p.name == (name or None)
    if p.file_type is not None:
        assert p.file_type == int(ftype)
    return True


def test_bundled_example_agrees():
    gguf = pytest.importorskip("gguf")
    assert assert_agrees(str(EXAMPLE))
    p, r = peek(str(EXAMPLE)), gguf.GGUFReader(EXAMPLE)        # gguf-py: the reference reader
    assert p.n_tensors == len(r.tensors) and p.n_keys == len(r.fields) - 3   # fields include the header's 3
    assert p.architecture == "llama" and p.name == "TinyLlama Test" and p.file_type == 7


def test_shared_fixtures_agree(shared_fixtures):
    """Real converters' files, handcrafted damaged ones, duplicate keys, big-endian."""
    files = [f for f in sorted(shared_fixtures.rglob("*.gguf")) if f.is_file()]
    answered = sum(assert_agrees(str(f)) for f in files)
    assert answered > len(files) // 2


def test_not_gguf_gives_none(tmp_path):
    for data in (b"", b"GGU", b"GGJT\x03\x00\x00\x00" + bytes(64), b"GGUF\x04\x00\x00\x00" + bytes(64)):
        f = tmp_path / "x.gguf"
        f.write_bytes(data)
        assert peek(str(f)) is None


def test_fifo_and_missing_paths_give_none_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)                 # opening it for reading would wait for a writer
    assert peek(str(fifo)) is None
    assert peek(str(tmp_path / "gone.gguf")) is None
    assert peek("hf://org/repo/model.gguf") is None


def test_shard_names_take_the_full_path(tmp_path):
    f = tmp_path / "m-00001-of-00002.gguf"
    f.write_bytes(EXAMPLE.read_bytes())
    assert peek(str(f)) is None


def test_truncated_copies_never_contradict(tmp_path):
    data = EXAMPLE.read_bytes()
    header_end = _header_end(data)
    cuts = sorted({*range(0, 64), *range(64, header_end + 64, max(1, header_end // 97)), header_end})
    for cut in cuts:
        f = tmp_path / "cut.gguf"
        f.write_bytes(data[:cut])
        if cut < header_end:
            assert peek(str(f)) is None, cut
        else:
            assert_agrees(str(f))


def test_hostile_counts_and_types(tmp_path):
    data = bytearray(EXAMPLE.read_bytes())
    cases = []
    for field in (8, 16):                           # n_tensors, n_kv claim 2**62
        d = bytearray(data)
        struct.pack_into("<Q", d, field, 1 << 62)
        cases.append(d)
    d = bytearray(data)                             # the first key's length past the end
    struct.pack_into("<Q", d, 24, 1 << 60)
    cases.append(d)
    d = bytearray(data)                             # the first value type unknown
    (klen,) = struct.unpack_from("<Q", d, 24)
    struct.pack_into("<I", d, 32 + klen, 99)
    cases.append(d)
    for i, d in enumerate(cases):
        f = tmp_path / f"h{i}.gguf"
        f.write_bytes(bytes(d))
        assert peek(str(f)) is None, i


def test_big_endian_and_version_1(tmp_path):
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    f = tmp_path / "be.gguf"
    w = gguf.GGUFWriter(f, "llama", endianess=gguf.GGUFEndian.BIG)
    w.add_name("big one")
    w.add_file_type(7)
    w.add_tensor("t", np.ones((4, 8), dtype=np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    p = peek(str(f))
    assert p is not None and p.endian == "big" and p.name == "big one" and p.file_type == 7
    assert assert_agrees(str(f))


def _header_end(data: bytes) -> int:
    """Where the example's tensor infos end, read with gguf-py (the reference reader)."""
    gguf = pytest.importorskip("gguf")
    field = gguf.GGUFReader(EXAMPLE).tensors[-1].field
    return field.offset + sum(part.nbytes for part in field.parts)
