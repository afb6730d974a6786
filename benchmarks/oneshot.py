"""One-shot commands: ``ggscope stats FILE TENSOR`` vs ``ggscope info FILE`` vs a gguf-py process.

Why: issue 18's goal -- with a warm kernel cache ``ggscope stats FILE TENSOR`` costs at
most ``ggscope info FILE`` + 0.3 s, and the first run on a fresh install (empty cache)
no more than a gguf-py process doing the same (open, dequantize the tensor, numpy
min/max/mean/std).  Every figure is the wall time of a new process, best of
``--repeat``, all in the same run:

* ``info``: ``ggscope info FILE``;
* ``stats warm``: ``ggscope stats FILE TENSOR`` with the user cache already filled;
* ``stats cold``: the same with ``NUMBA_CACHE_DIR`` pointing at a new empty directory
  each time (what a fresh install pays: compiling whatever kernels the tensor needs);
* ``gguf-py``: ``python -c`` with GGUFReader + dequantize + numpy statistics.

Two tensors: a small one (the shipped example model's ``blk.0.attn_q.weight``, below
``stats.JIT_MIN_ELEMS``: numpy kernels, numba not loaded) and a large one (a 16 Mi
element Q8_0 tensor written here with gguf-py: the compiled kernels).

    python benchmarks/oneshot.py [--repeat 5]
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
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"

PEER = """
import sys
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
r = GGUFReader(sys.argv[1])
t = next(t for t in r.tensors if t.name == sys.argv[2])
x = dequantize(t.data, t.tensor_type)
print(x.min(), x.max(), x.mean(), x.std())
"""


def wall(cmd: list[str], env: dict[str, str] | None = None, fresh_cache: bool = False) -> float:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as cache:
        if fresh_cache:
            env["NUMBA_CACHE_DIR"] = cache
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def best(repeat: int, *args, **kw) -> float:
    return min(wall(*args, **kw) for _ in range(repeat))


def large_file(work: Path) -> Path:
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFWriter
    from gguf.quants import quantize
    path = work / "large-q8_0.gguf"
    x = np.random.default_rng(3).standard_normal((4096, 4096), dtype=np.float32) * np.float32(0.02)
    g = GGUFWriter(str(path), "llama")
    g.add_tensor("w", quantize(x, Q.Q8_0), raw_dtype=Q.Q8_0)
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    py = sys.executable
    cli = [py, "-m", "ggscope"]
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("small", EXAMPLE, "blk.0.attn_q.weight"), ("large", large_file(Path(tmp)), "w")]
        print(f"{'tensor':7} {'info':>7} {'stats warm':>11} {'stats cold':>11} {'gguf-py':>8}   "
              f"{'warm - info':>11} {'cold / gguf-py':>14}   (seconds, best of {a.repeat})")
        for label, path, name in cases:
            wall(cli + ["stats", str(path), name])                 # fill the user cache
            info = best(a.repeat, cli + ["info", str(path)])
            warm = best(a.repeat, cli + ["stats", str(path), name])
            cold = best(max(1, a.repeat // 2), cli + ["stats", str(path), name], fresh_cache=True)
            peer = best(a.repeat, [py, "-c", PEER, str(path), name])
            print(f"{label:7} {info:7.2f} {warm:11.2f} {cold:11.2f} {peer:8.2f}   {warm - info:+11.2f} "
                  f"{cold / peer:13.2f}x", flush=True)


if __name__ == "__main__":
    main()
