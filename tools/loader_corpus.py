"""A corpus of tiny GGUF models for many architectures, and llama.cpp's verdict on each.

Why: the loader rules predict what llama.cpp's loader does; the only honest check is the
real loader.  ``write_corpus(dir)`` writes, deterministically (fixed seeds, gguf-py's
GGUFWriter), one tiny model per architecture of the generated table whose required
hyperparameters and tensors it can fill, plus variants changed in one way each (a missing
or mistyped key, a per-layer array, a missing optional or required tensor, a wrong shape,
a head count that does not divide, an unknown pre-tokenizer, a projector or adapter given
as the main model).  ``python -m tools.loader_corpus record --lib DIR --binding DIR`` runs
llama-cpp-python on each file in a child process (``Llama(path, n_ctx=64)``: load and
context creation) and writes fixtures/llama_loader_verdicts.json; CI only reads that record
(tests/rules/test_loader_corpus.py regenerates the files and compares ggscope's verdict).

Verdicts: ``loads``, ``refuses`` (an exception: the loader or context creation failed) or
``crash`` (the child died on a signal: an assert), with the last error line of llama.cpp's log.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np

from ggscope.facts import llama_arch as gen
from ggscope.facts.llama_loader import key, tensor_name
from ggscope.rules import loader_generated as lg

VERDICTS = Path(__file__).resolve().parent.parent / "fixtures" / "llama_loader_verdicts.json"
N_EMBD, N_LAYER, N_FF, N_HEAD, N_HEAD_KV, N_CTX = 64, 2, 96, 4, 2, 64
# values for required keys, by the hparams field they fill (what llama.cpp names them)
_U32 = {"n_swa": 16, "n_expert_shared": 1, "n_layer_dense_lead": 1, "n_lora_q": 32, "n_lora_kv": 32,
        "n_ff_exp": 32, "n_ff_shexp": 32, "ssm_d_conv": 4, "ssm_d_inner": 128, "ssm_d_state": 16,
        "ssm_dt_rank": 4, "ssm_n_group": 1, "wkv_head_size": 16, "rescale_every_n_layers": 0,
        "time_mix_extra_dim": 8, "time_decay_extra_dim": 8, "n_lora_decay": 8, "n_lora_iclr": 8,
        "n_lora_value_res_mix": 8, "n_lora_gate": 8, "token_shift_count": 2, "n_embd_head_k_mla_impl": 0,
        "n_norm_groups": 4, "expert_gating_func": 0, "n_attn_temp_floor_scale": 0, "n_group_used": 0,
        "n_expert_groups": 0, "n_rel_attn_bkts": 32, "dec_start_token_id": 0}
_F32 = {"f_norm_eps": 1e-5, "f_norm_rms_eps": 1e-5, "expert_weights_scale": 1.0, "f_max_alibi_bias": 8.0}


def _value(h):
    base = (h.ctype or "").rstrip("[]")
    if base in ("u32", "i32", "u64", "u16"):
        return _U32.get(h.dest, 8)
    if base == "f32":
        return _F32.get(h.dest, 1e-5 if "eps" in h.dest else 1.0)
    if base == "bool":
        return False
    return None


class _Run:
    """What loader_generated.hparams needs from a file, for the keys this script writes."""
    Stop = type("Stop", (Exception,), {})

    def __init__(self, arch, md, types):
        self.arch, self.md, self.types, self.nodes = arch, md, types, {}
        self.mf = type("M", (), {"tensors": ()})()
        self.pred = type("P", (), {"issues": [], "of": lambda s, k: [i for i in s.issues if i[0] == k]})()

    def add(self, kind, message, path=None):
        self.pred.issues.append((kind, message))

    def node(self, key):
        return None


def base_model(arch: str, extra: dict | None = None):
    """(metadata {key: (value, gguf type)}, [(name, shape ne)]) or None when a required
    key or tensor dimension cannot be filled; ``extra`` keys (short names) override the defaults."""
    spec = gen.ARCHS[arch]
    md = {"general.architecture": (arch, "string"), "general.name": (f"tiny {arch}", "string"),
          "general.file_type": (0, "uint32")}

    def put(kv, v, t):
        md[key(kv, arch)] = (v, t)
    put("CONTEXT_LENGTH", N_CTX, "uint32")
    put("EMBEDDING_LENGTH", N_EMBD, "uint32")
    put("BLOCK_COUNT", N_LAYER, "uint32")
    put("FEED_FORWARD_LENGTH", N_FF, "uint32")
    put("ATTENTION_HEAD_COUNT", N_HEAD, "uint32")
    put("ATTENTION_HEAD_COUNT_KV", N_HEAD_KV, "uint32")
    md.update({f"{arch}.{k}": v for k, v in (extra or {}).items()})
    for h in spec.hparams:
        k = key(h.kv, arch)
        if k in md or not h.required:
            continue
        v = _value(h)
        if v is None or h.mode in ("array", "array_n"):
            if h.conds:
                continue                      # maybe not read: leave it out
            return None
        md[k] = (v, {"u32": "uint32", "i32": "int32", "u64": "uint64", "u16": "uint16", "f32": "float32",
                     "bool": "bool"}[(h.ctype or "").rstrip("[]")])
    run = _Run(arch, {k: v for k, (v, _t) in md.items()}, {k: t for k, (_v, t) in md.items()})
    try:
        hp = lg.hparams(run, checks=False)   # the corpus must not leave out what ggscope predicts fails
    except Exception:  # noqa: BLE001 - the script's own choice of values was refused
        return None
    hp["vocab"][0] = N_VOCAB
    tensors = []
    seen = set()
    for t in spec.tensors:
        if not t.required or t.loop == "other":
            continue
        block = "%d" in gen.TENSOR_NAMES[t.tensor]
        for i in (range(hp["n_layer"] if t.loop == "n_layer" else hp["n_all"]) if block else (None,)):
            if t.conds and lg.certain(t.when, hp["env"](i)) is not True:
                continue
            name = tensor_name(t, i)
            if name in seen:
                continue
            if t.shape is None:
                return None
            ne = [lg._eval(d, hp["env"](i)) if d else None for d in t.shape]
            if any(d is None or d <= 0 for d in ne):
                return None
            seen.add(name)
            tensors.append((name, tuple(ne)))
    return md, tensors


N_VOCAB = 300


def _vocab(md, pre=None):
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [f"w{i}" for i in range(N_VOCAB - 259)]
    md["tokenizer.ggml.model"] = ("llama", "string")
    md["tokenizer.ggml.tokens"] = (toks, "array[string]")
    md["tokenizer.ggml.scores"] = ([0.0] * N_VOCAB, "array[float32]")
    md["tokenizer.ggml.token_type"] = ([2, 3, 3] + [6] * 256 + [1] * (N_VOCAB - 259), "array[int32]")
    md["tokenizer.ggml.bos_token_id"] = (1, "uint32")
    md["tokenizer.ggml.eos_token_id"] = (2, "uint32")
    if pre is not None:
        md["tokenizer.ggml.model"] = ("gpt2", "string")
        md["tokenizer.ggml.pre"] = (pre, "string")
        md["tokenizer.ggml.merges"] = (["w 0", "w 1"], "array[string]")
        del md["tokenizer.ggml.scores"]


def write(path: Path, md: dict, tensors: list, seed: int) -> None:
    import gguf
    arch = md["general.architecture"][0]
    w = gguf.GGUFWriter(str(path), arch=arch)
    w.kv_data[0].pop("general.architecture", None)
    vt = gguf.GGUFValueType
    kinds = {"uint32": vt.UINT32, "int32": vt.INT32, "uint64": vt.UINT64, "uint16": vt.UINT16,
             "float32": vt.FLOAT32, "float64": vt.FLOAT64, "bool": vt.BOOL, "string": vt.STRING}
    for k, (v, t) in md.items():
        if k == "general.alignment":
            w.data_alignment = v
        if t.startswith("array["):
            w.add_key_value(k, list(v), vt.ARRAY, sub_type=kinds[t[6:-1]])
        else:
            w.add_key_value(k, v, kinds[t])
    rng = np.random.default_rng(seed)
    for name, ne in tensors:
        data = (rng.standard_normal(tuple(reversed(ne))) * 0.02).astype(np.float32)
        if "norm" in name and len(ne) == 1:
            data += 1.0
        w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def cases():
    """(file stem, arch, mutation, metadata, tensors) for every case, in a fixed order."""
    out = []
    for arch in sorted(gen.ARCHS):
        if arch == "clip":
            continue
        b = base_model(arch)
        if b is None:
            continue
        md, ts = b
        _vocab(md)
        out.append((f"{arch}.base", arch, "base", md, ts))
    bases = {c[1]: c for c in out}
    for arch in ("olmo2", "command-r", "glm4", "granite", "exaone", "internlm2", "stablelm", "orion"):
        if arch not in bases:
            continue
        _s, _a, _m, md, ts = bases[arch]
        p = f"{arch}."
        eps = next((k for k in md if k.startswith(p + "attention.layer_norm")), None)
        if eps:
            out.append((f"{arch}.missing-key", arch, "missing-key", {k: v for k, v in md.items() if k != eps}, ts))
            out.append((f"{arch}.wrong-type", arch, "wrong-type", {**md, eps: (1e-5, "float64")}, ts))
        out.append((f"{arch}.ctx-u64", arch, "wrong-type", {**md, p + "context_length": (N_CTX, "uint64")}, ts))
        out.append((f"{arch}.per-layer-ff", arch, "per-layer-array",
                    {**md, p + "feed_forward_length": ([N_FF] * N_LAYER, "array[int32]")}, ts))
        out.append((f"{arch}.per-layer-ff-short", arch, "per-layer-array",
                    {**md, p + "feed_forward_length": ([N_FF], "array[int32]")}, ts))
        req = [n for n, _ in ts if n.startswith("blk.1.")]
        if req:
            out.append((f"{arch}.missing-tensor", arch, "missing-required-tensor", md, [t for t in ts if t[0] != req[0]]))
            out.append((f"{arch}.wrong-shape", arch, "wrong-shape", md,
                        [(n, (ne[0] + 1,) + ne[1:]) if n == req[-1] else (n, ne) for n, ne in ts]))
        if "output.weight" in [n for n, _ in ts]:
            out.append((f"{arch}.no-output", arch, "missing-optional-tensor", md, [t for t in ts if t[0] != "output.weight"]))
        out.append((f"{arch}.extra-tensor", arch, "unexpected-tensor", md, ts + [("blk.0.holdout.weight", (N_EMBD,))]))
        out.append((f"{arch}.heads-5", arch, "bad-head-count", {**md, p + "attention.head_count": (5, "uint32")}, ts))
        m2 = dict(md)
        _vocab(m2, pre="holdout-pre")
        out.append((f"{arch}.unknown-pre", arch, "unknown-pre-tokenizer", m2, ts))
        m3 = dict(md)
        _vocab(m3, pre="llama3")
        out.append((f"{arch}.bpe-llama3", arch, "known-pre-tokenizer", m3, ts))
    if "glm4" in bases:
        # multi-token prediction: the last nextn_predict_layers blocks are MTP layers, created
        # with TENSOR_SKIP (not required); more MTP layers than blocks is an assert
        _s, _a, _m, md, ts = bases["glm4"]
        out.append(("glm4.nextn-1", "glm4", "nextn-layers",
                    {**md, "glm4.block_count": (N_LAYER + 1, "uint32"), "glm4.nextn_predict_layers": (1, "uint32")}, ts))
        out.append(("glm4.nextn-too-many", "glm4", "nextn-layers",
                    {**md, "glm4.nextn_predict_layers": (N_LAYER + 1, "uint32")}, ts))
    if "qwen2" in bases:
        # n_rot other than the head size: shapes do not depend on it, the graph asserts
        # n_embd_head == n_rot when the context is created
        _s, _a, _m, md, ts = bases["qwen2"]
        out.append(("qwen2.rope-dim-8", "qwen2", "graph-assert", {**md, "qwen2.rope.dimension_count": (8, "uint32")},
                    ts))
        for pad in range(32):
            # general.alignment 16 and a filler string that puts the data section at 16 mod 32
            m2 = {**md, "general.alignment": (16, "uint32"), "general.description": ("x" * pad, "string")}
            if _data_start(m2, ts) % 32 == 16:
                out.append(("qwen2.align-16", "qwen2", "mmap-alignment", m2, ts))
                break
    if "olmo2" in bases:
        _s, _a, _m, md, ts = bases["olmo2"]
        out.append(("olmo2.as-clip", "clip", "projector-as-main",
                    {**md, "general.architecture": ("clip", "string")}, ts))
        out += adapters("olmo2", dict(ts))
    return out


def _data_start(md: dict, tensors: list) -> int:
    """Where GGUFWriter would put the data section for these keys and tensors."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.gguf"
        write(path, md, tensors, seed=0)
        import ggscope
        mf = ggscope.open(str(path))
        try:
            return min(t.offset for t in mf.tensors)
        finally:
            mf.close()


ADAPTER_BASE = "olmo2.base.gguf"


def adapters(arch: str, base: dict):
    """LoRA adapters for the olmo2 base, as convert_lora_to_gguf.py writes them (lora_a
    ne {in, r}, lora_b ne {r, out}), judged by llama_adapter_lora_init against that base."""
    md = {"general.architecture": (arch, "string"), "general.type": ("adapter", "string"),
          "adapter.type": ("lora", "string"), "adapter.lora.alpha": (16.0, "float32")}
    r = 4
    good = []
    for name in ("blk.0.attn_q.weight", "blk.1.attn_v.weight"):
        n_in, n_out = base[name][0], base[name][1]
        good += [(name + ".lora_a", (n_in, r)), (name + ".lora_b", (r, n_out))]
    return [
        (f"{arch}.lora", arch, "adapter", md, good),
        (f"{arch}.lora-missing-b", arch, "adapter-missing-half", md, good[:-1]),
        (f"{arch}.lora-not-transposed", arch, "adapter-not-transposed", md,
         [(n, (ne[1], ne[0])) if n.endswith("lora_a") and n.startswith("blk.1") else (n, ne) for n, ne in good]),
        (f"{arch}.lora-other-arch", "llama", "adapter-arch-mismatch", {**md, "general.architecture": ("llama", "string")},
         good),
        (f"{arch}.lora-not-in-base", arch, "adapter-tensor-not-in-base", md,
         good + [("blk.0.holdout.weight.lora_a", (N_EMBD, r)), ("blk.0.holdout.weight.lora_b", (r, N_EMBD))]),
        (f"{arch}.lora-type", arch, "adapter-type", {**md, "adapter.type": ("control_vector", "string")}, good),
    ]


def write_corpus(folder: Path) -> list[dict]:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for stem, arch, mutation, md, ts in cases():
        path = folder / f"{stem}.gguf"
        write(path, md, ts, seed=zlib.crc32(stem.encode()))     # a file's seed does not depend on the others
        rows.append({"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "arch": arch,
                     "mutation": mutation,
                     **({"base": ADAPTER_BASE} if mutation.startswith("adapter") else {})})
    return rows


_CHILD = r"""
import os, sys
os.environ["LLAMA_CPP_LIB_PATH"] = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import llama_cpp
try:
    if len(sys.argv) > 4:        # an adapter, judged against its base model
        llm = llama_cpp.Llama(sys.argv[4], n_ctx=64, n_batch=64, n_threads=1, verbose=True)
        print("BASE LOADED", file=sys.stderr)
        if not llama_cpp.llama_adapter_lora_init(llm.model, sys.argv[3].encode()):
            print("EXC: llama_adapter_lora_init failed", file=sys.stderr)
            sys.exit(3)
    else:
        llama_cpp.Llama(sys.argv[3], n_ctx=64, n_batch=64, n_threads=1, verbose=True)
except Exception as e:
    print("EXC:", e, file=sys.stderr)
    sys.exit(3)
print("LOADED", file=sys.stderr)
"""


def _public(line: str) -> str:
    """An error line without this machine's paths: llama.cpp source files relative to the
    llama.cpp tree (``src/models/x.cpp:12: GGML_ASSERT(...)``)."""
    line = re.sub(r"\S*/vendor/llama\.cpp/", "", line)
    return re.sub(r"(?<![\w.])/\S+/(\S+\.gguf)", r"\1", line)


def oracle(path: Path, lib: str, binding: str, base: Path | None = None) -> dict:
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD, lib, binding, str(path), *([str(base)] if base else [])],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"llama_cpp": "crash", "reason": "timeout"}
    err = p.stderr.splitlines()
    if p.returncode == 0 and "LOADED" in err:
        return {"llama_cpp": "loads", "reason": ""}
    lines = [ln for ln in err if "error" in ln.lower() or "GGML_ASSERT" in ln or "failed" in ln or "EXC:" in ln]
    reason = next((ln for ln in lines if "GGML_ASSERT" in ln), None) or next(
        (ln for ln in lines if "error loading model" in ln or "llama_model_load:" in ln
         or "llama_adapter_lora_init_impl" in ln or "failed to apply lora" in ln.lower()), None) or (
        lines[0] if lines else (err[-1] if err else ""))
    return {"llama_cpp": "crash" if p.returncode < 0 or p.returncode not in (0, 3) else "refuses",
            "reason": _public(reason.strip())[:300]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["write", "record"])
    ap.add_argument("--dir", default="loader-corpus", help="where the corpus files go")
    ap.add_argument("--lib", default=os.environ.get("LLAMA_CPP_LIB_PATH"), help="directory of libllama.so")
    ap.add_argument("--binding", default=os.environ.get("LLAMA_CPP_PYTHON"),
                    help="llama-cpp-python 0.3.36 source directory (holds the llama_cpp package)")
    a = ap.parse_args(argv)
    rows = write_corpus(Path(a.dir))
    if a.command == "write":
        print(f"{len(rows)} files in {a.dir}")
        return 0
    if not a.lib or not a.binding:
        ap.error("record needs --lib and --binding")
    for r in rows:
        r.update(oracle(Path(a.dir) / r["file"], a.lib, a.binding, Path(a.dir) / r["base"] if "base" in r else None))
        print(r["file"], r["llama_cpp"], r["reason"][:100], flush=True)
    VERDICTS.parent.mkdir(exist_ok=True)
    VERDICTS.write_text(json.dumps({"oracle": f"llama-cpp-python 0.3.36 on {gen.PINNED}", "cases": rows},
                                   indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
