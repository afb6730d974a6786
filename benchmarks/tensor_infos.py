"""Cost per GGUF tensor info: ggscope.open versus gguf-py's GGUFReader, same run (issue 18, item 6).

Why: a GGUF header can hold many tensor infos (MoE models have tens of thousands);
opening must stay linear and cheap per record.  Each file is a GGUF v3 with one
metadata entry and N tensor infos named like llama.cpp's (``blk.{i}.ffn_up.weight``),
2 dimensions, F32, 8 elements each, at aligned offsets; written directly (struct),
so writing 100k records takes a second.

Timed in a fresh process per tool and N: the open (for ggscope: ``ggscope.open`` and
the tensor list; for gguf-py: ``GGUFReader`` and its ``tensors``), median of
``--runs``, and the process's peak RSS.  Printed: microseconds per tensor info and
MiB, side by side, and the ratio.

Run: python benchmarks/tensor_infos.py [--counts 1000,10000,100000] [--runs 3] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write(path: Path, n: int) -> None:
    parts = [b"GGUF", struct.pack("<IQQ", 3, n, 1), _str("general.architecture"), struct.pack("<I", 8), _str("llama")]
    for i in range(n):
        parts.append(_str(f"blk.{i // 8}.ffn_up_{i % 8}.weight") + struct.pack("<IQQIQ", 2, 4, 2, 0, i * 32))
    head = b"".join(parts)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.write(b"\0" * (n * 32))


MEASURE = r"""
import gc, json, resource, statistics, sys, time
path, tool, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
if tool == "ggscope":
    import ggscope
    ggscope.open(path).tensors                  # load and compile the spec once, as any process does
    for _ in range(runs):
        t = time.perf_counter()
        m = ggscope.open(path)
        n = len(m.tensors)
        times.append(time.perf_counter() - t)
        assert m.damage is None, m.damage
        del m
        gc.collect()                            # peak RSS: one open at a time
else:
    from gguf import GGUFReader
    for _ in range(runs):
        t = time.perf_counter()
        n = len(GGUFReader(path).tensors)
        times.append(time.perf_counter() - t)
        gc.collect()
print(json.dumps({"s": statistics.median(times), "n": n,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(path: Path, tool: str, runs: int, checkout: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=checkout or str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path), tool, str(runs)], check=True,
                         capture_output=True, text=True, env=env, cwd=path.parent).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--counts", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-gguf-py", action="store_true")
    ap.add_argument("--ggscope", default=None, help="a checkout of ggscope to time instead of this one "
                    "(e.g. an older commit, from `git archive`)")
    ap.add_argument("--baseline", default=None, help="also time this checkout of ggscope (e.g. the "
                    "commit before issue 18: `git archive 57d7c50 ggscope | tar -x -C DIR`)")
    args = ap.parse_args(argv)
    head = f"{'tensor infos':>12}  {'ggscope µs/info':>15} {'MiB':>6}"
    if args.baseline:
        head += f"   {'baseline µs/info':>16} {'MiB':>6}"
    print(head + f"   {'gguf-py µs/info':>15} {'MiB':>6}   ratio")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.counts.split(",")):
            path = Path(tmp) / f"infos-{n}.gguf"
            write(path, n)
            ours = measure(path, "ggscope", args.runs, args.ggscope)
            assert ours["n"] == n, ours
            line = f"{n:>12,}  {ours['s'] / n * 1e6:>15.2f} {ours['rss_mib']:>6.0f}"
            if args.baseline:
                base = measure(path, "ggscope", args.runs, args.baseline)
                line += f"   {base['s'] / n * 1e6:>16.2f} {base['rss_mib']:>6.0f}"
            if not args.skip_gguf_py:
                peer = measure(path, "gguf-py", args.runs)
                line += (f"   {peer['s'] / n * 1e6:>15.2f} {peer['rss_mib']:>6.0f}   "
                         f"ggscope {peer['s'] / ours['s']:.1f}x faster")
            print(line, flush=True)
            path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
