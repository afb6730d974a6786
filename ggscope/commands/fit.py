"""``ggscope fit FILE``: the memory llama.cpp will allocate, predicted from the header."""
from __future__ import annotations

import json
import re
import sys

from ggscope.commands.common import error, open_or_report
from ggscope.core.escape import escape_text

HELP = "predict the memory llama.cpp allocates for a model and context"
DESCRIPTION = """\
Predict, from the file's header alone (no tensor data is read, so remote files cost a few
range requests), what llama.cpp allocates when it loads the model: the model buffers
(the mmapped range, weights ggml-cpu repacks, offloaded layers), the output buffer, the
KV cache (sliding-window layers with their window, MLA's compressed cache), the
recurrent state (mamba, rwkv, and the recurrent layers of hybrids such as jamba,
granitehybrid, nemotron_h, falcon-h1, lfm2, qwen3.5), and the compute buffer.  Lines carry the names llama.cpp's log uses;
model, output, KV and recurrent sizes are exact, the compute buffer an estimate (within
10 % of llama.cpp's on CPU).  Defaults are llama.cpp's (llama-cli / llama-server)."""
EPILOG = """\
examples:
  ggscope fit model.gguf                         context 4096, llama.cpp's defaults
  ggscope fit model.gguf --ctx 32768 --cache-type-k q8_0 --cache-type-v q8_0 --flash-attn on
  ggscope fit model.gguf --vram 8G 24G           the largest context, the most layers that fit
  ggscope fit model.gguf --ngl 20                the output layer and the last 19 blocks on the GPU
  ggscope fit hf://OWNER/REPO/model.gguf --json | jq .total_bytes

JSON: {"file", "arch", "n_ctx", "n_batch", "n_ubatch", "model_bytes", "kv_bytes", "k_bytes",
"v_bytes", "recurrent_bytes", "output_bytes", "compute_bytes", "total_bytes", "buffers":
[{"kind", "name", "bytes", "cache" (KV buffers)}], "kv_caches": [{"name", "cells", "layers", "k_bytes",
"v_bytes", "buffer_bytes"}], "vram": [{"bytes", "max_ctx", "max_ngl"}] with --vram}.
With --ngl the offloaded buffers are named "GPU" and each kind (model, kv, rs, compute)
has one entry per buffer type, CPU and GPU; "max_ngl" counts the device's buffers only.
exit status: 0 ok, 1 with --vram when nothing fits a size, 2 usage or unreadable file."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)


def parse_size(text: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (try 8G, 512MiB, 24GB or a byte count)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def add_arguments(p) -> None:
    from ggscope.memory import CACHE_TYPES  # start-up: one-shot commands load only what they use
    p.add_argument("file", help="GGUF model file, shard of a split model, or URL")
    p.add_argument("--ctx", "-c", type=int, default=4096,
                   help="context size (0: the model's training context); default 4096")
    p.add_argument("--batch", "-b", type=int, default=2048, help="logical batch size; default 2048")
    p.add_argument("--ubatch", "-ub", type=int, default=512, help="physical (micro-)batch size; default 512")
    p.add_argument("--parallel", "-np", type=int, default=1, help="number of parallel sequences; default 1")
    p.add_argument("--cache-type-k", "-ctk", default="f16", choices=CACHE_TYPES, help="K cache type; default f16")
    p.add_argument("--cache-type-v", "-ctv", default="f16", choices=CACHE_TYPES, help="V cache type; default f16")
    p.add_argument("--flash-attn", "-fa", default="auto", choices=("on", "off", "auto"),
                   help="flash attention; auto (llama.cpp's default) is on for the CPU backend")
    p.add_argument("--swa-full", action="store_true",
                   help="full-size sliding-window cache (llama-cli's default is a window-sized one)")
    p.add_argument("--ngl", type=int, default=0,
                   help="layers offloaded to a GPU device, as llama.cpp's -ngl: the output layer counts as one and "
                   "goes first, so N offloads the output and the last N-1 blocks; the device is modelled as "
                   "llama.cpp's RPC backend over a CPU (32-byte alignment, no row padding; CUDA pads quantized "
                   "rows to 512 and aligns to 128, so its buffers are slightly larger)")
    p.add_argument("--cpu", default="local", help="CPU features deciding weight repacking: local, none, or a "
                   "comma list of avx2, avx512, i8mm, dotprod; default local")
    p.add_argument("--vram", nargs="+", metavar="SIZE", help="device sizes (8G, 24GiB, bytes): print the largest "
                   "context that fits each, and the most layers that fit at --ctx")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    from ggscope.memory import Options, max_context, max_layers, plan  # start-up: one-shot commands load only what they use
    from ggscope.memory.describe import human, lines  # start-up: one-shot commands load only what they use
    from ggscope.memory.weights import FEATURES  # start-up: one-shot commands load only what they use
    try:
        sizes = [parse_size(s) for s in args.vram or ()]
        if args.cpu == "local":
            features = None
        elif args.cpu == "none":
            features = frozenset()
        else:
            features = frozenset(f.strip() for f in args.cpu.split(","))
            bad = features - set(FEATURES)
            if bad:
                raise ValueError(f"unknown CPU feature {sorted(bad)[0]!r}; known: {', '.join(FEATURES)}")
        o = Options(ctx=args.ctx, batch=args.batch, ubatch=args.ubatch, parallel=args.parallel,
                    cache_type_k=args.cache_type_k, cache_type_v=args.cache_type_v,
                    flash_attn=args.flash_attn != "off", swa_full=args.swa_full, ngl=args.ngl, features=features)
        if min(o.batch, o.ubatch, o.parallel) < 1 or o.ctx < 0 or o.ngl < 0:
            raise ValueError("--batch, --ubatch and --parallel must be positive, --ctx and --ngl not negative")
    except ValueError as exc:
        error(str(exc))
        return 2
    mf = open_or_report(args.file)
    if mf is None:
        return 2
    try:
        p = plan(mf, o)
        fits = [(b, max_context(mf, o, b), max_layers(mf, o, b)) for b in sizes]
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        error(f"{escape_text(args.file)}: cannot size this model: {escape_text(str(exc))}")
        return 2
    if args.json:
        d = {"file": escape_text(args.file), **p.as_dict()}
        if sizes:
            d["vram"] = [{"bytes": b, "max_ctx": c, "max_ngl": n} for b, c, n in fits]
        json.dump(d, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        fa = "on" if o.flash_attn else "off"
        print(f"{escape_text(args.file)}: {escape_text(p.arch)}, n_ctx {p.n_ctx}, n_batch {p.n_batch}, "
              f"n_ubatch {p.n_ubatch}, {o.parallel} sequence(s), K {o.cache_type_k} / V {o.cache_type_v}, "
              f"flash attention {fa}")
        for line in lines(p):
            print("  " + line)
        if o.ngl:
            print("  GPU: device buffers as llama.cpp's RPC backend over a CPU allocates them (32-byte "
                  "alignment, no row padding); a CUDA device pads quantized rows and aligns to 128 bytes")
        for b, c, n in fits:
            ctx = f"context up to {c}" if c else "no context fits"
            print(f"  {human(b)}: {ctx} on this device alone; {n} layer(s) offloaded at context {p.n_ctx}")
    return 1 if any(c == 0 and n == 0 for _, c, n in fits) else 0
