"""The bulk record scan (spec/records.py) against the element-by-element interpreter.

GGUF tensor infos are read by ``scan_records`` and their nodes made on demand; the same
file read with the record scan switched off (every ``TypeSpec.record`` cleared) must give
the same tensor list, the same nodes at the same paths and offsets, and, for every cut
of the file inside or after the tensor infos, the same damage: field path, offset and
reason.  Files: gguf-py (little- and big-endian v3) and the independent v1/v2 writer.
"""
from __future__ import annotations

import numpy as np
import pytest
from gguf_writers import KV, T, TensorSpec, V, write_gguf_py, write_gguf_v1_v2

from ggscope.ksy.node import find
from ggscope.source.mapped import ByteSource
from ggscope.ksy import parse_spec
from ggscope.ksy.loader import load_ksy_file, load_spec, spec_path
from ggscope.ksy.records import RecordArray
from ggscope.model.views import gguf as view

TENSORS = [TensorSpec("token_embd.weight", T.F32, np.arange(24, dtype=np.float32).reshape(3, 8)),
           TensorSpec("blk.0.attn_norm.weight", T.F32, np.ones(8, np.float32)),
           TensorSpec("blk.0.ffn.weight", T.F16, np.zeros((2, 3, 4), np.float16)),
           TensorSpec("ünïcode.weight", T.F32, np.ones((1, 1, 1, 2), np.float32))]


def _scalar_off(_spec):
    spec = load_ksy_file(spec_path("gguf"))          # a fresh copy, not the cached one

    def clear(t):
        t.record = None
        for sub in t.types.values():
            clear(sub)
    clear(spec.root)
    return spec


def _open(spec, data: bytes):
    src = ByteSource(data)
    res = parse_spec(spec, src)
    return view.build(res.root, src, "<t>", res.error)


def _files(tmp_path):
    kvs = [KV("general.name", V.STRING, "records")]
    yield write_gguf_py(tmp_path / "le.gguf", kvs=kvs, tensors=TENSORS).read_bytes()
    yield write_gguf_py(tmp_path / "be.gguf", kvs=kvs, tensors=TENSORS, endian="big").read_bytes()
    for v in (1, 2):
        yield write_gguf_v1_v2(tmp_path / f"v{v}.gguf", v, kvs, TENSORS).read_bytes()


def _facts(mf):
    d = mf.damage
    return ((d.path, d.start, d.error) if d is not None else None,
            [(t.name, t.shape, t.type, t.offset, t.nbytes, t.node_path) for t in mf.tensors])


def _nodes(mf, n):
    out = []
    for i in range(n):
        for sub in ("", "/name", "/name/len", "/name/data", "/n_dims", "/dims", "/dims[0]", "/type",
                    "/offset", "/nbytes", "/data"):
            node = find(mf.root, f"tensor_infos[{i}]{sub}")
            if node is None:
                out.append(None)
                continue
            v = node.value
            v = v.tolist() if hasattr(v, "tolist") else (bytes(v) if isinstance(v, memoryview) else v)
            out.append((node.path, node.ktype, node.start, node.end, v, node.error, node.enum,
                        [k.name for k in node.children]))
    return out


def test_scan_equals_interpreter_on_whole_files(tmp_path):
    fast, slow = load_spec("gguf"), _scalar_off(load_spec("gguf"))
    for data in _files(tmp_path):
        a, b = _open(fast, data), _open(slow, data)
        assert isinstance(a.root.child("tensor_infos").value, RecordArray)   # the scan ran
        assert not isinstance(b.root.child("tensor_infos").value, RecordArray)
        assert _facts(a) == _facts(b) and a.damage is None
        assert _nodes(a, len(TENSORS)) == _nodes(b, len(TENSORS))


def test_every_cut_reports_the_same_damage(tmp_path):
    fast, slow = load_spec("gguf"), _scalar_off(load_spec("gguf"))
    for data in _files(tmp_path):
        whole = _open(slow, data)
        infos = whole.root.child("tensor_infos")
        for cut in range(infos.start, infos.end + 40):
            a, b = _open(fast, data[:cut]), _open(slow, data[:cut])
            assert _facts(a) == _facts(b), cut
            assert a.damage is not None, cut
            assert _nodes(a, len(b.tensors) + 1) == _nodes(b, len(b.tensors) + 1), cut


@pytest.mark.parametrize("field,value", [("n_dims", 2**32 - 1), ("dims", 2**63), ("name", 2**40)])
def test_hostile_counts_inside_a_record(tmp_path, field, value):
    """A count the file cannot hold stops at the right field, as the interpreter does."""
    slow = _scalar_off(load_spec("gguf"))
    data = bytearray(write_gguf_py(tmp_path / "h.gguf", tensors=TENSORS).read_bytes())
    whole = _open(slow, bytes(data))
    at = find(whole.root, {"n_dims": "tensor_infos[2]/n_dims", "dims": "tensor_infos[2]/dims[0]",
                           "name": "tensor_infos[2]/name/len"}[field])
    width = at.end - at.start
    data[at.start:at.end] = value.to_bytes(width, "little")
    a, b = _open(load_spec("gguf"), bytes(data)), _open(slow, bytes(data))
    assert _facts(a) == _facts(b)
    assert _nodes(a, 4) == _nodes(b, 4)
