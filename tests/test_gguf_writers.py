"""The test-file writers are right: gguf-py reads back what they wrote, and the
independent v1/v2 writer is byte-identical to gguf-py's GGUFWriter where both apply.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from gguf import GGUFReader

from gguf_writers import (KV, RECIPES, GArray, T, V, quantized_tensor, tensor_zoo,
                          value_type_kvs, write_gguf_py, write_gguf_v1_v2)


def _flat(value):
    """GGUFReader flattens nested arrays; so do we for comparison."""
    if isinstance(value, GArray):
        return [x for item in value.items for x in (_flat(item) if isinstance(item, GArray) else [item])]
    return value


def _assert_read_back(path, kvs, tensors, *, big=False):
    r = GGUFReader(path)
    assert r.byte_order == ("S" if big else "I")
    for kv in kvs:
        field = r.fields[kv.key]
        assert field.types[0] == kv.vtype, kv.key
        assert field.contents() == _flat(kv.value), kv.key
    assert [t.name for t in r.tensors] == [t.name for t in tensors]
    for got, want in zip(r.tensors, tensors):
        assert got.tensor_type == want.type
        assert tuple(int(d) for d in got.shape) == want.ne
        if want.type in (T.F32, T.F16, T.F64, T.I8, T.I16, T.I32, T.I64):
            np.testing.assert_array_equal(got.data.reshape(-1), want.data.reshape(-1))
        else:
            assert got.data.tobytes() == want.data.tobytes()
        assert got.data_offset % r.alignment == 0


@pytest.mark.parametrize("endian", ["little", "big"])
def test_gguf_py_writes_every_value_type_and_tensor_type(tmp_path, endian):
    kvs, tensors = value_type_kvs(), tensor_zoo(np.random.default_rng(0))
    path = write_gguf_py(tmp_path / "x.gguf", kvs=kvs, tensors=tensors, endian=endian)
    _assert_read_back(path, kvs, tensors, big=endian == "big")
    assert {t.type for t in tensors} >= {T.F32, T.F16, T.BF16, T.Q4_0, T.Q8_0, T.Q4_K, T.Q6_K,
                                          T.I8, T.I32, T.IQ2_XXS, T.TQ1_0, T.MXFP4}
    assert {kv.vtype for kv in kvs} == set(V)


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("alignment", [32, 64])
def test_own_writer_is_byte_identical_to_gguf_writer(tmp_path, endian, alignment):
    kvs, tensors = value_type_kvs(), tensor_zoo(np.random.default_rng(0))
    theirs = write_gguf_py(tmp_path / "py.gguf", kvs=kvs, tensors=tensors, endian=endian,
                           alignment=None if alignment == 32 else alignment)
    head = [KV("general.architecture", V.STRING, "llama")]
    if alignment != 32:
        head.append(KV("general.alignment", V.UINT32, alignment))
    ours3 = write_gguf_v1_v2(tmp_path / "v3.gguf", 3, head + kvs, tensors,
                             alignment=alignment, endian=endian)
    assert ours3.read_bytes() == theirs.read_bytes()
    if endian == "little":  # v2 differs from v3 only in the version field
        ours2 = write_gguf_v1_v2(tmp_path / "v2.gguf", 2, head + kvs, tensors, alignment=alignment)
        a, b = ours2.read_bytes(), theirs.read_bytes()
        assert a[4:8] == struct.pack("<I", 2) and b[4:8] == struct.pack("<I", 3)
        assert a[:4] + a[8:] == b[:4] + b[8:]


def test_v1_layout_hand_computed(tmp_path):
    t = quantized_tensor("w", T.F32, (2,), np.random.default_rng(0))
    kvs = [KV("a", V.UINT32, 7), KV("s", V.ARRAY, GArray(V.STRING, ("xy",)))]
    got = write_gguf_v1_v2(tmp_path / "v1.gguf", 1, kvs, [t]).read_bytes()
    header = (b"GGUF" + bytes([1, 0, 0, 0]) + bytes([1, 0, 0, 0]) + bytes([2, 0, 0, 0])
              # kv "a": u32 len 1, "a", type 4 (UINT32), 7
              + bytes([1, 0, 0, 0]) + b"a" + bytes([4, 0, 0, 0]) + bytes([7, 0, 0, 0])
              # kv "s": type 9 (ARRAY), element type 8 (STRING), u32 count 1, u32 len 2, "xy"
              + bytes([1, 0, 0, 0]) + b"s" + bytes([9, 0, 0, 0]) + bytes([8, 0, 0, 0])
              + bytes([1, 0, 0, 0]) + bytes([2, 0, 0, 0]) + b"xy"
              # tensor "w": u32 n_dims 1, u32 ne0 2, type 0 (F32), u64 offset 0
              + bytes([1, 0, 0, 0]) + b"w" + bytes([1, 0, 0, 0]) + bytes([2, 0, 0, 0])
              + bytes([0, 0, 0, 0]) + bytes(8))
    assert len(header) == 77
    assert got == header + bytes(96 - 77) + t.data.astype("<f4").tobytes() + bytes(24)


def test_v2_and_empty_values_read_back(tmp_path):
    kvs = [KV("general.architecture", V.STRING, "llama"), KV("general.alignment", V.UINT32, 128),
           KV("e", V.ARRAY, GArray(V.UINT32, ())), KV("s", V.STRING, ""),
           KV("n", V.ARRAY, GArray(V.ARRAY, (GArray(V.INT32, ()), GArray(V.INT32, (1, 2)))))]
    tensors = [quantized_tensor("w", T.Q8_0, (64, 2), np.random.default_rng(1))]
    path = write_gguf_v1_v2(tmp_path / "v2.gguf", 2, kvs, tensors, alignment=128)
    assert GGUFReader(path).fields["GGUF.version"].contents() == 2
    r = GGUFReader(path)
    assert r.fields["e"].contents() == [] and r.fields["s"].contents() == ""
    assert r.fields["n"].contents() == [1, 2]
    assert r.tensors[0].data_offset % 128 == 0


@pytest.mark.parametrize("name", sorted(set(RECIPES) - {"legacy_v1"}))
def test_recipes_read_back_with_gguf_py(tmp_path, name):
    path = RECIPES[name](tmp_path / f"{name}.gguf")
    r = GGUFReader(path)
    assert r.tensors and path.stat().st_size < 300_000
    if name == "custom_alignment":
        assert r.alignment == 64 and all(t.data_offset % 64 == 0 for t in r.tensors)
    if name == "big_endian":
        assert r.byte_order == "S"


def test_legacy_v1_recipe_header(tmp_path):
    data = RECIPES["legacy_v1"](tmp_path / "v1.gguf").read_bytes()
    assert data[:4] == b"GGUF"
    assert struct.unpack_from("<III", data, 4) == (1, 3, 7)   # version, n_tensors, n_kv (u32)
    assert struct.unpack_from("<I", data, 16) == (len("general.architecture"),)


def test_gguf_py_refuses_what_only_our_writer_can_write(tmp_path):
    with pytest.raises(ValueError, match="nested element type"):
        write_gguf_py(tmp_path / "x.gguf",
                      kvs=[KV("k", V.ARRAY, GArray(V.ARRAY, (GArray(V.UINT8, (1,)),)))])
    with pytest.raises(ValueError, match="power of two"):
        write_gguf_v1_v2(tmp_path / "y.gguf", 2, [], [], alignment=48)
