"""GG910 (issue 23 item 8): legacy tensors with two dimensions swapped - same byte size,
wrong shape - are refused by every real loader, so ggscope must refuse them too; every
real file the loaders accept still passes.

The seeds are the real files in ../shared/fixtures (written by the real converters and
quantizers, see each MANIFEST.md); the variants swap the two dimension words of one
tensor record in place, for the first tensor of every role (globals and each per-layer
name pattern) whose dimensions differ."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

import ggscope
from ggscope.facts.legacy_shapes import shape_mismatches
from ggscope.ksy.node import find
from ggscope.validate.runner import validate

DIRS = ("llama-legacy", "ggml-legacy", "rwkv", "chatglm")
# the real loaders refuse these seeds already (MANIFEST.md): not files that load
REFUSED = re.compile(r"h5conv|-v100-Q")
# rwkv.cpp v7 derives its head split from r_k ([head_size, head_count]); a transposed
# r_k is another head split, which the loader does not check
NOT_CHECKED = {"blocks.0.att.r_k"}
_LAYER = re.compile(r"(?<=[./]h)\d+(?=/)|(?<=\.)\d+(?=\.)")


def _seeds(shared_fixtures: Path) -> list[Path]:
    out = []
    for d in DIRS:
        for f in sorted((shared_fixtures / d).glob("*.bin")):
            if "logits" in f.name or REFUSED.search(f.name):
                continue
            out.append(f)
    if not out:
        pytest.skip(f"no legacy fixtures under {shared_fixtures}")
    return out


def _dims_node(mf, t):
    rec = find(mf.root, t.node_path)
    return next(c for c in rec.children if c.name in ("ne", "shape"))


def _swapped(data: bytes, mf, t) -> bytes:
    dims = list(_dims_node(mf, t).children)
    a, b = dims[0], dims[1]
    out = bytearray(data)
    out[a.start:a.end], out[b.start:b.end] = data[b.start:b.end], data[a.start:a.end]
    return bytes(out)


def _variants(mf):
    seen = set()
    for t in mf.tensors:
        role = _LAYER.sub("{i}", t.name, count=1)
        if len(t.shape) != 2 or t.shape[0] == t.shape[1] or role in seen or t.name in NOT_CHECKED:
            continue
        seen.add(role)
        yield t


def _findings(data: bytes, name: str, rules=None):
    found = validate(ggscope.open_bytes(data, name), rules)
    assert not [f for f in found if f.code == "GG000"], found
    return found


def _legacy_rules():
    from ggscope.rules import RULES
    return [r for r in RULES if r.family == "legacy"]


def _family(mf) -> tuple:
    """Seeds of one kind (same container and version, model type, record count) differ
    only in the tensor types: one of each is the representative sample."""
    md = mf.metadata
    return (mf.format, mf.version, md.get("rwkv_cpp.arch_version"), md.get("chatglm_cpp.model_type"),
            len(mf.tensors))


def _refused_variants(seeds: list[Path], one_per_family: bool) -> tuple[int, list]:
    legacy, families, n_variants, missed = _legacy_rules(), set(), 0, []
    for seed in seeds:
        data = seed.read_bytes()
        mf = ggscope.open_bytes(data, seed.name)
        if one_per_family:
            if _family(mf) in families:
                continue
            families.add(_family(mf))
        for t in _variants(mf):
            vmf = ggscope.open_bytes(_swapped(data, mf, t), seed.name)
            assert [list(x.shape) for x in vmf.tensors if x.name == t.name] == [list(t.shape[::-1])]
            found = validate(vmf, legacy)       # the family: the other rules see no shapes
            assert not [f for f in found if f.code == "GG000"], found
            codes = {f.code for f in found if f.severity.value == "error"}
            # rwkv.cpp's embedding check is GG908's; a quantized row that no longer holds
            # whole blocks is already damage; every other swap is GG910
            if not ({"GG910", "GG908"} & codes) and not (vmf.damage is not None and codes):
                missed.append((seed.name, t.name, sorted(codes)))
            n_variants += 1
    return n_variants, missed


def test_a_swapped_variant_of_every_kind_of_seed_is_refused(shared_fixtures):
    n_variants, missed = _refused_variants(_seeds(shared_fixtures), one_per_family=True)
    assert not missed, missed
    assert n_variants >= 80, n_variants


@pytest.mark.slow
def test_every_swapped_variant_of_every_seed_is_refused(shared_fixtures):
    """All 64 seeds that load, every role: 289 variants (275 of them accepted before GG910)."""
    seeds = _seeds(shared_fixtures)
    n_variants, missed = _refused_variants(seeds, one_per_family=False)
    assert not missed, missed
    assert len(seeds) >= 40 and n_variants >= 200, (len(seeds), n_variants)


def test_real_files_that_load_have_no_shape_finding(shared_fixtures):
    for seed in _seeds(shared_fixtures):
        mf = ggscope.open(str(seed))
        got = shape_mismatches(mf)
        assert got is not None and got[1] == [], (seed.name, got)
        assert not [f for f in validate(mf) if f.code == "GG910"], seed.name


def test_the_message_names_the_loader_and_the_expected_shape(shared_fixtures):
    seed = shared_fixtures / "llama-legacy" / "llama-tiny-ggjt-v1-q4_0.bin"
    if not seed.is_file():
        pytest.skip(f"{seed} missing")
    data = seed.read_bytes()
    mf = ggscope.open_bytes(data, seed.name)
    tok = mf.tensor("tok_embeddings.weight")
    found = [f for f in _findings(_swapped(data, mf, tok), seed.name) if f.code == "GG910"]
    assert len(found) == 1 and found[0].severity.value == "error"
    assert found[0].message == ("tensor 'tok_embeddings.weight' has shape [32, 128]; llama.cpp's legacy loader "
                                "expects [128, 32] (n_embd, n_vocab)")
    w1 = mf.tensor("layers.0.feed_forward.w1.weight")        # n_ff = 512 from n_embd 128 and n_mult 256
    found = [f.message for f in _findings(_swapped(data, mf, w1), seed.name) if f.code == "GG910"]
    assert found == ["tensor 'layers.0.feed_forward.w1.weight' has shape [512, 128]; llama.cpp's legacy "
                     "loader expects [128, 512] (n_embd, n_ff)"]


def test_a_header_size_changed_makes_every_tensor_of_it_wrong(shared_fixtures):
    """n_mult 256 -> 64 gives n_ff 384 (not the 512 of the tensors): the loader refuses w1/w2/w3."""
    seed = shared_fixtures / "llama-legacy" / "llama-tiny-ggjt-v1-f16.bin"
    if not seed.is_file():
        pytest.skip(f"{seed} missing")
    data = bytearray(seed.read_bytes())
    mf = ggscope.open_bytes(bytes(data), seed.name)
    node = find(mf.root, mf.metadata_nodes["ggjt.n_mult"])
    data[node.start:node.end] = struct.pack("<i", 64)
    found = [f.message for f in _findings(bytes(data), seed.name) if f.code == "GG910"]
    assert len(found) == 3 and all("(n_embd, n_ff)" in m or "(n_ff, n_embd)" in m for m in found), found
    assert all("384" in m for m in found)


@pytest.mark.parametrize("dtype, why", [(99, "config dtype 99 is not a ggml type"),
                                        (2**31 - 1, "is not a ggml type"),
                                        (8, "has type F16; chatglm.cpp expects Q8_0")])
def test_chatglm_config_dtype(shared_fixtures, dtype, why):
    seed = shared_fixtures / "chatglm" / "chatglm2-tiny-f86777c-f16.bin"
    if not seed.is_file():
        pytest.skip(f"{seed} missing")
    data = bytearray(seed.read_bytes())
    mf = ggscope.open_bytes(bytes(data), seed.name)
    node = find(mf.root, "config/dtype")
    assert struct.unpack_from("<i", data, node.start)[0] == 1
    data[node.start:node.end] = struct.pack("<i", dtype)
    found = [f for f in _findings(bytes(data), seed.name) if f.code == "GG910"]
    assert found and all(f.severity.value == "error" for f in found)
    assert any(why in f.message for f in found), [f.message for f in found]


def test_chatglm_vector_with_a_matrix_type_is_refused(shared_fixtures):
    seed = shared_fixtures / "chatglm" / "chatglm1-tiny-f86777c-f16.bin"
    if not seed.is_file():
        pytest.skip(f"{seed} missing")
    data = bytearray(seed.read_bytes())
    mf = ggscope.open_bytes(bytes(data), seed.name)
    norm = next(t for t in mf.tensors if t.name.endswith("final_layernorm.weight"))
    node = next(c for c in find(mf.root, norm.node_path).children if c.name == "dtype")
    data[node.start:node.end] = struct.pack("<i", 1)      # F16: half the bytes - the walk is damaged
    found = _findings(bytes(data), seed.name)
    assert any(f.severity.value == "error" for f in found)


def test_work_is_one_pass_over_the_records():
    """A GGJT-shaped file of many records costs one table lookup per record: the number of
    names looked up equals the number of tensors, however many layers the header claims."""
    from types import SimpleNamespace

    from ggscope.facts import legacy_shapes

    n = 50_000
    tensors = [SimpleNamespace(name=f"layers.{i}.attention.wq.weight", shape=(128, 128)) for i in range(n)]
    md = {"ggjt.n_embd": 128, "ggjt.n_vocab": 32, "ggjt.n_mult": 256, "ggjt.n_head": 1, "ggjt.n_layer": 2**31 - 1}
    mf = SimpleNamespace(format="ggjt", metadata=md, tensors=tensors, extra={})
    lookups = []

    class Counting(dict):
        def get(self, key, default=None):
            lookups.append(key)
            return super().get(key, default)
    loader, table, sym = legacy_shapes._symbols(mf, "llama", {t.name: t for t in tensors})
    orig = legacy_shapes._LLAMA_SHAPES
    try:
        legacy_shapes._LLAMA_SHAPES = Counting(orig)
        loader, bad = legacy_shapes.shape_mismatches(mf)
    finally:
        legacy_shapes._LLAMA_SHAPES = orig
    assert bad == [] and len(lookups) == n


def _shard(parts: int, e: int = 5120, v: int = 32000, ff: int = 13824, swap: str = ""):
    """The tensor records of part 0 of a 2023-03 multi-part LLaMA file (GGMF): 1-D tensors
    whole, tok_embeddings/wo/w2 split along ne[0], every other matrix along ne[1]
    (legacy-formats.md §1.2: migrate-ggml-2023-03-30-pr613.py, llama.cpp's loader)."""
    from types import SimpleNamespace
    shapes = {"tok_embeddings.weight": (e // parts, v), "norm.weight": (e,), "output.weight": (e, v // parts),
              "layers.0.attention.wq.weight": (e, e // parts), "layers.0.attention.wk.weight": (e, e // parts),
              "layers.0.attention.wv.weight": (e, e // parts), "layers.0.attention.wo.weight": (e // parts, e),
              "layers.0.attention_norm.weight": (e,), "layers.0.ffn_norm.weight": (e,),
              "layers.0.feed_forward.w1.weight": (e, ff // parts), "layers.0.feed_forward.w2.weight": (ff // parts, e),
              "layers.0.feed_forward.w3.weight": (e, ff // parts)}
    if swap:
        shapes[swap] = shapes[swap][::-1]
    md = {"ggmf.n_embd": e, "ggmf.n_vocab": v, "ggmf.n_mult": 256, "ggmf.n_head": 40, "ggmf.n_layer": 1}
    return SimpleNamespace(format="ggmf", metadata=md, extra={},
                           tensors=[SimpleNamespace(name=k, shape=s) for k, s in shapes.items()])


def test_multi_part_shards_have_their_split_shapes():
    """LLaMA-13B (n_embd 5120, n_ff 13824) was written as 2 parts; each part holds half of
    every matrix.  Part 0 passes; a swapped matrix in it does not."""
    assert shape_mismatches(_shard(2))[1] == []
    assert shape_mismatches(_shard(1))[1] == []
    bad = shape_mismatches(_shard(2, swap="layers.0.feed_forward.w2.weight"))[1]
    assert [(m.tensor.name, m.expected) for m in bad] == [("layers.0.feed_forward.w2.weight", (6912, 5120))]
    assert "split in 2 parts along ne[0]" in bad[0].meaning


def test_grouped_query_attention_of_ggjt_v3_70b():
    """LLaMA-2 70B in GGJT v3: n_embd 8192, n_head 64, 8 KV heads -> wk/wv [8192, 1024]
    (the loader's -gqa 8), n_mult 7168 -> n_ff 28672 (convert.py picked n_mult for it)."""
    from types import SimpleNamespace
    e, ff = 8192, 28672

    def mf(wk):
        shapes = {"layers.0.attention.wk.weight": wk, "layers.0.attention.wv.weight": (e, 1024),
                  "layers.0.feed_forward.w1.weight": (e, ff), "layers.0.feed_forward.w2.weight": (ff, e)}
        md = {"ggjt.n_embd": e, "ggjt.n_vocab": 32000, "ggjt.n_mult": 7168, "ggjt.n_head": 64, "ggjt.n_layer": 80}
        return SimpleNamespace(format="ggjt", metadata=md, extra={},
                               tensors=[SimpleNamespace(name=k, shape=s) for k, s in shapes.items()])
    assert shape_mismatches(mf((e, 1024)))[1] == []
    bad = shape_mismatches(mf((1024, e)))[1]
    assert {m.tensor.name for m in bad} == {"layers.0.attention.wk.weight", "layers.0.attention.wv.weight"}


def test_the_h5_converters_gpt2_file_is_refused_as_gpt2_main_refuses_it(shared_fixtures):
    """MANIFEST.md: gpt-2 `main` rejects convert-h5-to-ggml.py's output with "tensor
    'model/wpe' has wrong size" (wpe written as F16; the loader makes it F32), and its F32
    variant with "tensor 'model/h0/attn/c_attn/w' has wrong shape" (Conv1D [in][out])."""
    path = shared_fixtures / "ggml-legacy" / "gpt2-tiny-h5conv-f16.bin"
    if not path.is_file():
        pytest.skip(f"{path} missing")
    found = [f.message for f in validate(ggscope.open(str(path))) if f.code == "GG910"]
    assert found[0] == ("tensor 'model/wpe' has type F16; ggml's gpt-2 example loader creates it as F32 (the "
                        "header's weight type is F16) and refuses another size")
    assert found[1].startswith("tensor 'model/h0/attn/c_attn/w' has shape [192, 64]; ggml's gpt-2 example "
                               "loader expects [64, 192] (n_embd, 3 * n_embd)")
