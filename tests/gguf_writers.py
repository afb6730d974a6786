"""GGUF files for tests, written by gguf-py wherever gguf-py can write them.

Why: a reader tested only on files from its own writer proves nothing.  Version-3
files here come from gguf-py's ``GGUFWriter`` (gguf 0.19.0); gguf-py writes neither
GGUF v1/v2 nor empty arrays, so ``write_gguf_v1_v2`` is a small independent writer
built from the spec (``../shared/docs/legacy-formats.md`` §9, ``../shared/seeds/gguf-spec.txt``);
a test proves it byte-identical to ``GGUFWriter`` when asked for version 3.

Contract
--------
* Content is described once, as data: ``KV(key, vtype, value)`` with array values
  as ``GArray(etype, items)`` (items may be ``GArray``s: arrays of arrays), and
  ``TensorSpec(name, type, data)``.  ``TensorSpec.data`` is a numpy array in numpy
  order: for the plain types F32/F16/F64/I8/I16/I32/I64 its dtype is that type (native
  order; writers byte-swap for big-endian files, as gguf-py does), for every other type
  it is uint8 with the last axis in bytes (gguf-py's ``raw_dtype`` convention; bytes are
  stored as given, in either byte order, as gguf-py does).
* ``write_gguf_py(path, kvs=..., tensors=..., endian=, alignment=)`` writes with
  GGUFWriter; ``write_gguf_v1_v2(path, version, kvs, tensors, alignment=, endian=)``
  writes v1, v2 (and v3) itself.  Both return the path; both write exactly the KVs
  given (``general.alignment`` is not added for you by ``write_gguf_v1_v2``).
* Recipes ``all_value_types``, ``many_tensors``, ``custom_alignment``, ``big_endian``,
  ``empty_values``, ``legacy_v1``, ``legacy_v2`` take a path and return it (``RECIPES``).
"""
from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFEndian, GGUFValueType, GGUFWriter, GGMLQuantizationType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import quant_shape_from_byte_shape, quantize

__all__ = ["KV", "GArray", "TensorSpec", "T", "V", "write_gguf_py", "write_gguf_v1_v2",
           "value_type_kvs", "tensor_zoo", "quantized_tensor", "RECIPES",
           "all_value_types", "many_tensors", "custom_alignment", "big_endian",
           "empty_values", "legacy_v1", "legacy_v2"]

T = GGMLQuantizationType
V = GGUFValueType


@dataclass(frozen=True)
class GArray:
    """A GGUF array value: element type and items (``GArray`` items for nested arrays)."""

    etype: GGUFValueType
    items: tuple


@dataclass(frozen=True)
class KV:
    """One metadata entry; ``value`` is a ``GArray`` when ``vtype`` is ARRAY."""

    key: str
    vtype: GGUFValueType
    value: Any


@dataclass(frozen=True, eq=False)
class TensorSpec:
    """One tensor: see the module contract for what ``data`` holds."""

    name: str
    type: GGMLQuantizationType
    data: np.ndarray

    @property
    def ne(self) -> tuple[int, ...]:
        """Dimensions in ggml order (``ne[0]``, the row length, first)."""
        shape = self.data.shape if self.type in _PLAIN else quant_shape_from_byte_shape(self.data.shape, self.type)
        return tuple(int(d) for d in reversed(shape))


# ggml types gguf-py writes from typed numpy arrays (and byte-swaps for big-endian).
_PLAIN = {T.F32: np.float32, T.F16: np.float16, T.F64: np.float64, T.I8: np.int8,
          T.I16: np.int16, T.I32: np.int32, T.I64: np.int64}

# struct codes of the scalar value types (standard sizes, no alignment).
_SCALAR = {V.UINT8: "B", V.INT8: "b", V.UINT16: "H", V.INT16: "h", V.UINT32: "I",
           V.INT32: "i", V.FLOAT32: "f", V.BOOL: "?", V.UINT64: "Q", V.INT64: "q",
           V.FLOAT64: "d"}

_ENDIAN = {"little": GGUFEndian.LITTLE, "big": GGUFEndian.BIG}


def _endian(endian: str) -> GGUFEndian:
    try:
        return _ENDIAN[endian]
    except KeyError:
        raise ValueError(f"endian must be 'little' or 'big', not {endian!r}") from None


# ---------------------------------------------------------------------------- gguf-py

def write_gguf_py(path: str | Path, *, kvs: Iterable[KV] = (), tensors: Iterable[TensorSpec] = (),
                  arch: str = "llama", endian: str = "little", alignment: int | None = None) -> Path:
    """Write a GGUF v3 file with gguf-py's GGUFWriter.

    GGUFWriter itself writes ``general.architecture = arch`` first; ``alignment`` calls
    ``add_custom_alignment`` (which writes ``general.alignment``) before ``kvs``.
    Nested arrays must use the element types gguf-py infers (INT32, FLOAT32, BOOL,
    STRING, ARRAY); empty arrays are impossible with gguf-py (use ``write_gguf_v1_v2``).
    """
    path = Path(path)
    w = GGUFWriter(path, arch, endianess=_endian(endian))
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for kv in kvs:
        if kv.vtype == V.ARRAY:
            _check_nested_inferable(kv.key, kv.value)
            w.add_key_value(kv.key, _as_lists(kv.value), V.ARRAY, sub_type=kv.value.etype)
        else:
            w.add_key_value(kv.key, kv.value, kv.vtype)
    for t in tensors:
        if t.type in _PLAIN:
            if t.data.dtype != _PLAIN[t.type]:
                raise ValueError(f"{t.name}: {t.type.name} data must be {np.dtype(_PLAIN[t.type])}")
            w.add_tensor(t.name, t.data)
        else:
            if t.data.dtype != np.uint8:
                raise ValueError(f"{t.name}: {t.type.name} data must be uint8 bytes")
            w.add_tensor(t.name, t.data, raw_dtype=t.type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _as_lists(value: Any) -> Any:
    if isinstance(value, GArray):
        return [_as_lists(v) for v in value.items]
    return value


def _check_nested_inferable(key: str, arr: GArray) -> None:
    for item in arr.items:
        if isinstance(item, GArray):
            if not item.items:
                raise ValueError(f"{key}: gguf-py cannot write an empty nested array")
            inferred = V.get_type(_as_lists(item.items[0]))
            if inferred != item.etype:
                raise ValueError(f"{key}: gguf-py infers nested element type {inferred.name}, "
                                 f"not {item.etype.name}; use write_gguf_v1_v2")
            _check_nested_inferable(key, item)


# ---------------------------------------------------------------------------- own writer

def write_gguf_v1_v2(path: str | Path, version: int, kvs: Iterable[KV], tensors: Iterable[TensorSpec],
                     *, alignment: int = 32, endian: str = "little") -> Path:
    """Write GGUF ``version`` 1, 2 or 3 from the spec, independently of gguf-py.

    v1 stores tensor/kv counts, string lengths, array counts and dims as u32 (offsets
    stay u64); v2 and v3 store them as u64.  The magic is always the bytes ``GGUF``.
    v1 readers know no 64-bit value types: they are written if asked (for negative
    tests).  Tensor data starts at the first multiple of ``alignment`` after the
    tensor infos; each tensor is padded with zeros to a multiple of ``alignment``.
    """
    if version not in (1, 2, 3):
        raise ValueError(f"GGUF version must be 1, 2 or 3, not {version}")
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, not {alignment}")
    e = "<" if _endian(endian) == GGUFEndian.LITTLE else ">"
    count = "I" if version == 1 else "Q"
    kvs, tensors = list(kvs), list(tensors)

    def pack(fmt: str, v: Any) -> bytes:
        return struct.pack(e + fmt, v)

    def gstr(s: str | bytes) -> bytes:
        b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
        return pack(count, len(b)) + b

    def value(vtype: GGUFValueType, v: Any) -> bytes:
        if vtype in _SCALAR:
            return pack(_SCALAR[vtype], v)
        if vtype == V.STRING:
            return gstr(v)
        if vtype == V.ARRAY:
            if not isinstance(v, GArray):
                raise TypeError(f"ARRAY values must be GArray, got {type(v).__name__}")
            return (pack("I", int(v.etype)) + pack(count, len(v.items))
                    + b"".join(value(v.etype, item) for item in v.items))
        raise ValueError(f"unknown GGUF value type {vtype!r}")

    out = bytearray(b"GGUF")
    out += pack("I", version) + pack(count, len(tensors)) + pack(count, len(kvs))
    for kv in kvs:
        out += gstr(kv.key) + pack("I", int(kv.vtype)) + value(kv.vtype, kv.value)
    blobs: list[bytes] = []
    offset = 0
    for t in tensors:
        ne = t.ne
        out += gstr(t.name) + pack("I", len(ne))
        out += b"".join(pack(count, d) for d in ne)
        out += pack("I", int(t.type)) + pack("Q", offset)
        blob = _tensor_bytes(t, e)
        blobs.append(blob)
        offset += _pad(len(blob), alignment)
    out += bytes(_pad(len(out), alignment) - len(out))
    for blob in blobs:
        out += blob + bytes(_pad(len(blob), alignment) - len(blob))
    path = Path(path)
    path.write_bytes(bytes(out))
    return path


def _pad(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def _tensor_bytes(t: TensorSpec, e: str) -> bytes:
    if t.type in _PLAIN:
        return np.ascontiguousarray(t.data, dtype=np.dtype(_PLAIN[t.type]).newbyteorder(e)).tobytes()
    return np.ascontiguousarray(t.data, dtype=np.uint8).tobytes()


# ---------------------------------------------------------------------------- content

def value_type_kvs() -> list[KV]:
    """One KV per value type and one array per element type, edge values included.

    Every float is exactly representable in its type, so readers can compare with ==.
    """
    nested = GArray(V.ARRAY, (GArray(V.INT32, (1, -2, 3)), GArray(V.INT32, (4,)),
                              GArray(V.INT32, (-5, 6))))
    nested_str = GArray(V.ARRAY, (GArray(V.STRING, ("a", "bé")), GArray(V.STRING, ("",))))
    deep = GArray(V.ARRAY, (GArray(V.ARRAY, (GArray(V.FLOAT32, (0.5, -1.25)),)),))
    return [
        KV("general.name", V.STRING, "All Value Types"),
        KV("test.u8", V.UINT8, 255),
        KV("test.i8", V.INT8, -128),
        KV("test.u16", V.UINT16, 65535),
        KV("test.i16", V.INT16, -32768),
        KV("test.u32", V.UINT32, 4294967295),
        KV("test.i32", V.INT32, -2147483648),
        KV("test.f32", V.FLOAT32, -1.5),
        KV("test.f32_max", V.FLOAT32, 3.4028234663852886e38),
        KV("test.bool_true", V.BOOL, True),
        KV("test.bool_false", V.BOOL, False),
        KV("test.string", V.STRING, "hello"),
        KV("test.string_utf8", V.STRING, "héllo wörld — 日本語 🦙"),
        KV("test.string_empty", V.STRING, ""),
        KV("test.u64", V.UINT64, 18446744073709551615),
        KV("test.i64", V.INT64, -9223372036854775808),
        KV("test.f64", V.FLOAT64, math.pi),
        KV("test.f64_tiny", V.FLOAT64, 5e-324),
        KV("test.arr_u8", V.ARRAY, GArray(V.UINT8, (0, 1, 254, 255))),
        KV("test.arr_i8", V.ARRAY, GArray(V.INT8, (-128, -1, 0, 127))),
        KV("test.arr_u16", V.ARRAY, GArray(V.UINT16, (0, 1, 65535))),
        KV("test.arr_i16", V.ARRAY, GArray(V.INT16, (-32768, 0, 32767))),
        KV("test.arr_u32", V.ARRAY, GArray(V.UINT32, (0, 7, 4294967295))),
        KV("test.arr_i32", V.ARRAY, GArray(V.INT32, (-2147483648, 0, 2147483647))),
        KV("test.arr_f32", V.ARRAY, GArray(V.FLOAT32, (0.0, -0.0, 1.5, -2.25, 0.125))),
        KV("test.arr_bool", V.ARRAY, GArray(V.BOOL, (True, False, True))),
        KV("test.arr_str", V.ARRAY, GArray(V.STRING, ("a", "", "ünïcödé", "🦙🦙", "x" * 300))),
        KV("test.arr_u64", V.ARRAY, GArray(V.UINT64, (0, 18446744073709551615))),
        KV("test.arr_i64", V.ARRAY, GArray(V.INT64, (-9223372036854775808, 9223372036854775807))),
        KV("test.arr_f64", V.ARRAY, GArray(V.FLOAT64, (math.e, -1e300, 5e-324))),
        KV("test.arr_nested", V.ARRAY, nested),
        KV("test.arr_nested_str", V.ARRAY, nested_str),
        KV("test.arr_nested_deep", V.ARRAY, deep),
        KV("test.κλειδί.ключ", V.STRING, "non-ASCII key"),
    ]


def quantized_tensor(name: str, qtype: GGMLQuantizationType, ne: Sequence[int], rng: np.random.Generator) -> TensorSpec:
    """A tensor of ``qtype`` with shape ``ne`` (ggml order).

    Plain types hold N(0, 1) values; types gguf-py can quantize hold N(0, 1) values
    quantized by ``gguf.quants.quantize``; the rest hold random bytes of the right size
    (so their f16 scale fields may be NaN/Inf: a dequantizer must still agree with gguf-py).
    """
    np_shape = tuple(reversed(tuple(ne)))
    if qtype in _PLAIN:
        dt = np.dtype(_PLAIN[qtype])
        if dt.kind == "f":
            data = rng.standard_normal(np_shape).astype(dt)
        else:
            info = np.iinfo(dt)
            data = rng.integers(info.min, info.max, size=np_shape, dtype=dt, endpoint=True)
        return TensorSpec(name, qtype, data)
    block, type_size = GGML_QUANT_SIZES[qtype]
    if np_shape[-1] % block:
        raise ValueError(f"{name}: ne[0]={np_shape[-1]} is not a multiple of {qtype.name}'s block {block}")
    try:
        data = quantize(rng.standard_normal(np_shape).astype(np.float32), qtype)
    except NotImplementedError:
        byte_shape = (*np_shape[:-1], np_shape[-1] // block * type_size)
        data = rng.integers(0, 256, size=byte_shape, dtype=np.uint8)
    return TensorSpec(name, qtype, np.ascontiguousarray(data.view(np.uint8)))


# gguf-py 0.19.0 still sizes Q8_1 blocks at 40 bytes (f32 d, f32 s); ggml has used 36
# (f16 d, f16 s) since 2024-03-12 (../shared/docs/ggml-types.md).  Q8_1 never appears
# in real files, so test files leave it out rather than carry a disputed size.
_ZOO_SKIP = {T.Q8_1}


def tensor_zoo(rng: np.random.Generator) -> list[TensorSpec]:
    """One tensor per ggml type gguf-py knows a size for (but Q8_1), in 1 to 4 dimensions."""
    shapes = [(256, 2), (256,), (512, 3, 2), (256, 1, 2, 2)]
    out = []
    for i, qtype in enumerate(t for t in T if t in GGML_QUANT_SIZES and t not in _ZOO_SKIP):
        block = GGML_QUANT_SIZES[qtype][0]
        ne = shapes[i % len(shapes)]
        if ne[0] % block:
            ne = (block * 2, *ne[1:])
        out.append(quantized_tensor(f"zoo.{qtype.name.lower()}.weight", qtype, ne, rng))
    return out


# ---------------------------------------------------------------------------- recipes

def all_value_types(path: str | Path, *, endian: str = "little") -> Path:
    """Every metadata value type and array element type, plus one small F32 tensor."""
    rng = np.random.default_rng(1)
    return write_gguf_py(path, kvs=value_type_kvs(), endian=endian,
                         tensors=[quantized_tensor("one.weight", T.F32, (8, 2), rng)])


def many_tensors(path: str | Path, *, endian: str = "little") -> Path:
    """Tensors of every ggml type gguf-py knows (F32, F16, BF16, Q4_0 ... IQ*, TQ*, MXFP4, I8 ... F64)."""
    rng = np.random.default_rng(2)
    return write_gguf_py(path, kvs=[KV("general.name", V.STRING, "Many Tensors")],
                         tensors=tensor_zoo(rng), endian=endian)


def custom_alignment(path: str | Path, *, alignment: int = 64, endian: str = "little") -> Path:
    """``general.alignment`` = 64 with tensors whose sizes are not multiples of it."""
    rng = np.random.default_rng(3)
    tensors = [quantized_tensor("odd.f32", T.F32, (5,), rng),           # 20 bytes
               quantized_tensor("odd.q8_0", T.Q8_0, (32, 3), rng),      # 102 bytes
               quantized_tensor("odd.f16", T.F16, (7, 3), rng),         # 42 bytes
               quantized_tensor("odd.i8", T.I8, (3,), rng)]             # 3 bytes
    return write_gguf_py(path, kvs=[KV("general.name", V.STRING, "Custom Alignment")],
                         tensors=tensors, alignment=alignment, endian=endian)


def big_endian(path: str | Path) -> Path:
    """A big-endian v3 file: every value type and plain plus quantized tensors."""
    rng = np.random.default_rng(4)
    tensors = [quantized_tensor(f"be.{t.name.lower()}", t, (64, 2), rng)
               for t in (T.F32, T.F16, T.F64, T.I8, T.I16, T.I32, T.I64, T.Q8_0, T.BF16)]
    return write_gguf_py(path, kvs=value_type_kvs(), tensors=tensors, endian="big")


def empty_values(path: str | Path, *, version: int = 3) -> Path:
    """Empty arrays (flat and nested) and empty strings: gguf-py refuses to write these."""
    kvs = [KV("general.architecture", V.STRING, "llama"),
           KV("test.string_empty", V.STRING, ""),
           KV("test.arr_empty_u32", V.ARRAY, GArray(V.UINT32, ())),
           KV("test.arr_empty_str", V.ARRAY, GArray(V.STRING, ())),
           KV("test.arr_of_empty", V.ARRAY, GArray(V.ARRAY, (GArray(V.INT32, ()), GArray(V.INT32, (1,))))),
           KV("test.arr_str_empties", V.ARRAY, GArray(V.STRING, ("", "", "x")))]
    rng = np.random.default_rng(5)
    return write_gguf_v1_v2(path, version, kvs, [quantized_tensor("one.weight", T.F32, (4,), rng)])


def _legacy_content(rng: np.random.Generator) -> tuple[list[KV], list[TensorSpec]]:
    kvs = [KV("general.architecture", V.STRING, "llama"),
           KV("general.name", V.STRING, "Legacy"),
           KV("llama.block_count", V.UINT32, 1),
           KV("test.f32", V.FLOAT32, 0.5),
           KV("test.bool", V.BOOL, True),
           KV("test.arr_str", V.ARRAY, GArray(V.STRING, ("<s>", "</s>", "é"))),
           KV("test.arr_i16", V.ARRAY, GArray(V.INT16, (-1, 2, -3)))]
    tensors = [quantized_tensor("token_embd.weight", T.F16, (32, 4), rng),
               quantized_tensor("blk.0.attn_q.weight", T.Q4_0, (32, 2), rng),
               quantized_tensor("output_norm.weight", T.F32, (32,), rng)]
    return kvs, tensors


def legacy_v1(path: str | Path) -> Path:
    """A GGUF v1 file (u32 counts and lengths; only value types 0-9)."""
    return write_gguf_v1_v2(path, 1, *_legacy_content(np.random.default_rng(6)))


def legacy_v2(path: str | Path) -> Path:
    """A GGUF v2 file (same content as ``legacy_v1``, u64 counts) plus a u64 value."""
    kvs, tensors = _legacy_content(np.random.default_rng(6))
    return write_gguf_v1_v2(path, 2, [*kvs, KV("test.u64", V.UINT64, 2**40)], tensors)


RECIPES = {f.__name__: f for f in (all_value_types, many_tensors, custom_alignment, big_endian,
                                   empty_values, legacy_v1, legacy_v2)}
