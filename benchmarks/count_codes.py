"""Code counting (``kernels.count_codes``, behind F16/BF16/I8/I16 statistics) on
constant, on normal (weight-like), on random and on partly zero data.

Why: with one table, every element of a constant tensor (all zeros: padding, a freshly
initialised or pruned weight) increments the same counter, and each increment waits for
the previous one's store (a store-to-load dependency): about 0.15 G elem/s where random
codes run at over 1 G elem/s.  Counting into interleaved sub-tables removes the chain.

Measured in one process, one thread, over 32 M F16 codes counted in the chunks
``ggscope.stats.tensors`` uses (``DEFAULT_CHUNK_ELEMS``), median of N, side by side:

* one table: the single-counter loop as it was before (compiled here with numba);
* ggscope: ``kernels.count_codes`` into the table shape ``stats`` gives it;
* numpy: ``np.bincount`` (the reference the tests compare with).

Run: python benchmarks/count_codes.py [--elems 33554432] [--runs 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elems", type=int, default=32 << 20)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    import numba

    from ggscope.stats import kernels
    from ggscope.stats.counted import code_table
    from ggscope.stats.tensors import DEFAULT_CHUNK_ELEMS

    @numba.njit(nogil=True)
    def one_table(codes, counts):
        for i in range(codes.size):
            counts[codes[i]] += 1

    data = {
        "all zeros": np.zeros(args.elems, np.uint16),
        "normal": (np.random.default_rng(0).standard_normal(args.elems, np.float32) * 0.02)
                  .astype(np.float16).view(np.uint16),
        "random": np.random.default_rng(0).integers(0, 1 << 16, args.elems, dtype=np.uint16),
    }
    rng = np.random.default_rng(1)
    data["half zero"] = np.where(rng.random(args.elems) < 0.5, 0, data["normal"]).astype(np.uint16)
    data["90% zero"] = np.where(rng.random(args.elems) < 0.9, 0, data["normal"]).astype(np.uint16)

    def timed(fn, codes) -> float:
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            for s in range(0, codes.size, DEFAULT_CHUNK_ELEMS):
                fn(codes[s:s + DEFAULT_CHUNK_ELEMS])
            times.append(time.perf_counter() - t)
        return codes.size / statistics.median(times) / 1e9

    print(f"{args.elems:,} F16 codes, one thread, G elem/s (median of {args.runs})")
    print(f"{'data':<10} {'one table':>10} {'ggscope':>10} {'numpy':>10}")
    for name, codes in data.items():
        want = np.bincount(codes, minlength=1 << 16)
        flat = np.zeros(1 << 16, np.int32)
        one_table(codes[:16], flat)
        flat[:] = 0
        table = code_table(1 << 16, np.int32)
        kernels.count_codes(codes[:16], table)
        table[:] = 0
        g_one = timed(lambda c: one_table(c, flat), codes)
        g_new = timed(lambda c: kernels.count_codes(c, table), codes)
        g_np = timed(lambda c: np.bincount(c, minlength=1 << 16), codes)
        assert np.array_equal(flat, want * args.runs)
        assert np.array_equal(table.sum(axis=0)[:1 << 16], want * args.runs)
        print(f"{name:<10} {g_one:10.2f} {g_new:10.2f} {g_np:10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
