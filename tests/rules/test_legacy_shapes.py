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


def _findings(data: bytes, name: str):
    found = validate(ggscope.open_bytes(data, name))
    assert not [f for f in found if f.code == "GG000"], found
    return found


def test_every_swapped_variant_is_refused(shared_fixtures):
    n_variants, seeds = 0, _seeds(shared_fixtures)
    missed = []
    for seed in seeds:
        data = seed.read_bytes()
        mf = ggscope.open_bytes(data, seed.name)
        for t in _variants(mf):
            variant = _swapped(data, mf, t)
            vmf = ggscope.open_bytes(variant, seed.name)
            assert [list(x.shape) for x in vmf.tensors if x.name == t.name] == [list(t.shape[::-1])]
            found = _findings(variant, seed.name)
            codes = {f.code for f in found if f.severity.value == "error"}
            # rwkv.cpp's embedding check is GG908's; a quantized row that no longer holds
            # whole blocks is already damage; every other swap is GG910
            if not ({"GG910", "GG908"} & codes) and not (vmf.damage is not None and codes):
                missed.append((seed.name, t.name, sorted(codes)))
            n_variants += 1
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
