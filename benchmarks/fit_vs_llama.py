"""Predicted memory against llama.cpp's printed sizes, and the peers' estimates, in one table.

Reads every record in ``fixtures/llama_memory`` (llama.cpp's own sizes, recorded by
``tools/record_llama_memory.py``), rebuilds each model from its recipe (sparse, zero
data), and prints one row per recorded run: llama.cpp's model / KV / compute MiB,
ggscope's, the error, and how ggscope derived the compute buffer ("replay": ggml-alloc
replayed over the reserve graph, ggscope.memory.galloc; "peaks": the plan of peaks).
With ``--hf-gguf DIR`` (an npm prefix holding
``@huggingface/gguf``: ``npm install --prefix DIR @huggingface/gguf``) each model is also
passed to its ``gguf-view -c N`` and its K+V cache and total (printed in GB, 1e9 bytes,
two decimals) are shown beside llama.cpp's f16 runs.  gguf-parser-go ships no PyPI or npm
package, so it is not run here.

Usage: python benchmarks/fit_vs_llama.py [--hf-gguf DIR] [--markdown]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ggscope  # noqa: E402
from ggscope.memory import Options, plan  # noqa: E402
from ggscope.memory import graph as replay_graph  # noqa: E402
from ggscope.memory.hparams import read  # noqa: E402
from tools.llama_memory_recipe import build, load, records  # noqa: E402

MiB = 1 << 20


def hf_gguf(prefix: str, path: Path, ctx: int) -> dict | None:
    cli = Path(prefix) / "node_modules" / "@huggingface" / "gguf" / "dist" / "cli.js"
    p = subprocess.run(["node", str(cli), "-c", str(ctx), str(path)], capture_output=True, text=True, timeout=300)
    got = {}
    for name in ("K cache", "V cache", "Weight", "Overhead", "TOTAL"):
        m = re.search(rf"{name}\s*[│|]\s*([\d.]+) GB", p.stdout)
        if m:
            got[name] = float(m.group(1)) * 1e9 / MiB
    return got or None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hf-gguf", help="npm prefix with @huggingface/gguf installed")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = ["model", "ctx", "ubatch", "cache", "fa", "np", "ngl", "llama model", "ggscope model", "llama KV",
            "ggscope KV",
            "llama compute", "ggscope compute", "compute err", "how"]
    if a.hf_gguf:
        head += ["hf/gguf K+V", "hf/gguf total", "llama total"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    worst = {"model": 0.0, "kv": 0.0, "compute": 0.0}
    outside = []                 # runs beyond 10 % (and more than 1 MiB apart)
    counts = {"replay": [0, 0], "peaks": [0, 0]}      # [runs, runs equal to llama.cpp's four decimals]
    with tempfile.TemporaryDirectory() as d:
        for rp in records():
            rec = load(rp)
            path = build(rec, Path(d) / (rp.stem + ".gguf"))
            mf = ggscope.open(str(path))
            hp = read(mf.metadata, {t.name: tuple(t.shape) for t in mf.tensors})
            replayed = replay_graph.described(hp, {t.name for t in mf.tensors}, mf.metadata)
            feats = frozenset("avx512" if f == "avx512f" else f for f in rec["cpu"])
            peer_cache: dict[int, dict | None] = {}
            for run in rec["runs"]:
                pa, ll = run["params"], run["llama"]
                p = plan(mf, Options(ctx=pa["ctx"], batch=pa["batch"], ubatch=pa["ubatch"], cache_type_k=pa["type_k"],
                                     cache_type_v=pa["type_v"], flash_attn=pa["flash_attn"],
                                     swa_full=pa["swa_full"], parallel=pa.get("parallel", 1),
                                     features=feats, ngl=pa.get("ngl", 0), device="RPC0"))
                lm = sum(ll["model"].values())
                # offloaded runs (*-rpc records): one compute buffer per device, summed
                lcompute = sum(ll["compute_dev"].values()) if "compute_dev" in ll else ll["compute"]
                lkv = sum(k["mib"] for k in ll["kv"]) + (sum(ll["rs_dev"].values()) if "rs_dev" in ll else ll["rs"] or 0)
                gkv = (p.kv_bytes + p.recurrent_bytes) / MiB
                err = (p.compute_bytes / MiB - lcompute) / lcompute
                worst["model"] = max(worst["model"], abs(round(p.model_bytes / MiB, 2) - lm))
                worst["kv"] = max(worst["kv"], abs(round(gkv, 2) - lkv))
                how = "replay" if replayed and "compute_dev" not in ll else "peaks"
                counts[how][0] += 1
                counts[how][1] += round(p.compute_bytes / MiB, 4) == lcompute
                if abs(lcompute - p.compute_bytes / MiB) > 1:      # tiny graphs: within 1 MiB
                    worst["compute"] = max(worst["compute"], abs(err))
                    if abs(err) > 0.10:
                        outside.append(f"{rp.stem} ctx {pa['ctx']} ubatch {pa['ubatch']} {pa['type_k']} "
                                       f"np {pa.get('parallel', 1)} ngl {pa.get('ngl', 0)}: {err:+.1%}")
                row = [rp.stem, str(pa["ctx"]), str(pa["ubatch"]), pa["type_k"], "on" if pa["flash_attn"] else "off",
                       str(pa.get("parallel", 1)), str(pa.get("ngl", 0)),
                       f"{lm:.2f}", f"{p.model_bytes / MiB:.2f}", f"{lkv:.2f}", f"{gkv:.2f}", f"{lcompute:.2f}",
                       f"{p.compute_bytes / MiB:.2f}", f"{err:+.1%}", how]
                if a.hf_gguf:
                    peer = None
                    if pa["type_k"] == "f16" and not pa["flash_attn"] and pa["swa_full"]:
                        if pa["ctx"] not in peer_cache:
                            peer_cache[pa["ctx"]] = hf_gguf(a.hf_gguf, path, pa["ctx"])
                        peer = peer_cache[pa["ctx"]]
                    total = lm + lkv + lcompute + (ll["output"] or 0)
                    row += ([f"{peer.get('K cache', 0) + peer.get('V cache', 0):.2f}", f"{peer.get('TOTAL', 0):.2f}"]
                            if peer else ["-", "-"]) + [f"{total:.2f}"]
                print("| " + " | ".join(row) + " |")
    print(f"\nlargest error: model {worst['model']:.2f} MiB, KV+RS {worst['kv']:.2f} MiB (at llama.cpp's two "
          f"decimals), compute {worst['compute']:.1%} (where more than 1 MiB apart); {len(outside)} runs "
          f"outside 10 %")
    for how, (n, exact) in counts.items():
        print(f"compute by {how}: {n} runs, {exact} equal to llama.cpp's four decimals")
    for line in outside:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
