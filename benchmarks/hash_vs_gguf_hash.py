"""Hashing throughput: ``ggscope hash`` (one and two threads) vs llama.cpp's ``llama-gguf-hash``.

Why: issue 30 item 5 -- hashing must stream at the speed of the hash and the disk with
bounded memory.  ``llama-gguf-hash`` (examples/gguf-hash of the llama.cpp that
llama-cpp-python 0.3.36 vendors) loads the whole file into memory
(``gguf_init_from_file`` with ``no_alloc = false``) and hashes it in one thread;
ggscope reads windows with ``preadv`` into reused buffers.  Both sides run as
commands on the same files with the same options in the same rounds; each side's
stdout must be the same bytes (checked every run).  Figures: best wall time of
``--repeat`` rounds (each round runs every side once, so a busy spell on the shared
machine hits all sides), tensor data per second, the ratio to the tool (>1 = ggscope
faster), and peak resident memory (``wait4``).  The page cache is warm (a first
untimed run reads each file); the load average is printed before and after.

    python benchmarks/hash_vs_gguf_hash.py --tool PATH/llama-gguf-hash FILE... \\
        [--make-big PATH --big-gib 3] [--options "default;--sha256 --no-layer;--all"] [--repeat 3]

``--make-big PATH`` first writes a GGUF file of ``--big-gib`` GiB of random Q8_0 and F16
tensor data with gguf-py (kept for later runs) and adds it to the files.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def make_big(path: Path, gib: float) -> Path:
    if path.is_file():
        return path
    import numpy as np
    import gguf
    rng = np.random.default_rng(30)
    n = max(1, int(gib * 2**30) // (64 << 20))
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("hash benchmark")
    shapes = []
    for i in range(n):                     # 64 MiB each: F16 (8192 x 4096), Q8_0 (15420 rows of 4352 bytes)
        if i % 2:
            qt, byte_shape, dtype = gguf.GGMLQuantizationType.Q8_0, (15420, 4096 // 32 * 34), np.uint8
        else:
            qt, byte_shape, dtype = gguf.GGMLQuantizationType.F16, (8192, 4096), np.float16
        nbytes = byte_shape[0] * byte_shape[1] * np.dtype(dtype).itemsize
        shapes.append(nbytes)
        w.add_tensor_info(f"blk.{i}.weight", byte_shape, np.dtype(dtype), nbytes, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for nbytes in shapes:
        w.write_tensor_data(rng.integers(0, 256, nbytes, dtype=np.uint8))
    w.close()
    return path


def run(cmd: list[str], cwd: Path) -> tuple[float, int, bytes, int]:
    """(seconds, peak RSS in KiB, stdout, exit status) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, ru.ru_maxrss, out, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--tool", default=os.environ.get("LLAMA_GGUF_HASH"), help="path of llama-gguf-hash")
    ap.add_argument("--make-big", type=Path, default=None)
    ap.add_argument("--big-gib", type=float, default=3.0)
    ap.add_argument("--options", default="default;--sha256 --no-layer;--all",
                    help="option sets separated by ';' ('default': none, xxh64)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not a.tool:
        ap.error("give --tool or set LLAMA_GGUF_HASH")
    files = list(a.files)
    if a.make_big:
        files.append(make_big(a.make_big, a.big_gib))
    env_py = [sys.executable, "-m", "ggscope", "hash"]
    sides = [("llama-gguf-hash", 1, lambda o: [a.tool, *o]),
             ("ggscope", 1, lambda o: [*env_py, "--threads", "1", *o]),
             ("ggscope", 2, lambda o: [*env_py, "--threads", "2", *o])]
    os.environ["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} cores)")
    print(f"{'file':<28} {'GiB':>5} {'options':<20} {'side':<16} {'thr':>3} {'best s':>7} {'GB/s':>6} "
          f"{'vs tool':>7} {'peak RSS MiB':>12} same")
    for f in files:
        f = f.resolve()
        import ggscope
        with ggscope.open(f) as mf:
            data = sum(t.nbytes for t in mf.tensors)
        for opt in a.options.split(";"):
            opt = "" if opt.strip() == "default" else opt.strip()
            o = [*opt.split(), f.name]
            for _, _, cmd in sides:          # warm the page cache and the imports
                run(cmd(o), f.parent)
            best = {i: (1e9, 0) for i in range(len(sides))}
            outs = {}
            for _ in range(a.repeat):
                for i, (_, _, cmd) in enumerate(sides):
                    dt, rss, out, code = run(cmd(o), f.parent)
                    outs[i] = (out, code)
                    best[i] = (min(best[i][0], dt), max(best[i][1], rss))
            tool_t = best[0][0]
            for i, (name, thr, _) in enumerate(sides):
                dt, rss = best[i]
                same = "yes" if outs[i] == outs[0] else "NO"
                print(f"{f.name[:28]:<28} {f.stat().st_size / 2**30:5.2f} {opt or '(xxh64)':<20} {name:<16} {thr:>3} "
                      f"{dt:7.2f} {data / dt / 1e9:6.2f} {tool_t / dt:7.2f} {rss / 1024:12.0f} {same}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
