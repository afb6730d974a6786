"""Record what llama.cpp allocates for a model, as fixtures ``ggscope.memory`` is tested against.

Why: ``ggscope fit`` predicts llama.cpp's buffers from a file's header; the only judge of
that prediction is llama.cpp itself.  CI never builds llama.cpp, so this script runs it
once (llama-cpp-python 0.3.36 on the library built from its vendored llama.cpp), parses
the sizes its verbose load prints, and writes one small JSON per model under
``fixtures/llama_memory/``:

* ``recipe``: the model's header as data - every metadata key except the vocabulary's
  per-token arrays (kept as their length), and every tensor's name, ggml type and shape in
  file order.  ``tests/memory`` rebuilds a byte-layout-identical GGUF from it (zero tensor
  data; the prediction reads headers only), so the test needs neither llama.cpp nor the
  original model.
* ``cpu``: the features of the recording CPU that decide ggml-cpu's weight repacking.
* ``runs``: per context configuration the parameters and llama.cpp's printed sizes in
  MiB (``model``, ``output``, ``kv`` (per cache: cells, layers, K, V), ``rs``,
  ``compute`` from ``~llama_context``'s four-decimal line).

Usage::

    LLAMA_CPP_LIB_PATH=<dir with libllama.so> python -m tools.record_llama_memory \\
        --llama-cpp-python <unpacked llama_cpp_python-0.3.36> MODEL.gguf... [--ctx 256 4096]

With ``--rpc HOST:PORT --ngl 0 1 ...`` (a ``ggml-rpc-server`` running, LLAMA_CPP_LIB_PATH a
build with GGML_RPC=ON) the loads offload layers to that RPC device and the records, with
each buffer per device (``kv_dev``, ``rs_dev``, ``compute_dev``), go to ``<model>-rpc.json``.

With ``--kv-unified`` the loads keep one KV buffer for every sequence (``kv_unified`` in
the run's parameters).

With ``--append`` the runs are added to an existing record of the same model (same recipe,
same CPU features), so a record can grow by new contexts or micro-batch sizes.

Each load runs in a child process: a llama.cpp abort loses that run, not the script.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "llama_memory"
_VOCAB_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                 "tokenizer.ggml.merges")
# ggml type names llama.cpp's common arg parser accepts for --cache-type-k/-v, by enum value
CACHE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "iq4_nl": 20, "bf16": 30}

# Models with real widths and few layers (the compute buffer does not depend on the layer
# count): sparse files of zeros from tools/llama_memory_recipe.decoder, recorded like files.
SYNTHETIC = {
    "synthetic-llama-7b-widths": dict(arch="llama", n_layer=2, n_embd=4096, n_head=32, n_head_kv=32, head_dim=128,
                                      n_ff=11008, n_vocab=32000),
    "synthetic-llama-70b-widths": dict(arch="llama", n_layer=2, n_embd=8192, n_head=64, n_head_kv=8, head_dim=128,
                                       n_ff=28672, n_vocab=128256),
    "synthetic-qwen2-1.5b-widths": dict(arch="qwen2", n_layer=2, n_embd=1536, n_head=12, n_head_kv=2, head_dim=128,
                                        n_ff=8960, n_vocab=151936),
    "synthetic-gemma2-2b-widths": dict(arch="gemma2", n_layer=4, n_embd=2304, n_head=8, n_head_kv=4, head_dim=256,
                                       n_ff=9216, n_vocab=256000, extra={"attention.sliding_window": 4096}),
    "synthetic-gemma3-1b-widths": dict(arch="gemma3", n_layer=6, n_embd=1152, n_head=4, n_head_kv=1, head_dim=256,
                                       n_ff=6912, n_vocab=262144, extra={"attention.sliding_window": 512}),
    "synthetic-falcon-7b-widths": dict(arch="falcon", n_layer=2, n_embd=4544, n_head=71, n_head_kv=1, head_dim=64,
                                       n_ff=18176, n_vocab=65024),
    "synthetic-mpt-7b-widths": dict(arch="mpt", n_layer=2, n_embd=4096, n_head=32, n_head_kv=32, head_dim=128,
                                    n_ff=16384, n_vocab=50432),
    "synthetic-gpt-oss-20b-widths": dict(arch="gpt-oss", n_layer=2, n_embd=2880, n_head=64, n_head_kv=8, head_dim=64,
                                         n_ff=2880, n_vocab=201088,
                                         extra={"attention.sliding_window": 128, "expert_count": 32,
                                                "expert_used_count": 4, "expert_feed_forward_length": 2880}),
}

# Hybrid attention + recurrent models with real widths and a few layers of each kind
# (tools/llama_memory_hybrid.hybrid): head_count_kv 0 marks a recurrent layer.
_MAMBA2 = {"ssm.conv_kernel": 4}
HYBRID = {
    "synthetic-jamba-widths": dict(arch="jamba", n_layer=4, head_count_kv=[0, 8, 0, 0], n_embd=2048, n_head=32,
                                   n_ff=8192, n_vocab=65536,
                                   ssm={"ssm.conv_kernel": 4, "ssm.inner_size": 4096, "ssm.state_size": 16,
                                        "ssm.time_step_rank": 128}),
    "synthetic-granitehybrid-widths": dict(arch="granitehybrid", n_layer=4, head_count_kv=[0, 0, 0, 4], n_embd=1536,
                                           n_head=12, n_ff=4096, n_vocab=49160,
                                           ssm={**_MAMBA2, "ssm.inner_size": 3072, "ssm.state_size": 128,
                                                "ssm.group_count": 1, "ssm.time_step_rank": 48}),
    "synthetic-nemotron_h-widths": dict(arch="nemotron_h", n_layer=4, head_count_kv=[0, 8, 0, 0], n_embd=4096,
                                        n_head=32, n_ff=21504, n_vocab=131072,
                                        ssm={**_MAMBA2, "ssm.inner_size": 8192, "ssm.state_size": 128,
                                             "ssm.group_count": 8, "ssm.time_step_rank": 128},
                                        extra={"feed_forward_length": [0, 0, 21504, 0]}),
    "synthetic-falcon-h1-widths": dict(arch="falcon-h1", n_layer=2, n_embd=2048, n_head=8, n_ff=8192, n_vocab=65536,
                                       head_count_kv=[2, 2],
                                       ssm={**_MAMBA2, "ssm.inner_size": 3072, "ssm.state_size": 256,
                                            "ssm.group_count": 1, "ssm.time_step_rank": 24}),
    "synthetic-qwen35-widths": dict(arch="qwen35", n_layer=4, n_embd=2048, n_head=8, n_ff=6144, n_vocab=65536,
                                    ssm={"ssm.conv_kernel": 4, "ssm.inner_size": 2048, "ssm.state_size": 128,
                                         "ssm.group_count": 16, "ssm.time_step_rank": 16},
                                    extra={"attention.head_count_kv": 2, "attention.key_length": 256,
                                           "attention.value_length": 256, "full_attention_interval": 4}),
    # Qwen3-Next-80B-A3B's widths with 32 of its 512 experts (the router's logits are the
    # only compute tensor the expert count sizes: 512 x n_ubatch floats, 1 MiB)
    "synthetic-qwen3next-widths": dict(arch="qwen3next", n_layer=4, n_embd=2048, n_head=16, n_ff=5120,
                                       n_vocab=151936,
                                       ssm={"ssm.conv_kernel": 4, "ssm.inner_size": 4096, "ssm.state_size": 128,
                                            "ssm.group_count": 16, "ssm.time_step_rank": 32},
                                       extra={"attention.head_count_kv": 2, "attention.key_length": 256,
                                              "attention.value_length": 256, "full_attention_interval": 4,
                                              "expert_count": 32, "expert_used_count": 10,
                                              "expert_feed_forward_length": 512,
                                              "expert_shared_feed_forward_length": 512}),
    # Qwen3.5-35B-A3B's widths with 32 of its 256 experts
    "synthetic-qwen35moe-widths": dict(arch="qwen35moe", n_layer=4, n_embd=2048, n_head=16, n_ff=512,
                                       n_vocab=248320,
                                       ssm={"ssm.conv_kernel": 4, "ssm.inner_size": 4096, "ssm.state_size": 128,
                                            "ssm.group_count": 16, "ssm.time_step_rank": 32},
                                       extra={"attention.head_count_kv": 2, "attention.key_length": 256,
                                              "attention.value_length": 256, "full_attention_interval": 4,
                                              "expert_count": 32, "expert_used_count": 8,
                                              "expert_feed_forward_length": 512,
                                              "expert_shared_feed_forward_length": 512}),
    # Kimi-Linear-48B-A3B's widths (conversion/kimi_linear.py: MQA-form MLA, key_length =
    # kv_lora_rank + rope) with 8 of its 256 experts, MLA in every fourth layer
    "synthetic-kimi-linear-widths": dict(arch="kimi-linear", n_layer=4, head_count_kv=[0, 0, 0, 1], n_embd=2304,
                                         n_head=32, n_ff=9216, n_vocab=163840,
                                         ssm={"ssm.conv_kernel": 4, "kda.head_dim": 128},
                                         extra={"attention.kv_lora_rank": 512, "attention.key_length": 576,
                                                "attention.key_length_mla": 192, "attention.value_length_mla": 128,
                                                "rope.dimension_count": 64, "expert_count": 8, "expert_used_count": 4,
                                                "expert_feed_forward_length": 1024, "expert_shared_count": 1,
                                                "leading_dense_block_count": 1, "expert_gating_func": 2}),
    # bailingmoe3 at the 7.9B-A1.3B's n_embd (src/models/bailingmoe3.cpp's type table; the
    # other widths assumed, Kimi-Linear-like) with 8 of its 128 experts
    "synthetic-bailingmoe3-widths": dict(arch="bailingmoe3", n_layer=4, head_count_kv=[0, 0, 0, 1], n_embd=1536,
                                         n_head=16, n_ff=4608, n_vocab=157184,
                                         ssm={"ssm.conv_kernel": 4, "kda.head_dim": 128},
                                         extra={"attention.kv_lora_rank": 512, "attention.key_length": 576,
                                                "attention.key_length_mla": 192, "attention.value_length_mla": 128,
                                                "rope.dimension_count": 64, "expert_count": 8, "expert_used_count": 4,
                                                "expert_feed_forward_length": 512, "expert_shared_count": 1,
                                                "leading_dense_block_count": 1, "expert_gating_func": 2,
                                                "kda.gate_lower_bound": (-5.0, "float32")}),
    # PLaMo-2-1B's widths (conversion/plamo.py: ssm.group_count 0, inner = mamba heads x 128,
    # attention in every other layer)
    "synthetic-plamo2-widths": dict(arch="plamo2", n_layer=4, head_count_kv=[0, 1, 0, 1], n_embd=2048, n_head=16,
                                    n_ff=8192, n_vocab=100000,
                                    ssm={"ssm.conv_kernel": 4, "ssm.inner_size": 4096, "ssm.state_size": 64,
                                         "ssm.group_count": 0, "ssm.time_step_rank": 32},
                                    extra={"attention.key_length": 128, "attention.value_length": 128}),
    # MiniMax-Text-01's widths with 4 of its 32 experts, softmax attention in every second
    # layer instead of every eighth (full_attention_interval), so four layers hold both kinds
    "synthetic-minimax-01-widths": dict(arch="minimax-01", n_layer=4, n_embd=6144, n_head=64, n_ff=9216,
                                        n_vocab=200064,
                                        extra={"attention.head_count_kv": 8, "attention.key_length": 128,
                                               "attention.value_length": 128, "full_attention_interval": 2,
                                               "expert_count": 4, "expert_used_count": 2}),
    "synthetic-lfm2-widths": dict(arch="lfm2", n_layer=4, head_count_kv=[0, 8, 0, 8], n_embd=2048, n_head=32,
                                  n_ff=8192, n_vocab=65536, extra={"shortconv.l_cache": 3}),
    # a sliding window on lfm2's attention layers: llama_memory_hybrid_iswa
    "synthetic-lfm2-swa-widths": dict(arch="lfm2", n_layer=4, head_count_kv=[0, 8, 0, 8], n_embd=2048, n_head=32,
                                      n_ff=8192, n_vocab=65536,
                                      extra={"shortconv.l_cache": 3, "attention.sliding_window": 512}),
}

_CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import llama_cpp
kw = json.loads(sys.argv[3])
llama_cpp.Llama(sys.argv[2], verbose=True, **kw)
"""

# n_seq_max (--parallel) and kv_unified are not Llama() arguments: such runs use the C API directly
_CHILD_C = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import llama_cpp
kw = json.loads(sys.argv[3])
llama_cpp.llama_backend_init()
mp = llama_cpp.llama_model_default_params()
mp.n_gpu_layers = 0
m = llama_cpp.llama_model_load_from_file(sys.argv[2].encode(), mp)
cp = llama_cpp.llama_context_default_params()
cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = kw["n_ctx"], kw["n_batch"], kw["n_ubatch"], kw["n_seq_max"]
cp.type_k, cp.type_v, cp.swa_full = kw["type_k"], kw["type_v"], kw["swa_full"]
cp.flash_attn_type = 1 if kw["flash_attn"] else 0
cp.kv_unified = kw.get("kv_unified", False)
ctx = llama_cpp.llama_init_from_model(m, cp)
if not ctx:                       # refused (e.g. a quantized V cache without flash attention)
    sys.exit(3)
llama_cpp.llama_free(ctx)
llama_cpp.llama_model_free(m)
"""

# --ngl through llama.cpp's RPC backend: a ggml-rpc-server on this machine is a device
# llama.cpp offloads layers to (common/arg.cpp add_rpc_devices, done here with ctypes);
# LLAMA_CPP_LIB_PATH must then be a build with GGML_RPC=ON.
_CHILD_RPC = r"""
import ctypes, json, os, sys
ggml = ctypes.CDLL(os.path.join(os.environ["LLAMA_CPP_LIB_PATH"], "libggml.so"), mode=ctypes.RTLD_GLOBAL)
ggml.ggml_backend_reg_by_name.restype = ctypes.c_void_p
ggml.ggml_backend_reg_by_name.argtypes = [ctypes.c_char_p]
ggml.ggml_backend_reg_get_proc_address.restype = ctypes.c_void_p
ggml.ggml_backend_reg_get_proc_address.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
ggml.ggml_backend_register.argtypes = [ctypes.c_void_p]
ggml.ggml_backend_load_all()
reg = ggml.ggml_backend_reg_by_name(b"RPC")
if not reg:
    sys.exit("this llama.cpp build has no RPC backend")
add = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)(
    ggml.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_rpc_add_server"))
ggml.ggml_backend_register(add(sys.argv[4].encode()))
sys.path.insert(0, sys.argv[1])
import llama_cpp
llama_cpp.Llama(sys.argv[2], verbose=True, **json.loads(sys.argv[3]))
"""

_DEV = re.compile(r"\[[^\]]*\]")             # "RPC0[127.0.0.1:50052]" -> "RPC0"

_RX = {
    "model": re.compile(r"load_tensors:\s+(\S+) model buffer size =\s+([\d.]+) MiB"),
    "output": re.compile(r"llama_context:\s+(\S+)\s+output buffer size =\s+([\d.]+) MiB"),
    "kv": re.compile(r"llama_kv_cache: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers"
                     r".*K \((\w+)\):\s+([\d.]+) MiB, "
                     r"V \((\w+)\):\s+([\d.]+) MiB"),
    "rs": re.compile(r"llama_memory_recurrent:\s+(\S+) RS buffer size =\s+([\d.]+) MiB"),
    "compute": re.compile(r"~llama_context:\s+(\S+) compute buffer size is\s+([\d.]+) MiB"),
    "kv_buf": re.compile(r"llama_kv_cache:\s+(\S+) KV buffer size =\s+([\d.]+) MiB"),
}


def parse_log(text: str) -> dict:
    """llama.cpp's printed sizes, MiB, from a verbose load's stderr; ``*_dev`` map each
    buffer type (device names without their endpoint) to its size, per kind."""
    out = {"model": {}, "output": None, "kv": [], "rs": None, "compute": None,
           "kv_dev": {}, "rs_dev": {}, "compute_dev": {}}
    for line in text.splitlines():
        if m := _RX["model"].search(line):
            out["model"][_DEV.sub("", m[1])] = float(m[2])
        elif m := _RX["output"].search(line):
            out["output"] = float(m[2])
        elif m := _RX["kv"].search(line):
            out["kv"].append({"mib": float(m[1]), "cells": int(m[2]), "layers": int(m[3]), "type_k": m[4],
                              "k": float(m[5]), "type_v": m[6], "v": float(m[7])})
        elif m := _RX["kv_buf"].search(line):
            dev = _DEV.sub("", m[1])
            out["kv_dev"][dev] = round(out["kv_dev"].get(dev, 0.0) + float(m[2]), 2)
        elif m := _RX["rs"].search(line):
            out["rs"] = float(m[2])
            dev = _DEV.sub("", m[1])
            out["rs_dev"][dev] = round(out["rs_dev"].get(dev, 0.0) + float(m[2]), 2)
        elif m := _RX["compute"].search(line):
            out["compute"] = float(m[2])
            out["compute_dev"][_DEV.sub("", m[1])] = float(m[2])
    return out


def recipe(path: Path) -> dict:
    """The header as data (see the module docstring)."""
    import gguf
    r = gguf.GGUFReader(str(path))
    meta = {}
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        vt = f.types[0]
        if f.name in _VOCAB_ARRAYS:
            meta[f.name] = {"type": "vocab", "n": len(f.data)}
            continue
        if vt == gguf.GGUFValueType.ARRAY:
            sub = f.types[-1]
            vals = [bytes(f.parts[i]).decode("utf-8", "replace") if sub == gguf.GGUFValueType.STRING
                    else f.parts[i].tolist()[0] for i in f.data]
            meta[f.name] = {"type": "array", "sub": sub.name, "value": vals}
        elif vt == gguf.GGUFValueType.STRING:
            meta[f.name] = {"type": "STRING", "value": bytes(f.parts[f.data[0]]).decode("utf-8", "replace")}
        else:
            v = f.parts[f.data[0]].tolist()[0]
            meta[f.name] = {"type": vt.name, "value": v}
    tensors = [[t.name, t.tensor_type.name, [int(x) for x in t.shape]] for t in r.tensors]
    align = r.alignment
    return {"metadata": meta, "tensors": tensors, "alignment": int(align)}


def cpu_features() -> list[str]:
    """The CPU flags ggml-cpu's repack choice reads (ggml/src/ggml-cpu/repack.cpp)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return []
    return sorted(flags & {"avx2", "avx512f"})


def run(lcp: str, model: Path, params: dict, rpc: str | None = None) -> dict:
    kw = {"n_ctx": params["ctx"], "n_batch": params["batch"], "n_ubatch": params["ubatch"],
          "type_k": CACHE_TYPES[params["type_k"]], "type_v": CACHE_TYPES[params["type_v"]],
          "flash_attn": params["flash_attn"], "swa_full": params["swa_full"]}
    extra = []
    if rpc:
        kw["n_gpu_layers"] = params["ngl"]
        child, extra = _CHILD_RPC, [rpc]
    elif params.get("parallel", 1) > 1 or params.get("kv_unified"):
        kw["n_seq_max"], kw["kv_unified"] = params.get("parallel", 1), params.get("kv_unified", False)
        child = _CHILD_C
    else:
        kw["n_gpu_layers"] = 0
        child = _CHILD
    p = subprocess.run([sys.executable, "-c", child, lcp, str(model), json.dumps(kw), *extra], capture_output=True,
                       text=True, timeout=600, env=dict(os.environ))
    got = parse_log(p.stderr)
    got["status"] = p.returncode
    if not rpc:
        for k in ("kv_dev", "rs_dev", "compute_dev"):
            del got[k]
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--synthetic", nargs="+", default=[], choices=sorted(SYNTHETIC),
                    help="also record these real-width models, built as sparse files in a temporary folder")
    ap.add_argument("--hybrid", nargs="+", default=[], choices=sorted(HYBRID),
                    help="also record these hybrid attention + recurrent models, built like --synthetic")
    ap.add_argument("--llama-cpp-python", required=True, help="the unpacked llama-cpp-python 0.3.36 source tree")
    ap.add_argument("--ctx", nargs="+", type=int, default=[256, 4096])
    ap.add_argument("--ubatch", nargs="+", type=int, default=[512])
    ap.add_argument("--cache", nargs="+", default=["f16"], help="cache types, K=V (f16 q8_0 q4_0 ...)")
    ap.add_argument("--flash-attn", nargs="+", default=["off"], choices=["on", "off"])
    ap.add_argument("--swa-full", nargs="+", default=["on"], choices=["on", "off"])
    ap.add_argument("--parallel", nargs="+", type=int, default=[1], help="n_seq_max values (llama.cpp's -np)")
    ap.add_argument("--kv-unified", action="store_true", help="one KV buffer for every sequence (llama.cpp's -kvu)")
    ap.add_argument("--rpc", metavar="HOST:PORT", help="offload through llama.cpp's RPC backend to this running "
                    "ggml-rpc-server (LLAMA_CPP_LIB_PATH: a GGML_RPC=ON build); records go to <model>-rpc.json")
    ap.add_argument("--ngl", nargs="+", type=int, default=[0], help="with --rpc: layers offloaded (llama.cpp's -ngl)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--append", action="store_true", help="keep the runs of an existing record of the same model "
                    "(same recipe and CPU features) and add these, replacing runs with the same parameters")
    a = ap.parse_args(argv)
    if not os.environ.get("LLAMA_CPP_LIB_PATH"):
        ap.error("set LLAMA_CPP_LIB_PATH to the directory holding libllama.so")
    a.out.mkdir(parents=True, exist_ok=True)
    import tempfile
    from tools.llama_memory_hybrid import hybrid
    from tools.llama_memory_recipe import build, decoder
    tmp = tempfile.TemporaryDirectory()
    models = list(a.models)
    for name in a.synthetic:
        models.append(build({"recipe": decoder(**SYNTHETIC[name])}, Path(tmp.name) / f"{name}.gguf"))
    for name in a.hybrid:
        models.append(build({"recipe": hybrid(**HYBRID[name])}, Path(tmp.name) / f"{name}.gguf"))
    for model in models:
        rec = {"model": model.name, "recipe": recipe(model), "cpu": cpu_features(), "runs": []}
        if a.rpc:
            rec["device"] = "RPC: ggml-rpc-server (CPU backend) on this machine"
        for ctx in a.ctx:
            for ub in a.ubatch:
                for cache in a.cache:
                    for fa in a.flash_attn:
                        for swa, par, ngl in ((s, n, g) for s in a.swa_full for n in a.parallel
                                              for g in (a.ngl if a.rpc else [0])):
                            params = {"ctx": ctx, "batch": max(512, ub), "ubatch": ub, "type_k": cache,
                                      "type_v": cache, "flash_attn": fa == "on", "swa_full": swa == "on"}
                            if par > 1:
                                params["parallel"] = par
                            if a.kv_unified:
                                params["kv_unified"] = True
                            if a.rpc:
                                params["ngl"] = ngl
                            got = run(a.llama_cpp_python, model, params, a.rpc)
                            print(model.name, params, {k: got[k] for k in ("model", "kv", "rs", "compute", "status")},
                                  file=sys.stderr)
                            if got["status"] == 0 and got["output"] is not None:
                                rec["runs"].append({"params": params, "llama": got})
        stem = model.stem + ("-rpc" if a.rpc else "")
        out = a.out / (stem + ".json")
        if a.append and out.exists():
            old = json.loads(out.read_text())
            if (old["recipe"], old["cpu"]) != (rec["recipe"], rec["cpu"]):
                sys.exit(f"{out.name}: the existing record is of another model or CPU; not appending")
            new = {json.dumps(r["params"], sort_keys=True) for r in rec["runs"]}
            rec["runs"] = [r for r in old["runs"] if json.dumps(r["params"], sort_keys=True) not in new] + rec["runs"]
        out.write_text(json.dumps(rec, indent=None, separators=(",", ":")) + "\n")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
