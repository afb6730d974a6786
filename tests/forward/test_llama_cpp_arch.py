"""The transformer decoder against the logits the real llama.cpp computed.

Oracle: ../shared/fixtures/llama-cpp-arch (MANIFEST.md there): tiny random-weight GGUF
models of each architecture, in F32 and Q8_0, with llama.cpp's logits for a fixed token
sequence and for a test sentence, with its default F16 KV cache and with an F32 one,
and llama.cpp's tokenization of the sentence.

Tolerances are the MANIFEST's.  Against the F32-cache logits: 1e-5, or 1e-3 for the
GELU models (gemma2, gemma3, starcoder2, gpt2) -- the decoder rounds activations as
ggml-cpu does before a Q8_0 product and computes GELU through ggml's fp16 table, which
the MANIFEST says brings Q8_0 files to the F32 ones' agreement too; for the GELU models'
Q8_0 files one flipped rounding of an activation block costs ~3e-3 (MANIFEST, seen on
gpt2), so 1e-2 there.  Against the default F16-cache logits (which the decoder does not
imitate unless asked): 2e-3 for F32 files, 5e-2 for Q8_0; asked to keep its cache in F16
as llama.cpp does (``kv_f16``), the decoder must come 4-5× closer to those than that
(the MANIFEST: imitating the F16 rounding of q, k, v and the probabilities brings most
files to ~1e-7; an occasional rounding flip costs ~1e-4 on F32 files, ~3e-3 on Q8_0).  The mistakes the MANIFEST lists (wrong
rope pairing, no sliding window, no soft-cap, gate/up swapped, no top-k renormalisation,
softmax for sigmoid routing) move the logits by 2.7e-3 .. 0.56, far past the F32-cache
bounds.  Each sequence runs twice: all tokens at once, and one token at a time through
the key/value cache (``ggscope run --generate``'s path), which must agree with llama.cpp
as well.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import ggscope
from ggscope.forward import architecture, module_for
from ggscope.model.tokenizer import load as load_tokenizer

from forward_logits_check import F32KV_TOL, assert_logits_match

GELU = {"gemma2", "gemma3", "starcoder2", "gpt2"}
ARCHS = ["llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "starcoder2", "gpt2",
         "deepseek2"]


@pytest.fixture(scope="module")
def arch_dir(shared_fixtures):
    d = shared_fixtures / "llama-cpp-arch"
    if not (d / "fixtures.json").is_file():
        pytest.skip(f"{d} has no fixtures.json")
    return d


@pytest.fixture(scope="module")
def manifest(arch_dir):
    return json.loads((arch_dir / "fixtures.json").read_text()), \
        json.loads((arch_dir / "tokenization.json").read_text())


_loaded: dict = {}


def _model(arch_dir, manifest, arch: str, enc: str):
    fixtures, _ = manifest
    stem = fixtures["models"][arch][enc]["file"].removesuffix(".gguf")
    if stem not in _loaded:
        mf = ggscope.open(arch_dir / f"{stem}.gguf")
        mod = module_for(mf)
        _loaded.clear()                      # one model in memory at a time
        _loaded[stem] = (mf, mod, mod.load(mf))
    return stem, _loaded[stem]


@pytest.mark.parametrize("enc", ["F32", "Q8_0"])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seq", ["fixed", "text"])
def test_logits_match_llama_cpp(arch_dir, manifest, arch, enc, seq):
    fixtures, tokenization = manifest
    stem, (mf, mod, w) = _model(arch_dir, manifest, arch, enc)
    assert architecture(mf) == arch
    if seq == "fixed":
        tokens = fixtures["tokens_seq"]
        f32kv, default = f"extra/logits-f32kv-{stem}.npy", f"logits-{stem}.npy"
    else:
        tokens = tokenization["files"][f"{stem}.gguf"]["tokens"]
        assert load_tokenizer(mf).encode(tokenization["text"]) == tokens
        f32kv, default = f"extra/logits-text-f32kv-{stem}.npy", f"extra/logits-text-{stem}.npy"
    ref, ref_default = np.load(arch_dir / f32kv), np.load(arch_dir / default)

    assert_logits_match(mod, w, tokens, ref, ref_default, enc, F32KV_TOL[enc, arch in GELU])


def test_deepseek2_file_before_mla_matches_llama_cpp(arch_dir, manifest, tmp_path):
    """DeepSeek files converted before llama.cpp's MLA (2025-04) carry one attn_kv_b
    [H·(nope + v), kv_lora_rank] instead of attn_k_b / attn_v_b and no *_mla widths;
    llama.cpp expands every head from it (deepseek2.cpp's non-MLA branch).  The same
    weights in that layout -- per head, rows k_b[h]ᵀ then v_b[h] -- must give the MLA
    file's logits."""
    from gguf_writers import KV, T, TensorSpec, V, write_gguf_py
    fixtures, _ = manifest
    keys = fixtures["models"]["deepseek2"]["gguf_keys"]
    src = ggscope.open(arch_dir / fixtures["models"]["deepseek2"]["F32"]["file"])
    head_v = keys["deepseek2.attention.value_length_mla"]
    kvs = []
    for k, v in keys.items():
        if k == "general.architecture" or k.endswith("_mla"):
            continue
        if k == "deepseek2.attention.key_length":
            v = keys["deepseek2.attention.key_length_mla"]
        elif k == "deepseek2.attention.value_length":
            v = head_v
        vt = (V.BOOL if isinstance(v, bool) else V.UINT32 if isinstance(v, int)
              else V.FLOAT32 if isinstance(v, float) else V.STRING)
        kvs.append(KV(k, vt, v))
    tensors = []
    for t in src.tensors:
        if t.name.endswith("attn_v_b.weight"):
            continue
        data = np.ascontiguousarray(t.dequantize())
        if t.name.endswith("attn_k_b.weight"):
            v_b = src.tensor(t.name.replace("attn_k_b", "attn_v_b")).dequantize()  # [H, v, R]
            kv_b = np.concatenate([data.transpose(0, 2, 1), v_b], axis=1)          # [H, nope + v, R]
            tensors.append(TensorSpec(t.name.replace("attn_k_b", "attn_kv_b"), T.F32,
                                      np.ascontiguousarray(kv_b.reshape(-1, kv_b.shape[-1]))))
        else:
            tensors.append(TensorSpec(t.name, T.F32, data))
    mf = ggscope.open(write_gguf_py(tmp_path / "ds2-kv_b.gguf", kvs=kvs, tensors=tensors, arch="deepseek2"))
    mod = module_for(mf)
    w = mod.load(mf)
    assert w.layers[0].wkv_b is not None and w.layers[0].wk_b is None
    stem = fixtures["models"]["deepseek2"]["F32"]["file"].removesuffix(".gguf")
    ref = np.load(arch_dir / f"extra/logits-f32kv-{stem}.npy")
    got, state = mod.forward(w, fixtures["tokens_seq"][:5], all_logits=True)
    rest, _ = mod.forward(w, fixtures["tokens_seq"][5:], state, all_logits=True)
    got = np.concatenate([got, rest])
    assert np.abs(got - ref).max() <= 1e-5
    assert (got.argmax(axis=1) == ref.argmax(axis=1)).all()


@pytest.mark.parametrize("enc", ["F32", "Q8_0"])
def test_streamed_embedding_in_small_chunks(arch_dir, manifest, monkeypatch, enc):
    """The tied embedding stays in the file and the output product decodes it in chunks:
    chunks of 7 rows (320 = 45 × 7 + 5, a ragged last one) give llama.cpp's logits too."""
    from ggscope.forward import matmul
    monkeypatch.setattr(matmul, "CHUNK_ELEMS", 7 * 64)
    fixtures, _ = manifest
    stem = fixtures["models"]["gemma2"][enc]["file"].removesuffix(".gguf")
    mf = ggscope.open(arch_dir / f"{stem}.gguf")
    mod = module_for(mf)
    w = mod.load(mf)
    assert w.output is w.embed and w.embed.chunk_rows == 7
    got, _ = mod.forward(w, fixtures["tokens_seq"], all_logits=True)
    ref = np.load(arch_dir / f"extra/logits-f32kv-{stem}.npy")
    assert np.abs(got - ref).max() <= F32KV_TOL[enc, True]
