"""``ggscope diff`` starting at once: the pair sums on C vs numba, and one-shot diff walls.

Why: issue 18 -- every command starting at once.  ``diff``'s per-chunk sums
(``ggscope.diff.sums.pair_sums``) ran on numba only, so a one-shot ``ggscope diff``
paid numba's import and, on a fresh install, its compilation; they now run on
``csrc/_cpairs.c`` when the install built it.  Side by side in one run:

1. throughput of ``pair_sums`` on ``--pairs`` float32 pairs (default 32 Mi), in this
   process after a warm-up, best of ``--repeat``: the C engine, the numba engine
   (``GGSCOPE_KERNELS=numba``; its code is the route every diff took before), and numpy
   float64 arithmetic (the oracle the tests use) as the peer;
2. wall time of a new process (best of ``--repeat``) over two files of one 4096 x 4096
   tensor each, A F16 and B the same values quantized to Q8_0 by gguf-py (16.8 M element
   pairs): ``ggscope info A`` (the floor), ``ggscope diff A B`` on the C engine, on numba
   with an empty cache (``NUMBA_CACHE_DIR`` a new directory: a fresh install, before)
   and with a warm one (before, every later run), and a gguf-py process computing the
   same metrics (GGUFReader + dequantize + numpy float64).

``--baseline DIR`` adds the same diff, cold and warm, run on another checkout of
ggscope (e.g. ``git archive 527adff ggscope | tar -x -C DIR``: the code before
``_cpairs``).

    python benchmarks/diff_oneshot.py [--repeat 3] [--pairs 33554432] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

PEER = """
import sys
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
x, y = (dequantize(GGUFReader(p).tensors[0].data, GGUFReader(p).tensors[0].tensor_type).astype(np.float64).ravel()
        for p in sys.argv[1:3])
d = y - x
print(np.abs(d).max(), np.sqrt((d @ d) / d.size), np.sqrt((d @ d) / (x @ x)), (x @ y) / np.sqrt((x @ x) * (y @ y)))
"""


def throughput(n: int, repeat: int) -> None:
    sys.path.insert(0, str(REPO))
    from ggscope.diff import sums as diff_sums
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n, dtype=np.float32)
    y = x + np.float32(0.01) * rng.standard_normal(n, dtype=np.float32)

    def oracle(a: np.ndarray, b: np.ndarray) -> tuple:
        a, b = a.astype(np.float64), b.astype(np.float64)
        d = b - a
        return a @ a, b @ b, a @ b, d @ d, np.abs(d).max()

    def sums_on(engine: str):
        def run(a: np.ndarray, b: np.ndarray) -> tuple:
            os.environ["GGSCOPE_KERNELS"] = engine
            return diff_sums.pair_sums(a, b)
        return run

    engines = [("C (_cpairs)", sums_on("c"))] if diff_sums._cpairs is not None else []
    engines += [("numba", sums_on("numba")), ("numpy float64", oracle)]
    print(f"pair_sums over {n / 2**20:.0f} Mi float32 pairs, one thread, best of {repeat}:")
    base = None
    for label, fn in engines:
        fn(x, y)                                                   # warm-up (numba compiles here)
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            fn(x, y)
            best = min(best, time.perf_counter() - t)
        base = base or best
        print(f"  {label:14} {best * 1e3:8.1f} ms  {n / best / 1e9:6.2f} G pairs/s  ({best / base:.2f}x the first)")
    os.environ.pop("GGSCOPE_KERNELS", None)


def files(work: Path) -> tuple[Path, Path]:
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFWriter
    from gguf.quants import quantize
    x = (np.random.default_rng(3).standard_normal((4096, 4096), dtype=np.float32) * np.float32(0.02))
    out = []
    for name, typ, data in (("a-f16.gguf", Q.F16, x.astype(np.float16)), ("b-q8_0.gguf", Q.Q8_0, quantize(x, Q.Q8_0))):
        g = GGUFWriter(str(work / name), "llama")
        g.add_tensor("w", data, raw_dtype=typ)
        g.write_header_to_file()
        g.write_kv_data_to_file()
        g.write_tensors_to_file()
        g.close()
        out.append(work / name)
    return out[0], out[1]


def wall(cmd: list[str], kernels: str | None = None, cache: str | None = None, tree: str | None = None) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree or REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("GGSCOPE_KERNELS", None)
    if kernels:
        env["GGSCOPE_KERNELS"] = kernels
    with tempfile.TemporaryDirectory() as fresh:
        env["NUMBA_CACHE_DIR"] = cache or fresh
        t0 = time.perf_counter()
        # cwd: not a checkout, whose ggscope/ would shadow PYTHONPATH's for `python -m`
        rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, cwd=fresh).returncode
        if rc not in (0, 1):                                       # 1: differences found
            raise SystemExit(f"{' '.join(cmd)} exited {rc}")
        return time.perf_counter() - t0


def oneshot(repeat: int, baseline: str | None) -> None:
    py = sys.executable
    cli = [py, "-m", "ggscope"]
    with tempfile.TemporaryDirectory() as tmp:
        a, b = files(Path(tmp))
        warm = os.path.join(tmp, "numba-cache")
        wall(cli + ["diff", str(a), str(b)], "numba", warm)            # fill the numba cache once
        rows = [("info A", lambda: wall(cli + ["info", str(a)])),
                ("diff, C engine", lambda: wall(cli + ["diff", str(a), str(b)])),
                ("diff, numba cold", lambda: wall(cli + ["diff", str(a), str(b)], "numba")),
                ("diff, numba warm", lambda: wall(cli + ["diff", str(a), str(b)], "numba", warm)),
                ("gguf-py + numpy", lambda: wall([py, "-c", PEER, str(a), str(b)]))]
        if baseline:
            old = os.path.join(tmp, "numba-cache-baseline")
            wall(cli + ["diff", str(a), str(b)], None, old, baseline)
            rows += [("baseline cold", lambda: wall(cli + ["diff", str(a), str(b)], None, None, baseline)),
                     ("baseline warm", lambda: wall(cli + ["diff", str(a), str(b)], None, old, baseline))]
        print(f"one-shot process, F16 vs Q8_0, 4096 x 4096 (16.8 M pairs), seconds, best of {repeat}:")
        got = {}
        for label, run in rows:
            got[label] = min(run() for _ in range(repeat))
            print(f"  {label:17} {got[label]:6.2f}", flush=True)
        c = got["diff, C engine"]
        print(f"  C diff - info: {c - got['info A']:+.2f} s; numba cold / C: {got['diff, numba cold'] / c:.2f}x; "
              f"numba warm / C: {got['diff, numba warm'] / c:.2f}x; C / gguf-py: {c / got['gguf-py + numpy']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=32 << 20)
    ap.add_argument("--baseline", default=None, help="also time the diff on this checkout of ggscope")
    a = ap.parse_args()
    throughput(a.pairs, a.repeat)
    oneshot(a.repeat, a.baseline)


if __name__ == "__main__":
    main()
