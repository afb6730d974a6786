"""``ggscope stats`` of a whole real model: this tree against another, in one run.

Why: a real model is hundreds of tensors, most of them small (gemma-3-270m: 236, of
which 109 norms of 256-640 F32 values and 117 of 0.16-1.3 M quantized values), so the
per-call cost of ``tensor_stats`` -- tables, readers, Python -- weighs as much as the
decoding.  Each side runs ``ggscope stats --json MODEL`` in a fresh process (start-up
included, as a user pays it), rounds interleaved so a busy spell of the machine hits
both alike; the table gives the best wall and CPU seconds of each side, the time
inside ``tensor_stats`` alone (best of the rounds, in-process, all tensors), and the
load average at start and end.  Both outputs must agree.

    python benchmarks/stats_model.py MODEL.gguf [--before TREE] [--repeat 5] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

INNER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import ggscope
from ggscope.stats.tensors import tensor_stats
mf = ggscope.open(sys.argv[2])
best = float("inf")
for _ in range(int(sys.argv[4])):
    t0 = time.perf_counter()
    for t in mf.tensors:
        tensor_stats(t, threads=int(sys.argv[3]))
    best = min(best, time.perf_counter() - t0)
print(json.dumps({"seconds": best, "tensors": len(mf.tensors), "elements": sum(t.n_elements for t in mf.tensors)}))
"""


def command(tree: str, model: str, threads: int) -> tuple[float, float, bytes]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "ggscope.cli", "stats", "--json", "--threads", str(threads), model],
                         check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=tree), cwd=tree).stdout
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), out


MOMENTS = ("mean", "std", "abs_mean")


def agreement(a: list[dict], b: list[dict]) -> str:
    """Exact agreement but for the moments, which may differ by float32 rounding (sums
    over other pieces): within a millionth of the tensor's spread."""
    bad = []
    for x, y in zip(a, b):
        spread = max(x["std"] or 0.0, 1e-30)
        if ({k: v for k, v in x.items() if k not in MOMENTS} != {k: v for k, v in y.items() if k not in MOMENTS}
                or any(abs((x[k] or 0.0) - (y[k] or 0.0)) > 1e-6 * spread for k in MOMENTS)):
            bad.append(x["name"])
    return f"outputs differ: {bad[:5]}" if bad or len(a) != len(b) else "outputs agree (moments within 1e-6 std)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--before", help="another ggscope source tree (e.g. a worktree of an older commit)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    trees = ([("before", a.before)] if a.before else []) + [("ggscope", str(REPO))]
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    best = {name: [float("inf"), float("inf")] for name, _ in trees}
    inner = {name: float("inf") for name, _ in trees}
    outs: dict[str, dict] = {}
    for _ in range(a.repeat):
        for name, tree in trees:
            wall, cpu, out = command(tree, a.model, a.threads)
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
            outs[name] = json.loads(out)["tensors"]
            r = json.loads(subprocess.run([sys.executable, "-c", INNER, tree, a.model, str(a.threads), "1"],
                                          check=True, capture_output=True, text=True).stdout)
            inner[name] = min(inner[name], r["seconds"])
    print(f"{Path(a.model).name}: {r['tensors']} tensors, {r['elements'] / 1e6:.0f} M elements; "
          f"ggscope stats --json, {a.threads} threads, best of {a.repeat} fresh processes")
    print(f"{'tree':8} {'wall s':>7} {'CPU s':>7} {'in tensor_stats s':>18}")
    for name, (wall, cpu) in best.items():
        print(f"{name:8} {wall:7.3f} {cpu:7.3f} {inner[name]:18.3f}")
    if len(outs) == 2:
        print(agreement(*outs.values()))
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
