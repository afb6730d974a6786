"""Structure rules (GG1xx) on files written by gguf-py and on mutations of them."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from gguf_writers import KV, TensorSpec, V, T, write_gguf_py
from ggscope.validate.runner import validate_file


def _codes(path, select="GG1"):
    found = validate_file(str(path), select=[select])
    assert not [f for f in found if f.code == "GG000"]
    return {f.code for f in found}


@pytest.fixture()
def good(tmp_path):
    rng = np.random.default_rng(0)
    return write_gguf_py(tmp_path / "good.gguf",
                         kvs=[KV("general.architecture", V.STRING, "llama"), KV("general.alignment", V.UINT32, 32)],
                         tensors=[TensorSpec("a.weight", T.F32, rng.standard_normal((3, 5)).astype(np.float32)),
                                  TensorSpec("b.weight", T.F32, rng.standard_normal((7,)).astype(np.float32))])


def test_gguf_py_file_has_no_structure_finding(good):
    assert _codes(good) == set()


def test_every_truncation_is_a_structure_error(good, tmp_path):
    data = good.read_bytes()
    for cut in range(4, len(data), 7):
        p = tmp_path / "cut.gguf"
        p.write_bytes(data[:cut])
        found = validate_file(str(p), select=["GG1"])
        assert not [f for f in found if f.code == "GG000"], cut
        errs = [f for f in found if f.severity.value == "error"]
        assert errs, f"no structure error when cut at {cut}"


def test_version_1_is_refused(good, tmp_path):
    data = bytearray(good.read_bytes())
    struct.pack_into("<I", data, 4, 1)
    p = tmp_path / "v1.gguf"
    p.write_bytes(bytes(data))
    assert "GG102" in _codes(p)


def test_misplaced_offset_is_refused(good, tmp_path):
    import ggscope
    mf = ggscope.open(str(good))
    node = [n for n in mf.root.child("tensor_infos").children][1]["offset"]
    data = bytearray(good.read_bytes())
    struct.pack_into("<Q", data, node.start, node.value + 32)
    mf.close()
    p = tmp_path / "ofs.gguf"
    p.write_bytes(bytes(data))
    assert "GG114" in _codes(p)


def test_alignment_must_be_power_of_two(tmp_path):
    p = write_gguf_py(tmp_path / "a.gguf", kvs=[KV("general.alignment", V.UINT32, 24)])
    assert "GG107" in _codes(p)


def test_large_alignment_is_accepted(tmp_path):
    # ggml's reader only asks for a power of two; it loads a 2 MiB alignment
    p = write_gguf_py(tmp_path / "a.gguf", alignment=2 * 1024 * 1024,
                      tensors=[TensorSpec("a.weight", T.F32, np.ones((4,), np.float32))])
    assert "GG107" not in _codes(p)


def _sparse_gguf(path, value_header: bytes, n: int):
    """One key 'a.b' whose value header claims ``n`` payload bytes, all present (sparse zeros)."""
    key = b"a.b"
    hdr = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + value_header
    with open(path, "wb") as fh:
        fh.write(hdr)
        fh.truncate(len(hdr) + n)
    return path


@pytest.mark.parametrize("n,ok", [((1 << 30) + 1, False), (1 << 30, True)])
def test_ggml_array_element_limit(tmp_path, n, ok):
    # ggml src/gguf.cpp GGUF_MAX_ARRAY_ELEMENTS = 1024*1024*1024 (2026-02-27)
    p = _sparse_gguf(tmp_path / "arr.gguf", struct.pack("<IIQ", 9, 0, n), n)
    assert ("GG120" in _codes(p)) is not ok


@pytest.mark.parametrize("n,ok", [((1 << 30) + 1, False), (1 << 30, True)])
def test_ggml_string_length_limit(tmp_path, n, ok):
    # ggml src/gguf.cpp GGUF_MAX_STRING_LENGTH = 1024*1024*1024 (2026-02-27)
    p = _sparse_gguf(tmp_path / "str.gguf", struct.pack("<IQ", 8, n), n)
    assert ("GG120" in _codes(p)) is not ok


def _raw_keys_gguf(path, keys: list[bytes]):
    """A GGUF v3 file of uint32 entries under the given raw keys (no tensors)."""
    import struct
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(keys))
    for k in keys:
        body += struct.pack("<Q", len(k)) + k + struct.pack("<II", 4, 1)
    path.write_bytes(body)
    return path


def test_duplicate_keys_are_their_bytes(tmp_path):
    """GG106 compares the keys' bytes (ggml's strcmp): keys that differ only in bytes that
    are not UTF-8 are distinct, each repeat is named once with the entry it repeats - the
    same answer whether the decoded keys already show every key distinct or not."""
    from _helpers import findings
    distinct = _raw_keys_gguf(tmp_path / "distinct.gguf", [b"general.a", b"x.\xff", b"x.\xfe", b"x.\xc3", b"y"])
    assert [f for f in findings(distinct) if f.code == "GG106"] == []
    twice = _raw_keys_gguf(tmp_path / "twice.gguf", [b"general.a", b"x.\xff", b"x.\xfe", b"general.a", b"x.\xff"])
    got = [f.message for f in findings(twice) if f.code == "GG106"]
    assert len(got) == 2 and got[0].endswith("repeats entry 0") and got[1].endswith("repeats entry 1"), got


@pytest.mark.parametrize("n,ok", [((1 << 30) + 1, False), (1 << 30, True)])
def test_ggml_string_length_limit_in_an_array(tmp_path, n, ok):
    # ggml src/gguf.cpp GGUF_MAX_STRING_LENGTH, for each string of an array: two strings, the second n bytes
    hdr = struct.pack("<IIQ", 9, 8, 2) + struct.pack("<Q", 1) + b"x" + struct.pack("<Q", n)
    p = _sparse_gguf(tmp_path / "strs.gguf", hdr, n)
    assert ("GG120" in _codes(p)) is not ok
