"""Peak RSS of ``ggscope diff`` on two ~2 GB files: memory must not grow with file size.

Why: design.md promises that diffs stream in bounded chunks; the issue's budget is
300 MB peak RSS for two 2 GB files.  This script writes two GGUF v3 files of realistic
Q8_0 data (random int8 quants, f16 scales around 0.01) in chunks, where B keeps every
fourth tensor byte-identical (the hash/bytes fast path) and re-quantizes the rest
(the numeric path), runs ``diff_files`` in a fresh interpreter, prints that process's
peak RSS and the wall time, and deletes the files.

    python benchmarks/diff_memory.py [--gib 2] [--dir /tmp]

``--f16-q8`` instead times the numeric path the issue measured (issue 18, item 4): A
holds F16 tensors, B the same values quantized to Q8_0 by gguf-py (32 tensors of
4096 x 4096: 537 M element pairs).  Side by side in one run, each in a fresh process:
the diff now (one compiled pass per chunk pair, ``ggscope.diff.sums``), the diff
before (float64 copies and four ``einsum`` passes per chunk, the old ``_Acc.add``), and
decoding both files' chunks alone (the floor).

With ``--ggml DIR`` (a ggml or llama.cpp source tree, as for stats_vs_ggml.py, which
builds it natively), the peer of issue 27: ggml's C decoding both files' tensor data
in one thread (F16 through ggml-cpu's row conversion, Q8_0 through to_float, data
already in memory; the harness also keeps a min/max/sum, which C does at a fraction of
the decode cost), and the diff's ratio to it.  The load average is printed.

    python benchmarks/diff_memory.py --f16-q8 [--tensors 32] [--dir /tmp] [--baseline DIR] [--ggml DIR]
"""
from __future__ import annotations

import argparse
import json
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


def write_f16_q8(path_a: str, path_b: str, n_tensors: int) -> None:
    """A: F16 tensors of normal values; B: the same values as Q8_0 (gguf-py's quantizer)."""
    from gguf.quants import quantize
    from gguf import GGMLQuantizationType as Q
    f16_bytes, q8_bytes = NE0 * NE1 * 2, NE0 * NE1 // BLOCK * BLOCK_BYTES
    heads = []
    for code, nbytes in ((1, f16_bytes), (Q8_0, q8_bytes)):
        head = b"GGUF" + struct.pack("<IQQ", 3, n_tensors, 1)
        head += _str("general.architecture") + struct.pack("<I", 8) + _str("llama")
        for i in range(n_tensors):
            head += _str(f"blk.{i}.ffn.weight") + struct.pack("<I", 2) + struct.pack("<QQ", NE0, NE1)
            head += struct.pack("<IQ", code, i * nbytes)
        heads.append(head + b"\0" * (-len(head) % 32))
    with open(path_a, "wb") as fa, open(path_b, "wb") as fb:
        fa.write(heads[0])
        fb.write(heads[1])
        rng = np.random.default_rng(7)
        for _ in range(n_tensors):
            for _ in range(0, NE1, 1024):
                x = (rng.standard_normal((1024, NE0)) * 0.02).astype(np.float16)
                fa.write(x.tobytes())
                fb.write(quantize(x.astype(np.float32), Q.Q8_0).tobytes())


TIMED = """
import resource, sys, time, ggscope
import numpy as np
from ggscope.diff import compare as diff   # where _Acc lives
mode = sys.argv[3]
if mode == "before":
    import math

    def add(self, x32, y32):    # _Acc.add before issue 18: float64 copies, four einsum passes
        x, y = x32.astype(np.float64), y32.astype(np.float64)
        aa, bb = float(np.einsum("i,i->", x, x)), float(np.einsum("i,i->", y, y))
        if not (math.isfinite(aa) and math.isfinite(bb)):
            fin = np.isfinite(x) & np.isfinite(y)
            bad = ~fin
            self.nonfinite += int(bad.sum())
            xb, yb = x[bad], y[bad]
            self.nonfinite_mismatch += int((~((np.isnan(xb) & np.isnan(yb)) | (xb == yb))).sum())
            x, y = x[fin], y[fin]
            aa, bb = float(np.einsum("i,i->", x, x)), float(np.einsum("i,i->", y, y))
        self.aa += aa
        self.bb += bb
        self.ab += float(np.einsum("i,i->", x, y))
        d = np.subtract(y, x, out=y)
        self.dd += float(np.einsum("i,i->", d, d))
        if d.size:
            self.max_abs = max(self.max_abs, float(d.max()), float(-d.min()))
        self.n += int(x.size)
    diff._Acc.add = add
elif mode == "decode-only":
    diff._Acc.add = lambda self, x, y: None
a, b = ggscope.open(sys.argv[1]), ggscope.open(sys.argv[2])
if mode == "now":
    diff._Acc().add(np.zeros(8, np.float32), np.zeros(8, np.float32))   # load the compiled kernel
t = time.perf_counter()
r = diff.diff_files(a, b)
dt = time.perf_counter() - t
n = sum(td.n_elements or 0 for td in r.tensors)
rel = max(td.rel_rmse for td in r.tensors) if mode != "decode-only" else float("nan")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, dt, n, rel)
"""


def c_decode(args, a: str, b: str) -> float | None:
    """Seconds ggml's C takes to decode both files' tensor data, one thread (None: no peer)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ggml_peer import build_harness
    from pathlib import Path
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    harness, why = build_harness(args.ggml, work)
    if harness is None:
        print(f"C decode peer skipped: {why}", file=sys.stderr)
        return None
    total = 0.0
    n = args.tensors * NE0 * NE1
    for path, name, nbytes in ((a, "f16", n * 2), (b, "q8_0", n // BLOCK * BLOCK_BYTES)):
        raw = work / f"diff-{name}.bin"
        with open(path, "rb") as src, open(raw, "wb") as dst:      # the tensor data: the file's tail
            src.seek(os.path.getsize(path) - nbytes)
            while chunk := src.read(64 << 20):
                dst.write(chunk)
        out = subprocess.run([str(harness), "stats", name, str(n), str(raw), "2"], check=True,
                             capture_output=True, text=True).stdout
        raw.unlink()
        secs = json.loads(out)["seconds"]
        print(f"  ggml C decode of the {name} file: {secs:.2f} s ({n / secs / 1e9:.2f} G elem/s)")
        total += secs
    print(f"{'C decode':>12}: {total:6.2f} s for both files (ggml native, one thread)")
    return total


def f16_q8(args) -> int:
    a = os.path.join(args.dir, f"ggscope-diffbench-f16-{os.getpid()}.gguf")
    b = os.path.join(args.dir, f"ggscope-diffbench-q8-{os.getpid()}.gguf")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        t = time.perf_counter()
        write_f16_q8(a, b, args.tensors)
        print(f"wrote F16 ({os.path.getsize(a) / 2**30:.2f} GiB) and Q8_0 ({os.path.getsize(b) / 2**30:.2f} GiB), "
              f"{args.tensors} tensors of {NE0}x{NE1}, in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        print(f"load average {os.getloadavg()[0]:.2f}")
        c_secs = c_decode(args, a, b) if args.ggml else None
        runs = [("now", "now", env), ("before", "before", env), ("decode-only", "decode-only", env)]
        if args.baseline:     # the code of another checkout, as it was (one thread, numpy sums)
            runs.append(("baseline", "now", dict(env, PYTHONPATH=args.baseline)))
        for label, mode, run_env in runs:
            out = subprocess.run([sys.executable, "-c", TIMED, a, b, mode], check=True, capture_output=True,
                                 text=True, env=run_env, cwd=args.dir).stdout.split()
            rss, secs, n, rel = int(out[0]), float(out[1]), int(out[2]), float(out[3])
            vs = f", {secs / c_secs:.2f}x the C decode" if c_secs else ""
            print(f"{label:>12}: {secs:6.2f} s for {n / 1e6:.0f} M element pairs "
                  f"({n / secs / 1e9:.2f} G pairs/s), peak RSS {rss / 1024:.0f} MiB, max rel_rmse {rel:.3g}{vs}")
        print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        for p in (a, b):
            if os.path.exists(p):
                os.remove(p)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=2.0, help="size of each file in GiB (default 2)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where to write the two files")
    ap.add_argument("--f16-q8", action="store_true", help="time F16 against Q8_0 (see above)")
    ap.add_argument("--tensors", type=int, default=32, help="tensors of 4096x4096 for --f16-q8 (default 32)")
    ap.add_argument("--baseline", default=None, help="with --f16-q8, also time this checkout of ggscope "
                    "(e.g. `git archive 57d7c50 ggscope | tar -x -C DIR`)")
    ap.add_argument("--ggml", default=os.environ.get("GGML_SRC"),
                    help="with --f16-q8, ggml's source (see stats_vs_ggml.py): time ggml's C decoding both files")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ggscope-bench-ggml"),
                    help="where the ggml build and its data go (default under the system temp dir)")
    args = ap.parse_args()
    if args.f16_q8:
        return f16_q8(args)
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
