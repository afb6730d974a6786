"""Record llama.cpp's reserve graph, node by node, as fixtures the allocator replay is checked against.

Why: ``ggscope.memory.graph`` rebuilds the graph llama.cpp reserves its compute buffer for
(``ggscope.memory.galloc`` replays ggml-alloc over it).  A replay that lands on the right
size by accident would hide a wrong graph; this script keeps llama.cpp's own graph beside
it.  It loads a recorded model (rebuilt from ``fixtures/llama_memory/<stem>.json``, zero
data) in llama-cpp-python 0.3.36 with ``GGML_SCHED_DEBUG=2`` - the scheduler then prints
every node of every graph it splits (ggml/src/ggml-backend.cpp
``ggml_backend_sched_print_assignments``: index, ``ggml_op_desc``, name, size; view ops
skipped but counted) - keeps the last graph reserved for a full micro-batch
(``graph_reserve`` with ``n_tokens`` = ``n_outputs`` = the micro-batch) and writes
``fixtures/llama_graph/<stem>-<config>.json``: the parameters and, per printed node, its
index, op and size as printed ("4M", "16K").  Nothing of the vendored source is changed:
the print is llama.cpp's own debug output, switched on by the environment.

Usage::

    LLAMA_CPP_LIB_PATH=<dir with libllama.so> python -m tools.record_llama_graph \\
        --llama-cpp-python <unpacked llama_cpp_python-0.3.36> STEM --ctx 4096 --ubatch 512 \\
        --cache f16 --flash-attn on [--parallel 2]

Each load runs in a child process: a llama.cpp abort loses that run, not the script.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.llama_memory_recipe import build, load  # noqa: E402
from tools.record_llama_memory import _CHILD, _CHILD_C, CACHE_TYPES  # noqa: E402

OUT = ROOT / "fixtures" / "llama_graph"
_RESERVE = re.compile(r"graph_reserve: reserving a graph for ubatch with n_tokens =\s*(\d+), n_seqs =\s*(\d+), "
                      r"n_outputs =\s*(\d+)")
_NODE = re.compile(r"^node #\s*(\d+) \(\s*([^)]*?)\):\s+.*?\(\s*([\d]+[KM])\) \[")


def parse(text: str, n_tokens: int) -> list[list]:
    """The last printed graph reserved for ``n_tokens`` tokens, all outputs: [index, op, size]."""
    graphs, cur, keep = [], None, False
    for line in text.splitlines():
        if m := _RESERVE.search(line):
            if cur is not None and keep:
                graphs.append(cur)
            cur, keep = [], int(m[1]) == n_tokens and int(m[3]) == n_tokens
        elif cur is not None and (m := _NODE.match(line)):
            cur.append([int(m[1]), m[2].strip(), m[3]])
    if cur is not None and keep:
        graphs.append(cur)
    return graphs[-1] if graphs else []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stem", help="a record in fixtures/llama_memory (its model is rebuilt from the recipe)")
    ap.add_argument("--llama-cpp-python", required=True, help="the unpacked llama-cpp-python 0.3.36 source tree")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--ubatch", type=int, default=512)
    ap.add_argument("--cache", default="f16", help="cache type, K=V")
    ap.add_argument("--flash-attn", default="off", choices=["on", "off"])
    ap.add_argument("--parallel", type=int, default=1)
    a = ap.parse_args(argv)
    if not os.environ.get("LLAMA_CPP_LIB_PATH"):
        ap.error("set LLAMA_CPP_LIB_PATH to the directory holding libllama.so")
    rec = load(ROOT / "fixtures" / "llama_memory" / f"{a.stem}.json")
    params = {"ctx": a.ctx, "batch": a.ubatch, "ubatch": a.ubatch, "type_k": a.cache, "type_v": a.cache,
              "flash_attn": a.flash_attn == "on", "swa_full": True, "parallel": a.parallel}
    kw = {"n_ctx": a.ctx, "n_batch": a.ubatch, "n_ubatch": a.ubatch, "type_k": CACHE_TYPES[a.cache],
          "type_v": CACHE_TYPES[a.cache], "flash_attn": params["flash_attn"], "swa_full": True}
    if a.parallel > 1:
        kw["n_seq_max"] = a.parallel
        child = _CHILD_C
    else:
        kw["n_gpu_layers"], kw["n_threads"] = 0, 1
        child = _CHILD
    with tempfile.TemporaryDirectory() as d:
        model = build(rec, Path(d) / f"{a.stem}.gguf")
        env = dict(os.environ, GGML_SCHED_DEBUG="2")
        p = subprocess.run([sys.executable, "-c", child, a.llama_cpp_python, str(model), json.dumps(kw)],
                           capture_output=True, text=True, timeout=600, env=env)
    n_tokens = -(-a.ubatch // a.parallel) * a.parallel
    nodes = parse(p.stderr, n_tokens)
    if p.returncode or not nodes:
        print(f"{a.stem}: llama.cpp exited {p.returncode} with {len(nodes)} graph nodes printed", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    name = f"{a.stem}-ctx{a.ctx}-ub{a.ubatch}-{a.cache}-fa{a.flash_attn}-np{a.parallel}.json"
    (OUT / name).write_text(json.dumps({"model": a.stem, "params": params, "nodes": nodes}, separators=(",", ":"))
                            + "\n")
    print(f"{name}: {len(nodes)} nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
