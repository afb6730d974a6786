"""The type table against independent sources: gguf-py 0.19.0's enum and size table,
the ggml oracle's quant-types.json (sizes ggml itself reported), and real legacy files
whose tensor data must add up exactly to the file size with the table's layouts."""
from __future__ import annotations

import json

import pytest

from ggscope.facts import ggml_types as G

gguf = pytest.importorskip("gguf")


def test_ids_are_dense_and_names_match_gguf_py():
    assert [t.id for t in G.TYPES] == list(range(43))
    for member in gguf.GGMLQuantizationType:
        t = G.type_by_id(member.value)
        assert t.name == member.name and not t.removed


def test_block_sizes_match_gguf_py():
    for qtype, (elems, nbytes) in gguf.GGML_QUANT_SIZES.items():
        t = G.type_by_id(qtype.value)
        if t.name == "Q8_1":      # gguf-py keeps the 2023-05 40-byte size (ggml-types.md §4.4)
            assert (elems, nbytes) == (32, 40) and t.block_bytes == 36
            continue
        assert (t.block_elems, t.block_bytes) == (elems, nbytes), t.name


def test_sizes_match_the_ggml_oracle(shared_fixtures):
    path = shared_fixtures / "ggml" / "quant-types.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    info = json.loads(path.read_text())
    for name, desc in info["types"].items():
        assert G.type_by_name(name).id == desc["id"]
    import ggscope
    f = ggscope.open(shared_fixtures / "ggml" / "quant-oracle.gguf")
    for t in f.tensors:
        assert G.tensor_nbytes(t.type, t.shape) == t.nbytes
        assert G.type_by_id(t.type_id).name == t.type


def test_lookups():
    assert G.type_by_name("q4_k") is G.type_by_name("Q4_K") is G.type_by_name("q4_K") is G.TYPES[12]
    assert G.type_by_name("q4_K").type_name == "q4_K"
    assert {t.id for t in G.TYPES if t.removed} == {4, 5, 31, 32, 33, 36, 37, 38}
    assert G.layout("q4_k").name == "Q4_K"
    assert all(name in G.LAYOUTS for name in (t.name for t in G.TYPES if not t.removed))
    with pytest.raises(ValueError):
        G.type_by_id(43)
    with pytest.raises(ValueError):
        G.type_by_name("Q4_9")
    assert G.tensor_nbytes("Q4_K", [512, 8]) == 2304
    assert G.tensor_nbytes("Q4_0_QNT0", [64, 256]) == 64 * 256 // 32 * 20
    with pytest.raises(ValueError, match="not a multiple"):
        G.tensor_nbytes("Q4_K", [100, 2])


def test_resolve_type():
    assert G.resolve_type("gguf", 3, 12) == ("Q4_K", "Q4_K")
    assert G.resolve_type("gguf", 3, 31) == ("Q4_0_4_4", "Q4_0_4_4")
    with pytest.raises(ValueError):
        G.resolve_type("gguf", 3, 4)
    assert G.resolve_type("ggjt", 1, 2) == ("Q4_0", "Q4_0_QNT0")
    assert G.resolve_type("ggjt", 1, 6) == ("Q5_0", "Q5_0_QNT0")
    assert G.resolve_type("ggjt", 1, 6, header_ftype=7) == ("Q8_0", "Q8_0_QNT0")
    assert G.resolve_type("ggjt", 2, 2) == ("Q4_0", "Q4_0_QNT1")
    assert G.resolve_type("ggjt", 3, 8) == ("Q8_0", "Q8_0")
    assert G.resolve_type("rwkv.cpp", 100, 4) == ("Q4_1_O", "Q4_1_O")
    assert G.resolve_type("rwkv.cpp", 101, 9) == ("Q8_0", "Q8_0")
    with pytest.raises(ValueError):
        G.resolve_type("rwkv.cpp", 101, 5)
    assert G.resolve_type("chatglm.cpp", None, 6) == ("Q5_0", "Q5_0")


@pytest.mark.parametrize("era,qntvr", [("2023-04", 0), ("2023-05-18-qnt1", 1), ("2023-05-26-qnt2", 2)])
def test_legacy_files_add_up_with_the_layout_sizes(shared_fixtures, era, qntvr):
    """Walk the gpt2-tiny records (fixtures/ggml-legacy/MANIFEST.md "File format") with
    only the table's sizes: every file must end exactly at EOF."""
    import struct
    folder = shared_fixtures / "ggml-legacy"
    files = sorted(folder.glob(f"gpt2-tiny-{era}-*.bin"))
    if not files:
        pytest.skip(f"no {era} files in {folder}")
    for path in files:
        b = path.read_bytes()
        ftype = struct.unpack_from("<i", b, 24)[0]
        p = 28
        (n_vocab,) = struct.unpack_from("<i", b, p)
        p += 4
        for _ in range(n_vocab):
            p += 4 + struct.unpack_from("<i", b, p)[0]
        while p < len(b):
            n_dims, name_len, code = struct.unpack_from("<3i", b, p)
            ne = struct.unpack_from(f"<{n_dims}i", b, p + 12)
            p += 12 + 4 * n_dims + name_len
            _, lay = G.resolve_type("ggml-example", qntvr, code, header_ftype=ftype)
            p += G.tensor_nbytes(lay, ne)
        assert p == len(b), path.name


def test_structured_scale_agrees_with_the_field_drawing():
    """Layout.scale is data; the drawing is for people - the two must say the same."""
    import re
    drawn = re.compile(r"(?:^|; )(\d+): (f16|f32) d(?:;|$)")
    for name, lay in G.LAYOUTS.items():
        m = drawn.search(lay.fields)
        want = (int(m.group(1)), m.group(2)) if m and lay.block_elems > 1 else None
        assert lay.scale == want, name


def test_rwkv100_layouts_are_their_upstream_twins():
    from ggscope.facts.layouts import RWKV100_SAME
    from ggscope.quant.historical import DEQUANTIZERS
    from ggscope.stats.fused_specs import SPECS
    for old, same in RWKV100_SAME.items():
        a, b = G.LAYOUTS[old], G.LAYOUTS[same]
        assert (a.block_elems, a.block_bytes, a.fields, a.scale, a.same_as) == \
            (b.block_elems, b.block_bytes, b.fields, b.scale, same)
        assert DEQUANTIZERS[old] is DEQUANTIZERS[same] and SPECS[old] == SPECS[same]
