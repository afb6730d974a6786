"""Peak RSS of ``tensor_stats`` over one ~2 GB Q8_0 tensor (goal: under 300 MB), and over
one that just fits ``RAW_CACHE_BYTES`` (read once: its bytes are kept for pass two).

Why: statistics must stream; memory may not grow with the tensor.  The file is a GGUF
with a single Q8_0 tensor made of realistic blocks (a normal matrix quantized by
gguf-py) repeated and written in chunks, so the script itself never holds 2 GB.  The
measurement runs in a fresh subprocess (``resource.getrusage`` peak RSS); the file is
deleted afterwards.  The second line is the price of reading a tensor once: at most the
budget more than the first line, whatever the tensor.  Each is measured on both routes:
read(2) (a library caller) and through the file's map (``ggscope stats``: the CLI's
SIGBUS guard installed, ``changes.reads_through_map``), whose mapped pages go back per
chunk above the budget and per tensor within it.

    python benchmarks/stats_memory.py [--gib 2.0] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROW = 4096                    # elements per row (ne[0])
BLOCK = 34                    # Q8_0 bytes per 32 elements


def write(path: str, gib: float) -> int:
    from gguf.quants import quantize
    from gguf import GGMLQuantizationType as Q
    tile = quantize(np.random.default_rng(0).standard_normal((256, ROW)).astype(np.float32),
                    Q.Q8_0).tobytes()                      # 256 rows, ~1.1 MB
    rows_per_tile = 256
    tiles = max(1, int(gib * (1 << 30) / len(tile)))       # (rounded down: a budget is not overshot)
    rows = tiles * rows_per_tile
    name = b"w"
    header = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
    info = struct.pack("<Q", len(name)) + name + struct.pack("<I", 2) + struct.pack("<QQ", ROW, rows) \
        + struct.pack("<I", 8) + struct.pack("<Q", 0)
    head = header + info
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for _ in range(tiles):
            f.write(tile)
    return rows * ROW


CHILD = """
import contextlib, json, resource, sys, time, ggscope
from ggscope.source import changes
block = contextlib.nullcontext()
if sys.argv[2] == "map":            # as `ggscope stats` runs: the guard first, then through the map
    changes.guard_mapped_reads()
    block = changes.reads_through_map()
mf = ggscope.open(sys.argv[1]); t = mf.tensor("w")
with block:
    t0 = time.perf_counter(); s = t.stats(); dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "count": s["count"], "std": s["std"]}))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gib", type=float, default=2.0, help="tensor size in GiB (default 2)")
    p.add_argument("--dir", default=None, help="where to write the temporary file")
    a = p.parse_args(argv)
    from ggscope.stats.tensors import RAW_CACHE_BYTES
    for gib, what in ((a.gib, "streamed"), (RAW_CACHE_BYTES / (1 << 30), "fits RAW_CACHE_BYTES: read once")):
        fd, path = tempfile.mkstemp(suffix=".gguf", dir=a.dir)
        os.close(fd)
        try:
            n = write(path, gib)
            for route, how in (("read", "read(2), a library caller"), ("map", "through the map, as `ggscope stats`")):
                out = subprocess.run([sys.executable, "-c", CHILD, path, route], capture_output=True, text=True,
                                     check=True)
                r = json.loads(out.stdout)
                size = os.path.getsize(path)
                print(f"Q8_0 tensor ({what}; {how}): {n} elements, {size / (1 << 20):.0f} MiB file; tensor_stats "
                      f"{r['seconds']:.2f} s ({n / r['seconds'] / 1e9:.2f} G elem/s), peak RSS {r['rss_mb']:.0f} MB")
        finally:
            os.unlink(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
