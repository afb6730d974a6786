"""One-shot commands: ``ggscope stats FILE TENSOR`` vs ``ggscope info FILE`` vs a gguf-py process.

Why: issue 18's goal -- with warm caches ``ggscope stats FILE TENSOR`` costs at most
``ggscope info FILE`` + 0.3 s, and the first run on a fresh install no more than a
gguf-py process doing the same (open, dequantize the tensor, numpy
min/max/mean/std).  Every figure is the wall time of a new process, best of
``--repeat`` rounds (``stats cold`` with numba's compiled kernels: half as many);
each round runs every side once (the machine is shared: rounds spread a busy spell
over all sides alike):

* ``info``: ``ggscope info FILE``;
* ``stats warm``: ``ggscope stats FILE TENSOR`` with the user cache already filled;
* ``stats cold``: the same as a fresh install runs it: ``XDG_CACHE_HOME`` (the user
  cache directory, where ``ggscope.core.jit`` keeps numba's kernels) and ``NUMBA_CACHE_DIR``
  point at a new empty directory each time, so whatever is cached is compiled again;
* ``gguf-py``: ``python -c`` with GGUFReader + dequantize + numpy statistics.

Each tensor gets one row per engine (``--engines``): the kernels compiled at install
(``ggscope.stats._cstats``, when built) and numba's (``GGSCOPE_KERNELS=numba``); the
``kernels`` column says what actually ran, asked of a process that did the same work:
``C``, ``numba``, or ``numpy`` (numba's engine on a small tensor runs the numpy twin
and never loads numba, see ``ggscope.stats.tensors``).  ``--before DIR`` adds rows for another
ggscope source tree (a worktree of an older commit, its extension built in place) in
the same rounds.  ``--instructions`` also counts, with valgrind's callgrind, the
instructions each process executes (``OPENBLAS_NUM_THREADS=1``): a figure the other
sessions on the machine cannot disturb, for the rows that do not compile numba kernels.

The user caches of the warm rows live in a private directory filled by a first run, so
the figures do not depend on what the user's own cache holds.  Python compiles
ggscope's modules to bytecode first (``compileall``, into their ``__pycache__``), as
``pip install`` does: an install never pays that per process, and gguf-py's bytecode
is already in site-packages.

Two tensors: a small one (the shipped example model's ``blk.0.attn_q.weight``, below
``stats.JIT_MIN_ELEMS``) and a large one (a 16 Mi element Q8_0 tensor written here
with gguf-py: on numba's engine, the compiled kernels).

    python benchmarks/oneshot.py [--repeat 5] [--engines c,numba] [--before DIR] [--instructions]
"""
from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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

# which kernels `ggscope stats` runs for this tensor in this environment
PROBE = """
import sys
import ggscope
ggscope.open(sys.argv[1]).tensor(sys.argv[2]).stats()
try:
    from ggscope.stats import cstats
    c = cstats.available()
except ImportError:
    c = False
print("C" if c else "numba" if "numba" in sys.modules else "numpy")
"""


def environment(tree: Path, engine: str, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    env["XDG_CACHE_HOME"] = str(cache)
    env.pop("NUMBA_CACHE_DIR", None)           # ggscope.core.jit puts numba's cache under XDG_CACHE_HOME
    env.pop("GGSCOPE_KERNELS", None)
    if engine == "numba":
        env["GGSCOPE_KERNELS"] = "numba"
    return env


@contextlib.contextmanager
def prepared(env: dict[str, str], fresh_cache: bool) -> Iterator[tuple[dict[str, str], str]]:
    """The environment and an empty working directory (``python -m`` and ``-c`` import
    from the working directory first: it must not hold a ggscope)."""
    env = dict(env)
    with tempfile.TemporaryDirectory() as cache:
        if fresh_cache:                        # what a fresh install pays
            env["XDG_CACHE_HOME"] = cache
            env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
        yield env, cache


def wall(cmd: list[str], env: dict[str, str], fresh_cache: bool = False) -> float:
    with prepared(env, fresh_cache) as (env, cwd):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def instructions(cmd: list[str], env: dict[str, str], fresh_cache: bool = False) -> int | None:
    """Instructions the process executes (valgrind's callgrind), or None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with prepared(env, fresh_cache) as (env, cwd):
        env["OPENBLAS_NUM_THREADS"] = "1"     # no BLAS threads spinning at numpy's import
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                           cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
    return int(m.group(1).replace(",", "")) if r.returncode == 0 and m else None


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
    ap.add_argument("--engines", default="c,numba", help="kernels to measure: c (ggscope._cstats), numba")
    ap.add_argument("--before", type=Path, help="another ggscope source tree measured in the same rounds")
    ap.add_argument("--instructions", action="store_true",
                    help="also count the instructions of info, cold stats and gguf-py with valgrind (no noise)")
    a = ap.parse_args()
    py = sys.executable
    cli = [py, "-m", "ggscope"]
    trees = [("now", REPO)] + ([("before", a.before.resolve())] if a.before else [])
    for _, tree in trees:
        compileall.compile_dir(str(tree / "ggscope"), quiet=1)
    engines = [e.strip().lower() for e in a.engines.split(",") if e.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("small", EXAMPLE, "blk.0.attn_q.weight"), ("large", large_file(Path(tmp)), "w")]
        code = f"{'code':7} " if a.before else ""
        print(f"{'tensor':7} {code}{'kernels':8} {'info':>6} {'stats warm':>11} {'stats cold':>11} {'gguf-py':>8}   "
              f"{'warm - info':>11} {'cold / gguf-py':>14}   (seconds, best of {a.repeat})")
        counts = []
        for label, path, name in cases:
            rows = []
            for tag, tree in trees:
                for engine in engines:
                    env = environment(tree, engine, Path(tmp) / f"cache-{tag}-{engine}")
                    ran = subprocess.run([py, "-c", PROBE, str(path), name], env=env, cwd=tmp, check=True,
                                         capture_output=True, text=True).stdout.strip()
                    if engine == "c" and ran != "C":
                        print(f"{label:7} {'':8} C kernels not built in {tree} ({ran} ran): row skipped")
                        continue
                    wall(cli + ["stats", str(path), name], env)          # fill this row's user cache
                    rows.append((tag, ran, env, {"info": [], "warm": [], "cold": []}))
            peer = []
            for r in range(a.repeat):                 # rounds: every side once per round
                peer.append(wall([py, "-c", PEER, str(path), name], dict(os.environ)))
                for _, ran, env, t in rows:
                    t["info"].append(wall(cli + ["info", str(path)], env))
                    t["warm"].append(wall(cli + ["stats", str(path), name], env))
                    if ran != "numba" or r < max(1, a.repeat // 2):    # compiling numba's takes seconds
                        t["cold"].append(wall(cli + ["stats", str(path), name], env, fresh_cache=True))
            p = min(peer)
            for tag, ran, _, t in rows:
                info, warm, cold = min(t["info"]), min(t["warm"]), min(t["cold"])
                code = f"{tag:7} " if a.before else ""
                print(f"{label:7} {code}{ran:8} {info:6.2f} {warm:11.2f} {cold:11.2f} {p:8.2f}   {warm - info:+11.2f} "
                      f"{cold / p:13.2f}x", flush=True)
            if a.instructions:
                counts.append((label, path, name, rows))
        for label, path, name, rows in counts:
            peer_i = instructions([py, "-c", PEER, str(path), name], dict(os.environ))
            if peer_i is None:
                print("instructions not counted: no valgrind")
                break
            for tag, ran, env, _ in rows:
                code = f"{tag:7} " if a.before else ""
                if ran == "numba":                    # compiling under valgrind takes many minutes
                    print(f"{label:7} {code}{ran:8} instructions not counted (numba compiles)")
                    continue
                info_i = instructions(cli + ["info", str(path)], env)
                cold_i = instructions(cli + ["stats", str(path), name], env, fresh_cache=True)
                print(f"{label:7} {code}{ran:8} instructions: info {info_i / 1e6:.0f} M, stats cold {cold_i / 1e6:.0f} M, "
                      f"gguf-py {peer_i / 1e6:.0f} M -> cold / gguf-py {cold_i / peer_i:.2f}x", flush=True)


if __name__ == "__main__":
    main()
