"""Value rules (GG2xx) on files written by our spec writer, byte-patched gguf-py files and real files."""
from __future__ import annotations

import glob
import struct

import numpy as np
import pytest

import ggscope
import ggscope.ksy.node
from gguf_writers import KV, GArray, TensorSpec, T, V, write_gguf_py, write_gguf_v1_v2
from _helpers import findings


def _gg2(path):
    return [f for f in findings(path, select=["GG2"])]


def _codes(path):
    return {f.code for f in _gg2(path)}


def _llama_kvs(*extra):
    return [KV("general.architecture", V.STRING, "llama"), *extra]


def _w(rng=np.random.default_rng(0)):
    return TensorSpec("token_embd.weight", T.F32, rng.standard_normal((2, 8)).astype(np.float32))


def test_gguf_py_value_zoo_is_clean(tmp_path):
    from gguf_writers import all_value_types
    assert _codes(all_value_types(tmp_path / "vt.gguf")) == set()


def test_bool_byte_2_is_invalid(tmp_path):
    p = write_gguf_py(tmp_path / "b.gguf", kvs=_llama_kvs(KV("test.flag", V.BOOL, True)), tensors=[_w()])
    mf = ggscope.open(str(p))
    node = ggscope.ksy.node.find(mf.root, mf.metadata_nodes["test.flag"])["value"]
    data = bytearray(p.read_bytes())
    assert data[node.start] == 1           # gguf-py wrote True as the byte 1
    data[node.start] = 2
    p.write_bytes(bytes(data))
    found = [f for f in _gg2(p) if f.code == "GG201"]
    assert len(found) == 1 and found[0].start == node.start and found[0].severity.value == "error"


def test_bool_array_element_0xff_is_invalid(tmp_path):
    p = write_gguf_v1_v2(tmp_path / "ba.gguf", 3, _llama_kvs(KV("test.flags", V.ARRAY, GArray(V.BOOL, (True, False, True)))), [_w()])
    data = p.read_bytes()
    # our writer packs bools as one byte each: patch the third element
    i = data.index(struct.pack("<IQ", int(V.BOOL), 3) + b"\x01\x00\x01") + 12 + 2
    p.write_bytes(data[:i] + b"\xff" + data[i + 1:])
    found = [f for f in _gg2(p) if f.code == "GG201"]
    assert len(found) == 1 and found[0].start == i


def test_invalid_utf8_string_value_and_array_element(tmp_path):
    kvs = _llama_kvs(KV("general.name", V.STRING, b"bad\xff name"),
                     KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, ("a", b"\xc3", "ok", b"\xed\xa0\x80"))))
    p = write_gguf_v1_v2(tmp_path / "u.gguf", 3, kvs, [_w()])
    found = [f for f in _gg2(p) if f.code == "GG202"]
    assert len(found) == 2
    assert any("2 string element" in f.message for f in found)


def test_invalid_utf8_in_nested_string_array(tmp_path):
    kvs = _llama_kvs(KV("test.nested", V.ARRAY, GArray(V.ARRAY, (GArray(V.STRING, ("x",)), GArray(V.STRING, (b"\x80",))))))
    p = write_gguf_v1_v2(tmp_path / "n.gguf", 3, kvs, [_w()])
    assert "GG202" in _codes(p)


def test_invalid_utf8_key_and_tensor_name(tmp_path):
    rng = np.random.default_rng(1)
    kvs = _llama_kvs(KV(b"test.k\xffy", V.UINT8, 1), KV("test.caf\u00e9", V.UINT8, 1))   # bytes: written raw
    p = write_gguf_v1_v2(tmp_path / "k.gguf", 3, kvs,
                         [TensorSpec(b"blk.0.attn_q\xfe.weight", T.F32, rng.standard_normal(8).astype(np.float32))])
    found = sorted(f.message for f in _gg2(p) if f.code == "GG203")
    assert len(found) == 2, found              # the UTF-8 key "test.café" is not this rule's business
    assert found[0].startswith("metadata key") and found[1].startswith("tensor name")


def test_zero_dimension(tmp_path):
    p = write_gguf_v1_v2(tmp_path / "z.gguf", 3, _llama_kvs(),
                         [TensorSpec("token_embd.weight", T.F32, np.zeros((0, 8), np.float32))])
    found = [f for f in _gg2(p) if f.code == "GG204"]
    assert len(found) == 1 and found[0].severity.value == "warning"


@pytest.mark.parametrize("align,expect", [(4, True), (2, True), (8, False), (64, False)])
def test_alignment_multiple_of_8(tmp_path, align, expect):
    p = write_gguf_v1_v2(tmp_path / "a.gguf", 3, _llama_kvs(KV("general.alignment", V.UINT32, align)), [_w()],
                         alignment=align)
    assert ("GG205" in _codes(p)) == expect


def test_real_files_have_no_value_errors(shared_fixtures, repo_fixtures):
    """llama.cpp's vocab files and our gguf-py fixtures (ggml's handcrafted files hold random bools and strings)."""
    paths = sorted(glob.glob(str(shared_fixtures / "llama-vocab" / "*.gguf"))) + sorted(glob.glob(str(repo_fixtures / "*.gguf")))
    assert paths
    for p in paths:
        errs = [f for f in _gg2(p) if f.severity.value == "error"]
        assert not errs, (p, errs)


def test_every_key_that_is_not_utf8_is_named_first_and_last_among_many(tmp_path):
    """GG203 searches the keys joined once and walks them only when that finds a byte that
    is not UTF-8: one bad key first, one last and one in the middle of many good ones, and
    two at once, are each named."""
    good = [KV(f"test.k{i}", V.UINT8, 1) for i in range(40)]
    first, last = KV(b"a.\xfefirst", V.UINT8, 1), KV(b"z.last\xc3", V.UINT8, 1)
    msg = {first: 'metadata key is not UTF-8: "a.\\xfefirst"', last: 'metadata key is not UTF-8: "z.last\\xc3"'}
    for i, bad in enumerate(([first], [last], [first, last])):
        keys = [bad[0], *good, *bad[1:]] if bad[0] is first else [*good[:20], *bad, *good[20:]]
        p = write_gguf_v1_v2(tmp_path / f"k{i}.gguf", 3, _llama_kvs(*keys), [_w()])
        assert [f.message for f in _gg2(p) if f.code == "GG203"] == [msg[k] for k in bad]
    clean = write_gguf_v1_v2(tmp_path / "clean.gguf", 3, _llama_kvs(*good), [_w()])
    assert [f for f in _gg2(clean) if f.code == "GG203"] == []


def test_every_string_value_that_is_not_utf8_is_named_alone_at_either_end(tmp_path):
    """GG202 searches the scalar string values joined once and looks at each only when
    that finds a byte that is not UTF-8: one bad value first or last among many good
    ones is named, with the string arrays' verdicts beside it."""
    good = [KV(f"test.s{i}", V.STRING, f"text {i}") for i in range(40)]
    first, last = KV("a.first", V.STRING, b"\xfefirst"), KV("z.last", V.STRING, b"last\xc3")
    arr = KV("test.arr", V.ARRAY, GArray(V.STRING, ("ok", b"\x80")))
    for i, keys in enumerate(([first, *good], [*good, last], [*good[:3], arr, *good[3:]])):
        p = write_gguf_v1_v2(tmp_path / f"s{i}.gguf", 3, _llama_kvs(*keys), [_w()])
        got = [f.message for f in _gg2(p) if f.code == "GG202"]
        want = {0: ['key "a.first": value is not UTF-8: "\\xfefirst"'], 1: ['key "z.last": value is not UTF-8: "last\\xc3"'],
                2: ['key "test.arr": 1 string element(s) are not UTF-8: element 1 ("\\x80")']}[i]
        assert got == want, got
    clean = write_gguf_v1_v2(tmp_path / "clean.gguf", 3, _llama_kvs(*good), [_w()])
    assert [f for f in _gg2(clean) if f.code == "GG202"] == []
