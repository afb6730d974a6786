"""What ``ggscope diff`` tells a reader: the summary first, names instead of numbers,
"moved" tensors, legacy header words under their GGUF keys, and a table that fits 80
columns.  Oracles: gguf-py's GGUFReader and constants (file types, byte sizes, data
offsets) and the real legacy files in ../shared/fixtures."""
from __future__ import annotations

import io

import numpy as np
import pytest
from gguf import GGUFReader, LlamaFileType

import ggscope
from ggscope.diff.compare import diff_files, diff_metadata
from ggscope.report import diff as render
from ggscope.report import diff_rich
from gguf_writers import KV, T, TensorSpec, V, write_gguf_py

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

Q8 = FIXTURES / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
Q4 = FIXTURES / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"


@pytest.fixture(scope="module")
def q8_q4():
    if not (Q8.is_file() and Q4.is_file()):
        pytest.skip("run python fixtures/make_fixtures.py")
    return diff_files(ggscope.open(Q8), ggscope.open(Q4))


def _reader_facts(path):
    r = GGUFReader(path)
    nbytes = sum(int(t.n_bytes) for t in r.tensors)
    n = sum(int(t.n_elements) for t in r.tensors)
    ftype = int(r.fields["general.file_type"].parts[-1][0])
    return r, 8 * nbytes / n, LlamaFileType(ftype).name.removeprefix("MOSTLY_")


def test_summary_names_file_types_and_bits_per_weight(q8_q4):
    _, bpw_a, ft_a = _reader_facts(Q8)
    _, bpw_b, ft_b = _reader_facts(Q4)
    text = render.plain(q8_q4)
    head = text.split("~ general.file_type")[0]          # the summary comes before any change
    assert f"{bpw_a:.2f}" in head and f"{bpw_b:.2f}" in head
    assert "file type" in head and ft_a in head and ft_b in head
    codes = (int(GGUFReader(Q8).fields["general.file_type"].parts[-1][0]),
             int(GGUFReader(Q4).fields["general.file_type"].parts[-1][0]))
    assert f"general.file_type (uint32): {ft_a} ({codes[0]}) → {ft_b} ({codes[1]})" in text
    assert head.index("tensors:") < head.index("worst:")


def test_offset_only_changes_are_moved(q8_q4):
    ra, rb = GGUFReader(Q8), GGUFReader(Q4)
    tb = {t.name: t for t in rb.tensors}
    moved = {t.name for t in ra.tensors
             if t.tensor_type == tb[t.name].tensor_type and bytes(t.data.tobytes()) == bytes(tb[t.name].data.tobytes())
             and t.data_offset != tb[t.name].data_offset}
    assert moved                                  # the fixture pair has some (the F32 norms)
    shown = {t.name: render.display_status(t) for t in q8_q4.tensors}
    assert {n for n, s in shown.items() if s == "moved"} == moved
    assert f"{len(moved)} moved" in render.plain(q8_q4)
    assert "identical" not in render.counts_line(q8_q4)


@pytest.mark.parametrize("width", [80, 100])
def test_terminal_table_fits_and_keeps_names_whole(q8_q4, width):
    from rich.console import Console
    con = Console(width=width, file=io.StringIO(), color_system=None, highlight=False)
    for part in diff_rich.rich_renderables(q8_q4):
        con.print(part)
    out = con.file.getvalue()
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) <= width
    for t in GGUFReader(Q8).tensors:
        if render.display_status(next(d for d in q8_q4.tensors if d.name == t.name)) != "identical":
            assert any(t.name in ln for ln in lines), t.name       # never broken mid-name
    assert "rel rmse" in out and "cosine" in out and "Q8_0 → " in out


def test_legacy_header_words_compare_under_their_gguf_keys(tmp_path, shared_fixtures):
    legacy = shared_fixtures / "llama-legacy"
    ggmf, ggjt = legacy / "llama0L-ggmf-v1-f16.bin", legacy / "llama0L-ggjt-v1-f16-migrated.bin"
    if not (ggmf.is_file() and ggjt.is_file()):
        pytest.skip("legacy llama fixtures absent")
    same = diff_metadata(ggscope.open(ggmf), ggscope.open(ggjt))
    assert not same.added and not same.removed

    # A GGUF written with the keys llama.cpp's convert_llama_ggml_to_gguf.py gives a
    # GGJT header: embedding_length, block_count, head_count, rope.dimension_count
    # (n_embd / n_head), file_type; every value equal to the GGJT file's.
    tiny = legacy / "llama-tiny-ggjt-v1-f16.bin"
    j = ggscope.open(tiny)
    hp = {k.split(".", 1)[1]: v for k, v in j.metadata.items() if k.startswith("ggjt.")}
    conv = write_gguf_py(tmp_path / "conv.gguf", arch="llama", kvs=[
        KV("llama.embedding_length", V.UINT32, hp["n_embd"]), KV("llama.block_count", V.UINT32, hp["n_layer"]),
        KV("llama.attention.head_count", V.UINT32, hp["n_head"]),
        KV("llama.rope.dimension_count", V.UINT32, hp["n_embd"] // hp["n_head"]),
        KV("general.file_type", V.UINT32, hp["ftype"])],
        tensors=[TensorSpec("x", T.F32, np.zeros(4, np.float32))])
    d = diff_metadata(j, ggscope.open(conv))
    changed = {c.key for c in d.changed}
    removed = {e.key for e in d.removed}
    for key in ("llama.embedding_length", "llama.block_count", "llama.attention.head_count",
                "llama.rope.dimension_count", "general.file_type"):
        assert key not in changed and key not in removed, key
    assert not any(k.startswith("ggjt.n_embd") for k in removed | changed)


def test_json_carries_both_summaries(q8_q4):
    doc = render.as_json(q8_q4)
    for side, path in (("a", Q8), ("b", Q4)):
        r, bpw, ft = _reader_facts(path)
        s = doc["summary"][side]
        assert s["file_type"] == ft and s["bits_per_weight"] == pytest.approx(bpw)
        assert s["n_params"] == sum(int(t.n_elements) for t in r.tensors)
        assert sum(t["tensors"] for t in s["tensor_types"]) == len(r.tensors)
    shown = {t["name"]: t["shown_as"] for t in doc["tensors"]}
    assert {render.display_status(t) for t in q8_q4.tensors} == set(shown.values())


def test_legacy_tensors_pair_with_their_gguf_names(tmp_path, shared_fixtures):
    """A GGJT llama file against a GGUF whose tensors carry the names llama.cpp's
    converter gives them (blk.N.attn_q.weight for layers.N.attention.wq.weight): every
    tensor pairs up, none is added or removed."""
    tiny = shared_fixtures / "llama-legacy" / "llama-tiny-ggjt-v1-f16.bin"
    if not tiny.is_file():
        pytest.skip("legacy llama fixtures absent")
    legacy_to_gguf = {"tok_embeddings": "token_embd", "norm": "output_norm", "output": "output",
                      "attention_norm": "attn_norm", "attention.wq": "attn_q", "attention.wk": "attn_k",
                      "attention.wv": "attn_v", "attention.wo": "attn_output", "ffn_norm": "ffn_norm",
                      "feed_forward.w1": "ffn_gate", "feed_forward.w2": "ffn_down", "feed_forward.w3": "ffn_up"}
    j = ggscope.open(tiny)
    specs = []
    for t in j.tensors:
        stem = t.name.removesuffix(".weight")
        if stem.startswith("layers."):
            _, i, rest = stem.split(".", 2)
            name = f"blk.{i}.{legacy_to_gguf[rest]}.weight"
        else:
            name = f"{legacy_to_gguf[stem]}.weight"
        specs.append(TensorSpec(name, T.F32, np.zeros(t.np_shape, np.float32)))
    conv = write_gguf_py(tmp_path / "conv.gguf", tensors=specs)
    r = diff_files(j, ggscope.open(conv))
    statuses = {t.name: t.status for t in r.tensors}
    assert set(statuses) == {t.name for t in GGUFReader(conv).tensors}
    assert "added" not in statuses.values() and "removed" not in statuses.values()
