"""Sidecar rules (GG1120-GG1122): projectors and LoRA adapters judged by the loader that reads them.

What llama_adapter_lora_init (src/llama-adapter.cpp) refuses was checked against the real
loader on the corpus of tools/loader_corpus.py (olmo2.lora*, fixtures/llama_loader_verdicts.json);
these tests pin the rules' messages and the ``validate --base`` option.
"""
from __future__ import annotations

import json

import numpy as np
from gguf_writers import KV, T, TensorSpec, V

from ggscope.cli import main

from _helpers import findings, gguf

E, R = 16, 4


def _m(name, ne0, ne1):
    return TensorSpec(name, T.F32, np.zeros((ne1, ne0), np.float32))


def _adapter(tmp_path, name="a.gguf", arch="olmo2", kvs=(), tensors=None, kind="lora"):
    kv = [KV("general.type", V.STRING, "adapter"), KV("adapter.type", V.STRING, kind),
          KV("adapter.lora.alpha", V.FLOAT32, 16.0), *kvs]
    ts = tensors if tensors is not None else [_m("blk.0.attn_q.weight.lora_a", E, R), _m("blk.0.attn_q.weight.lora_b", R, E)]
    return gguf(tmp_path, name, arch=arch, kvs=kv, tensors=ts)


def _base(tmp_path, q_out=E):
    return gguf(tmp_path, "base.gguf", arch="olmo2", kvs=[KV("olmo2.context_length", V.UINT32, 32)],
                tensors=[_m("blk.0.attn_q.weight", E, q_out)])


# what clip.cpp's load_hparams requires of every vision encoder (block_count 0: no layer tensors)
_VISION = [KV("clip.has_vision_encoder", V.BOOL, True)] + [
    KV(f"clip.vision.{k}", V.UINT32, v) for k, v in (("embedding_length", E), ("attention.head_count", 1),
                                                      ("feed_forward_length", E), ("block_count", 0),
                                                      ("projection_dim", E), ("image_size", 8), ("patch_size", 4))] + [
    KV("clip.vision.attention.layer_norm_epsilon", V.FLOAT32, 1e-6)]


def _errors(path, code):
    return [f.message for f in findings(path) if f.code == code and f.severity.value == "error"]


def test_an_adapter_is_not_judged_as_a_main_model(tmp_path):
    found = findings(_adapter(tmp_path))
    assert not [f for f in found if f.code.startswith("GG11") and f.severity.value == "error"], found
    assert any(f.code == "GG1120" for f in found)


def test_adapter_refusals_quote_llama_cpp(tmp_path):
    half = _adapter(tmp_path, "half.gguf", tensors=[_m("blk.0.attn_q.weight.lora_a", E, R)])
    assert _errors(half, "GG1122") == ["LoRA tensor pair for 'blk.0.attn_q.weight' is missing one component"]
    suffix = _adapter(tmp_path, "suffix.gguf", tensors=[_m("blk.0.attn_q.weight", E, R)])
    assert _errors(suffix, "GG1122") == ["LoRA tensor 'blk.0.attn_q.weight' has unexpected suffix"]
    kind = _adapter(tmp_path, "kind.gguf", kind="control_vector")
    assert _errors(kind, "GG1122") == ["expect adapter.type to be 'lora', but got: control_vector"]
    flipped = _adapter(tmp_path, "flip.gguf", tensors=[_m("blk.0.attn_q.weight.lora_a", R, E),
                                                        _m("blk.0.attn_q.weight.lora_b", R, E)])
    assert _errors(flipped, "GG1122") == ['lora_a tensor is not transposed (hint: adapter from "finetune" example '
                                          'is no longer supported)']


def test_validate_base_checks_the_adapter_against_its_model(tmp_path, capsys):
    adapter = _adapter(tmp_path)
    good = _base(tmp_path)
    assert main(["validate", "--select", "loader", "--base", str(good), str(adapter)]) == 0
    capsys.readouterr()
    other = _adapter(tmp_path, "other.gguf", arch="llama")
    assert main(["validate", "--select", "loader", "--format", "json", "--base", str(good), str(other)]) == 1
    assert [f["message"] for f in json.loads(capsys.readouterr().out) if f["code"] == "GG1122"] == \
        ["model arch and LoRA arch mismatch"]
    wide = gguf(tmp_path, "wide.gguf", arch="olmo2", tensors=[_m("blk.0.attn_q.weight", E, 2 * E)])
    assert main(["validate", "--select", "loader", "--format", "json", "--base", str(wide), str(adapter)]) == 1
    assert "has incorrect shape" in capsys.readouterr().out
    assert main(["validate", "--base", str(tmp_path / "absent.gguf"), str(adapter)]) == 2
    cut = tmp_path / "cut.gguf"                       # a damaged base: one line, no verdict against it
    cut.write_bytes(good.read_bytes()[:40])
    capsys.readouterr()
    assert main(["validate", "--base", str(cut), str(adapter)]) == 2
    err = capsys.readouterr().err
    assert "damaged gguf file: parsing stopped at offset" in err and "Traceback" not in err


def test_projector_needs_an_encoder_and_a_known_type(tmp_path):
    ts = [_m("v.patch_embd.weight", E, E), _m("mm.2.weight", E, E)]    # mlp: clip.cpp dereferences mm.2.weight
    good = gguf(tmp_path, "mmproj.gguf", arch="clip", tensors=ts,
                kvs=[*_VISION, KV("clip.projector_type", V.STRING, "mlp")])
    assert _errors(good, "GG1121") == [] and not _errors(good, "GG1107")
    bad = gguf(tmp_path, "bad.gguf", arch="clip", tensors=ts,
               kvs=[KV("clip.has_vision_encoder", V.BOOL, True), KV("clip.projector_type", V.STRING, "holdout")])
    assert _errors(bad, "GG1121") == ["clip_model_loader: unknown projector type: 'holdout'"]
    model = gguf(tmp_path, "model-as-clip.gguf", arch="clip", tensors=[_m("token_embd.weight", E, 8)])
    assert "CLIP cannot be used as main model" in _errors(model, "GG1121")[0]
    no_key = gguf(tmp_path, "no-key.gguf", arch="clip", tensors=ts,
                  kvs=[k for k in _VISION if k.key != "clip.vision.image_size"] + [KV("clip.projector_type", V.STRING, "mlp")])
    assert _errors(no_key, "GG1121") == ["clip_init: Key not found: clip.vision.image_size"]


def test_validate_base_checks_a_projector_against_its_model(tmp_path, capsys):
    proj = gguf(tmp_path, "mmproj.gguf", arch="clip", tensors=[_m("mm.0.weight", 8, E), _m("mm.2.weight", E, E)],
                kvs=[*_VISION, KV("clip.projector_type", V.STRING, "mlp")])
    fits = gguf(tmp_path, "fits.gguf", arch="olmo2", kvs=[KV("olmo2.embedding_length", V.UINT32, E)])
    assert main(["validate", "--select", "loader", "--base", str(fits), str(proj)]) == 0
    capsys.readouterr()
    other = gguf(tmp_path, "other.gguf", arch="olmo2", kvs=[KV("olmo2.embedding_length", V.UINT32, 2 * E)])
    assert main(["validate", "--select", "loader", "--format", "json", "--base", str(other), str(proj)]) == 1
    assert [f["message"] for f in json.loads(capsys.readouterr().out) if f["code"] == "GG1123"] == \
        [f"mismatch between text model (n_embd = {2 * E}) and mmproj (n_embd = {E})"]
