"""validate against info on the files that made the rules non-linear (issue 23, item 6).

Cases (each written directly with struct):

* ``tensors``: a GGUF v3 with N tensor infos (default 100,000; a 9.6 MB file) whose
  names are not llama's, so every tensor gets a GG501 finding;
* ``arch``: a GGUF whose ``general.architecture`` is a 1 MiB string (and two keys
  under it), which the schema rule used to compile into regular expressions;
* ``strings``: one metadata array of 16 M empty strings (134 MB).

For each case ``ggscope info`` and ``ggscope validate`` run in fresh processes
(median of ``--runs``; peak RSS from the child's rusage), for this checkout and, with
``--baseline DIR``, for another checkout side by side in the same run (e.g. the commit
before the change: ``git archive 003c678 ggscope | tar -x -C DIR``).  Printed: seconds,
MiB, the validate/info ratio, and the load average before and after.  The goals:
validate within 3x info on ``tensors``; ``arch`` costs what reading it costs;
``strings`` within 2x the file size in memory.

Run: python benchmarks/linear_rules.py [--runs 3] [--n 100000] [--arch-bytes 1048576] [--baseline DIR]
     [--cases tensors,arch,strings]
"""
from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def write_tensors(path: Path, n: int) -> None:
    parts = [b"GGUF", struct.pack("<IQQ", 3, n, 1), _s(b"general.architecture"), struct.pack("<I", 8), _s(b"llama")]
    for i in range(n):
        parts.append(_s(f"layers.{i}.wq".encode()) + struct.pack("<IQQIQ", 2, 4, 2, 0, i * 32))
    head = b"".join(parts)
    head += b"\0" * (-len(head) % 32)
    path.write_bytes(head + b"\0" * (n * 32))


def write_arch(path: Path, size: int = 1 << 20) -> None:
    arch = b"a" * size
    kvs = [_s(b"general.architecture") + struct.pack("<I", 8) + _s(arch),
           _s(arch + b".context_length") + struct.pack("<II", 4, 4096),
           _s(arch + b".block_count") + struct.pack("<II", 4, 2)]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))


def write_strings(path: Path, n: int = 1 << 24) -> None:
    with open(path, "wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 2))
        fh.write(_s(b"general.architecture") + struct.pack("<I", 8) + _s(b"llama"))
        fh.write(_s(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, n))
        chunk = struct.pack("<Q", 0) * (1 << 16)
        for _ in range(n >> 16):
            fh.write(chunk)


CHILD = r"""
import resource, runpy, sys
sys.argv = ["ggscope", sys.argv[1], sys.argv[2]]
code = 0
try:
    runpy.run_module("ggscope", run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
sys.stderr.write(f"\nPEAK_KIB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\n")
sys.exit(code)
"""


def run(checkout: Path, command: str, path: Path) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of ``ggscope COMMAND PATH`` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, command, str(path)], env=env, cwd=path.parent,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)   # cwd: no checkout on sys.path[0]
    s = time.perf_counter() - t
    if proc.returncode not in (0, 1) or "PEAK_KIB" not in proc.stderr:
        raise SystemExit(f"{command} {path.name} ({checkout}): exit {proc.returncode}: {proc.stderr[-400:]}")
    return s, int(proc.stderr.rsplit("PEAK_KIB", 1)[1].split()[0]) / 1024


def measure(checkout: Path, command: str, path: Path, runs: int) -> tuple[float, float]:
    got = [run(checkout, command, path) for _ in range(runs)]
    return statistics.median(g[0] for g in got), max(g[1] for g in got)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n", type=int, default=100_000, help="tensor infos in the 'tensors' case")
    ap.add_argument("--cases", default="tensors,arch,strings")
    ap.add_argument("--arch-bytes", type=int, default=1 << 20, help="length of the 'arch' case's name")
    ap.add_argument("--baseline", default=None, help="another checkout of ggscope, timed side by side")
    args = ap.parse_args(argv)
    writers = {"tensors": lambda p: write_tensors(p, args.n), "arch": lambda p: write_arch(p, args.arch_bytes), "strings": write_strings}
    checkouts = [("this", REPO)] + ([("baseline", Path(args.baseline))] if args.baseline else [])
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':<8} {'checkout':<9} {'MB':>6}  {'info s':>7} {'MiB':>6}  {'validate s':>10} {'MiB':>6}  ratio")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            path = Path(tmp) / f"{case}.gguf"
            writers[case](path)
            mb = path.stat().st_size / 1e6
            for label, checkout in checkouts:
                info = measure(checkout, "info", path, args.runs)
                val = measure(checkout, "validate", path, args.runs)
                print(f"{case:<8} {label:<9} {mb:>6.1f}  {info[0]:>7.2f} {info[1]:>6.0f}  {val[0]:>10.2f} "
                      f"{val[1]:>6.0f}  {val[0] / info[0]:.1f}x", flush=True)
            path.unlink()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
