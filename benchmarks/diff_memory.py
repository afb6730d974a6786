"""Peak RSS of ``ggscope diff`` on two ~2 GB files: memory must not grow with file size.

Why: design.md promises that diffs stream in bounded chunks; the issue's budget is
300 MB peak RSS for two 2 GB files.  This script writes two GGUF v3 files of realistic
Q8_0 data (random int8 quants, f16 scales around 0.01) in chunks, where B keeps every
fourth tensor byte-identical (the hash/bytes fast path) and re-quantizes the rest
(the numeric path), runs ``diff_files`` in a fresh interpreter, prints that process's
peak RSS and the wall time, and deletes the files.

    python benchmarks/diff_memory.py [--gib 2] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

Q8_0, BLOCK, BLOCK_BYTES = 8, 32, 34
NE0, NE1 = 4096, 4096                     # one tensor: 16.8 M elements, 17.8 MB of Q8_0
ROWS_PER_WRITE = 256


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _q8_rows(rng: np.random.Generator, n_rows: int) -> bytes:
    blocks = np.empty((n_rows * NE0 // BLOCK, BLOCK_BYTES), np.uint8)
    blocks[:, :2] = (rng.standard_normal(blocks.shape[0]) * 0.002 + 0.01).astype("<f2").view(np.uint8).reshape(-1, 2)
    blocks[:, 2:] = np.clip(rng.standard_normal((blocks.shape[0], BLOCK)) * 40, -127, 127).astype(np.int8).view(np.uint8)
    return blocks.tobytes()


def write_file(path: str, n_tensors: int, seed_of) -> None:
    nbytes = NE0 * NE1 // BLOCK * BLOCK_BYTES
    head = b"GGUF" + struct.pack("<IQQ", 3, n_tensors, 1)
    head += _str("general.architecture") + struct.pack("<I", 8) + _str("llama")
    for i in range(n_tensors):
        head += _str(f"blk.{i}.ffn.weight") + struct.pack("<I", 2) + struct.pack("<QQ", NE0, NE1)
        head += struct.pack("<IQ", Q8_0, i * nbytes)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as fh:
        fh.write(head)
        for i in range(n_tensors):
            rng = np.random.default_rng(seed_of(i))
            for _ in range(0, NE1, ROWS_PER_WRITE):
                fh.write(_q8_rows(rng, ROWS_PER_WRITE))


CHILD = """
import resource, sys, time, ggscope
from ggscope.diff import diff_files
t = time.perf_counter()
r = diff_files(ggscope.open(sys.argv[1]), ggscope.open(sys.argv[2]))
dt = time.perf_counter() - t
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, dt, r.counts()["identical"], r.counts()["changed"])
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=2.0, help="size of each file in GiB (default 2)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where to write the two files")
    args = ap.parse_args()
    n_tensors = max(1, int(args.gib * 2**30 // (NE0 * NE1 // BLOCK * BLOCK_BYTES)))
    a = os.path.join(args.dir, f"ggscope-diffbench-a-{os.getpid()}.gguf")
    b = os.path.join(args.dir, f"ggscope-diffbench-b-{os.getpid()}.gguf")
    try:
        t = time.perf_counter()
        write_file(a, n_tensors, lambda i: i)
        write_file(b, n_tensors, lambda i: i if i % 4 == 0 else 10_000 + i)
        print(f"wrote 2 × {os.path.getsize(a) / 2**30:.2f} GiB ({n_tensors} Q8_0 tensors of {NE0}×{NE1}) "
              f"in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        out = subprocess.run([sys.executable, "-c", CHILD, a, b], check=True, capture_output=True, text=True)
        rss_kib, secs, n_same, n_changed = out.stdout.split()
        print(f"peak RSS {int(rss_kib) / 1024:.0f} MiB; diff took {float(secs):.1f} s "
              f"({n_same} identical, {n_changed} changed tensors)")
    finally:
        for p in (a, b):
            if os.path.exists(p):
                os.remove(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
