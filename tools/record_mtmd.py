"""Tiny multimodal projectors (mmproj), and what llama.cpp's libmtmd says of each.

Why: the projector rules (GG1120-GG1123) were written from tools/mtmd/clip.cpp's source
only.  The honest check is the real reader: ``mtmd_init_from_file(mmproj, text_model,
params)`` loads the projector with clip.cpp, runs its warmup graph and compares the
projector's output width with the text model's.  ``cases()`` makes, deterministically
(gguf-py's GGUFWriter, fixed values), projectors of four common families - LLaVA's ``mlp``,
``gemma3``, ``qwen2vl_merger`` and ``idefics3`` (SmolVLM) - valid and broken one way each
(no encoder flag, an unknown projector type, a width that does not fit the text model, a
missing required key or tensor, the per-modality projector-type key, a tensor clip.cpp
dereferences without requiring it), plus the tiny text model they are given with
(``tools.loader_corpus.base_model("llama")``).

``python -m tools.record_mtmd record --lib DIR --binding DIR`` (DIR: a llama.cpp build's
library folder holding libllama and libmtmd, and the llama-cpp-python source tree of the
same llama.cpp) runs each case in a child process and writes fixtures/mtmd/verdicts.json:
``loads``, ``refuses`` (mtmd_init_from_file returned NULL) or ``crash`` (the child died on a
signal), with llama.cpp's first specific error line (a crash: its GGML_ASSERT or last line).  CI only reads the record:
tests/rules/test_mtmd_agreement.py regenerates the files and compares ggscope's verdict.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFWriter

from tools.loader_corpus import _vocab, base_model, write as write_model

VERDICTS = Path(__file__).resolve().parent.parent / "fixtures" / "mtmd" / "verdicts.json"
TEXT_EMBD = 64            # tools.loader_corpus's tiny models' n_embd
V_EMBD, V_FF, V_HEAD, IMAGE, PATCH = 32, 64, 2, 224, 14
N_POS = (IMAGE // PATCH) ** 2
FAMILIES = ("mlp", "gemma3", "qwen2vl_merger", "idefics3")


def _vision_tensors(kind: str = "mlp") -> dict[str, np.ndarray]:
    """The ViT part clip.cpp requires of every standard projector (numpy shapes: outermost first)."""
    rng = np.random.default_rng(7)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)
    t = {"v.patch_embd.weight": w(V_EMBD, 3, PATCH, PATCH), "v.patch_embd.bias": w(V_EMBD),
         "v.position_embd.weight": w(N_POS, V_EMBD),
         "v.post_ln.weight": np.ones(V_EMBD, np.float32), "v.post_ln.bias": w(V_EMBD)}
    if kind == "qwen2vl_merger":    # qwen2vl.cpp asserts no patch bias; its positions are M-RoPE, no table
        del t["v.patch_embd.bias"], t["v.position_embd.weight"]
        t["v.patch_embd.weight.1"] = w(V_EMBD, 3, PATCH, PATCH)     # the second temporal slice of its 3-D conv
    for p in ("attn_q", "attn_k", "attn_v", "attn_out"):
        t[f"v.blk.0.{p}.weight"], t[f"v.blk.0.{p}.bias"] = w(V_EMBD, V_EMBD), w(V_EMBD)
    for p in ("ln1", "ln2"):
        t[f"v.blk.0.{p}.weight"], t[f"v.blk.0.{p}.bias"] = np.ones(V_EMBD, np.float32), w(V_EMBD)
    t["v.blk.0.ffn_up.weight"], t["v.blk.0.ffn_up.bias"] = w(V_FF, V_EMBD), w(V_FF)
    t["v.blk.0.ffn_down.weight"], t["v.blk.0.ffn_down.bias"] = w(V_EMBD, V_FF), w(V_EMBD)
    return t


def _projector(kind: str, out_embd: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    if kind == "mlp":       # LLaVA: mm.0 (vision -> text), GELU, mm.2 (text -> text)
        return {"mm.0.weight": (rng.standard_normal((out_embd, V_EMBD)) * 0.02).astype(np.float32),
                "mm.0.bias": np.zeros(out_embd, np.float32),
                "mm.2.weight": (rng.standard_normal((out_embd, out_embd)) * 0.02).astype(np.float32),
                "mm.2.bias": np.zeros(out_embd, np.float32)}
    if kind == "gemma3":    # mm.input_projection.weight ne = [text n_embd, vision n_embd]
        return {"mm.input_projection.weight": (rng.standard_normal((V_EMBD, out_embd)) * 0.02).astype(np.float32),
                "mm.soft_emb_norm.weight": np.ones(V_EMBD, np.float32)}
    if kind == "qwen2vl_merger":    # 2x2 patches merged: mm.0 (4 V -> 4 V), GELU, mm.2 (4 V -> text)
        return {"mm.0.weight": (rng.standard_normal((4 * V_EMBD, 4 * V_EMBD)) * 0.02).astype(np.float32),
                "mm.0.bias": np.zeros(4 * V_EMBD, np.float32),
                "mm.2.weight": (rng.standard_normal((out_embd, 4 * V_EMBD)) * 0.02).astype(np.float32),
                "mm.2.bias": np.zeros(out_embd, np.float32)}
    if kind == "idefics3":          # pixel shuffle by the scale factor (2 here: 4 V wide), then mm.model.fc
        return {"mm.model.fc.weight": (rng.standard_normal((out_embd, 4 * V_EMBD)) * 0.02).astype(np.float32)}
    raise ValueError(kind)


def _keys(kind: str) -> dict[str, tuple[object, str]]:
    extra = {"clip.vision.projector.scale_factor": (2, "u32")} if kind == "idefics3" else {}   # clip.cpp asserts > 1
    return {**extra, "general.architecture": ("clip", "str"), "clip.has_vision_encoder": (True, "bool"),
            "clip.projector_type": (kind, "str"), "clip.use_gelu": (True, "bool"),
            "clip.vision.embedding_length": (V_EMBD, "u32"), "clip.vision.feed_forward_length": (V_FF, "u32"),
            "clip.vision.attention.head_count": (V_HEAD, "u32"), "clip.vision.block_count": (1, "u32"),
            "clip.vision.projection_dim": (TEXT_EMBD, "u32"),
            "clip.vision.attention.layer_norm_epsilon": (1e-6, "f32"),
            "clip.vision.image_size": (IMAGE, "u32"), "clip.vision.patch_size": (PATCH, "u32"),
            "clip.vision.image_mean": ([0.5, 0.5, 0.5], "f32[]"), "clip.vision.image_std": ([0.5, 0.5, 0.5], "f32[]")}


def write_projector(path: Path, keys: dict, tensors: dict[str, np.ndarray]) -> Path:
    w = GGUFWriter(str(path), arch="clip", use_temp_file=False)
    # GGUFWriter writes general.architecture itself; the case's value (if any) replaces it below
    w.kv_data[0].pop("general.architecture", None)
    for k, (v, t) in keys.items():
        {"str": w.add_string, "bool": w.add_bool, "u32": w.add_uint32, "f32": w.add_float32,
         "f32[]": w.add_array}[t](k, v)
    for name, arr in tensors.items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def cases() -> list[dict]:
    """Each case: name, what is changed, keys and tensors of the projector, and what it checks."""
    out = []
    for kind in FAMILIES:
        keys, ts = _keys(kind), {**_vision_tensors(kind), **_projector(kind, TEXT_EMBD)}
        out.append({"name": f"{kind}.valid", "keys": keys, "tensors": ts})
        out.append({"name": f"{kind}.width-mismatch", "keys": keys,
                    "tensors": {**_vision_tensors(kind), **_projector(kind, TEXT_EMBD // 2 + 16)}})
        out.append({"name": f"{kind}.unknown-type", "keys": {**keys, "clip.projector_type": ("holdout", "str")},
                    "tensors": ts})
        out.append({"name": f"{kind}.no-encoder",
                    "keys": {k: v for k, v in keys.items() if k != "clip.has_vision_encoder"}, "tensors": ts})
        out.append({"name": f"{kind}.missing-block-count",
                    "keys": {k: v for k, v in keys.items() if k != "clip.vision.block_count"}, "tensors": ts})
        out.append({"name": f"{kind}.missing-attn-out",
                    "keys": keys, "tensors": {k: v for k, v in ts.items() if k != "v.blk.0.attn_out.weight"}})
        vkeys = {k: v for k, v in keys.items() if k != "clip.projector_type"}
        out.append({"name": f"{kind}.vision-projector-key",
                    "keys": {**vkeys, "clip.vision.projector_type": (kind, "str")}, "tensors": ts})
    q = {**_vision_tensors("qwen2vl_merger"), **_projector("qwen2vl_merger", TEXT_EMBD)}
    out.append({"name": "qwen2vl_merger.missing-patch-embd-1", "keys": _keys("qwen2vl_merger"),
                "tensors": {k: v for k, v in q.items() if k != "v.patch_embd.weight.1"}})
    out.append({"name": "mlp.missing-projection", "keys": _keys("mlp"),
                "tensors": {k: v for k, v in {**_vision_tensors(), **_projector("mlp", TEXT_EMBD)}.items()
                            if not k.startswith("mm.")}})
    return out


def write_all(folder: Path) -> tuple[Path, list[tuple[str, Path]]]:
    """The text model and every projector, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    md, ts = base_model("llama")
    _vocab(md)
    text = folder / "text-llama.gguf"
    write_model(text, md, ts, seed=1)
    return text, [(c["name"], write_projector(folder / f"mmproj-{c['name']}.gguf", c["keys"], c["tensors"]))
                  for c in cases()]


_CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import llama_cpp
import llama_cpp.mtmd_cpp as m
llama_cpp.llama_backend_init()
mp = llama_cpp.llama_model_default_params()
model = llama_cpp.llama_model_load_from_file(sys.argv[2].encode(), mp)
if not model:
    print("VERDICT text-model-failed"); sys.exit(0)
cp = m.mtmd_context_params_default()
cp.use_gpu = False
cp.n_threads = 1
ctx = m.mtmd_init_from_file(sys.argv[3].encode(), model, cp)
print("VERDICT " + ("loads" if ctx else "refuses"), flush=True)
"""


def oracle(text: Path, mmproj: Path, lib: str, binding: str) -> dict:
    env = {**os.environ, "LLAMA_CPP_LIB_PATH": lib, "MTMD_CPP_LIB": lib}
    r = subprocess.run([sys.executable, "-c", _CHILD, binding, str(text), str(mmproj)], env=env,
                       capture_output=True, text=True, timeout=300)
    verdict = next((ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("VERDICT ")), None)
    if verdict is None:
        verdict = "crash" if r.returncode < 0 or r.returncode > 128 else "refuses"
    errors = [_public(ln, mmproj) for ln in r.stderr.splitlines()
              if ln.startswith(("clip", "mtmd", "alloc_compute_meta", "warmup")) and
              any(w in ln for w in ("error", "failed", "unknown", "mismatch", "unable", "exception"))
              or "GGML_ASSERT" in ln or "what():" in ln]
    # clip_init's line carries clip.cpp's own message; mtmd_init_from_file's generic line follows it
    specific = [e for e in errors if not e.startswith("mtmd_init_from_file: error: Failed to load CLIP")]
    if verdict == "crash":
        last = ([ln for ln in r.stderr.splitlines() if "GGML_ASSERT" in ln or "GGML_ABORT" in ln][:1]
                or [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith(("#", " "))][-1:] or [""])
        sig = -r.returncode if r.returncode < 0 else r.returncode - 128
        return {"verdict": verdict, "error": f"killed by signal {sig} after: {_public(last[0], mmproj)}"}
    return {"verdict": verdict, "error": (specific or errors or [""])[0] if verdict != "loads" else ""}


def _public(line: str, path: Path) -> str:
    """A log line without this machine's paths: the file is named by its base name."""
    line = line.strip().replace(str(path), path.name).replace(str(path.parent) + "/", "")
    return re.sub(r"\S*?/(?=(?:tools|src|ggml|common)/\S+:\d+:)", "", line)      # llama.cpp's own file:line


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.record_mtmd", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("record", help="run libmtmd on every case and write fixtures/mtmd/verdicts.json")
    rp.add_argument("--lib", required=True, help="folder of libllama and libmtmd (a llama.cpp build's bin)")
    rp.add_argument("--binding", required=True, help="llama-cpp-python source tree for the same llama.cpp")
    rp.add_argument("--work", type=Path, required=True, help="folder to write the files into")
    args = ap.parse_args(argv)
    text, projectors = write_all(args.work)
    out = {}
    for name, path in projectors:
        out[name] = {**oracle(text, path, args.lib, args.binding), "sha256": sha256(path)}
        print(f"{name}: {out[name]['verdict']} {out[name]['error']}", file=sys.stderr)
    VERDICTS.parent.mkdir(parents=True, exist_ok=True)
    oracle = ("mtmd_init_from_file (libmtmd of llama.cpp 0c1e570, as vendored in llama-cpp-python 0.3.36) "
              "with the tiny llama text model")
    VERDICTS.write_text(json.dumps({"text_model_sha256": sha256(text), "oracle": oracle, "cases": out},
                                   indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
