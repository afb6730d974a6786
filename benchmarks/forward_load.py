"""Loading a model for the forward pass, side by side with reading its bytes and with transformers.

Why: issue 27 item 5 -- "the forward pass loads weights through the compiled decoders:
load of a 1.26 G-parameter Q8_0 model within 2x of reading its bytes, peak memory at most
half of transformers'".  Each side runs in a fresh interpreter, one after the other, and
before each the file's pages are dropped from the page cache
(``posix_fadvise(POSIX_FADV_DONTNEED)``: clean pages of a file anyone may read), so every
side starts cold-ish from the same state (and with the compiled bytecode an installed
package has: a warm-up import fills a private ``PYTHONPYCACHEPREFIX`` per tree):

* read: the file read whole with ``readinto`` in 64 MiB chunks into one buffer (the floor
  any loader pays: the bytes must come in);
* ggscope: ``ggscope.open`` + ``ggscope.forward.load_weights`` (default mode: what
  ``run`` and ``diff --logits`` build), including the interpreter's imports;
* ggscope before (``--baseline DIR``: another source tree, e.g. ``git archive`` of main
  unpacked somewhere), the same code in that tree;
* transformers: ``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)`` (gguf-py
  dequantizes every tensor to float32 numpy, torch builds the model), imports included.

Each cell is seconds and peak RSS (``ru_maxrss``, MiB); the ratios are against reading
the bytes (time) and against transformers (memory); ``--repeat N`` interleaves N rounds
and keeps each side's fastest.  The load average is printed before and after.

The file: ``random_models.write_llama_234m(path, "Q8_0", shape=LLAMA_1260M)``
writes the 1.26 G-parameter llama-shaped Q8_0 model (1.34 GB) the goal names; pass it
with ``--file`` (``--write PATH`` writes it first).

    python benchmarks/forward_load.py --file MODEL.gguf [--baseline DIR] [--repeat 2]
                                      [--no-transformers] [--write PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import load_average  # noqa: E402

READ = """
import json, os, resource, sys, time
t0 = time.perf_counter()
buf = bytearray(64 << 20)
view = memoryview(buf)
n = 0
with open(sys.argv[1], "rb", buffering=0) as fh:
    while True:
        got = fh.readinto(view)
        if not got:
            break
        n += got
t1 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "bytes": n}))
"""

GGSCOPE = """
import json, resource, sys, time
t0 = time.perf_counter()
import ggscope
from ggscope.forward import load_weights
mf = ggscope.open(sys.argv[1])
module, w = load_weights(mf)
t1 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "module": ggscope.__file__}))
"""

WARM = "import json, ggscope, ggscope.forward.decoder, ggscope.forward.loading; print(json.dumps({}))"

TRANSFORMERS = """
import json, os, resource, sys, time
t0 = time.perf_counter()
import torch
from transformers import AutoModelForCausalLM
torch.set_num_threads(int(sys.argv[2]))
path = sys.argv[1]
m = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
t1 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def drop_cache(path: Path) -> None:
    """Ask the kernel to forget the file's cached pages (no effect on dirty or mapped ones)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def child(code: str, path: Path, threads: int, tree: Path = REPO, cache: Path | None = None) -> dict | str:
    """One fresh interpreter, the file's pages dropped first; ``cache`` holds the compiled
    bytecode of ``tree`` (an installed package has it)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), PYTHONPATH=str(tree), TOKENIZERS_PARALLELISM="false")
    if cache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    drop_cache(path)
    try:
        out = subprocess.run([sys.executable, "-c", code, str(path), str(threads)], capture_output=True,
                             text=True, env=env, timeout=1800, cwd=tree)
    except subprocess.TimeoutExpired:
        return "timed out"
    if out.returncode:
        return ((out.stderr.strip().splitlines() or ["failed"])[-1])[:60]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    module = res.get("module")
    if module is not None and not Path(module).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"a child meant to run the ggscope of {tree} imported {module}")
    return res


def cell(r) -> str:
    return f"{'n/a: ' + r:<22.22}" if isinstance(r, str) else f"{r['load']:7.2f} s {r['rss']:8.0f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", required=True, help="the model to load (see --write)")
    ap.add_argument("--write", action="store_true",
                    help="write the 1.26 G-parameter llama-shaped Q8_0 model to --file first")
    ap.add_argument("--baseline", metavar="DIR", help="another ggscope source tree measured as a column")
    ap.add_argument("--no-transformers", action="store_true", help="leave transformers' side out")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds; each side's fastest is shown")
    ap.add_argument("--threads", type=int, default=2, help="torch / BLAS threads (default 2)")
    args = ap.parse_args()
    path = Path(args.file).resolve()
    if args.write:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from random_models import LLAMA_1260M, write_llama_234m
        n = write_llama_234m(path, "Q8_0", shape=LLAMA_1260M)
        print(f"(wrote {path.name}: {n / 1e9:.3f} G parameters)")
    if not path.is_file():
        ap.error(f"--file {args.file}: no such file")
    sides: list[tuple[str, str, Path]] = [("read", READ, REPO), ("ggscope", GGSCOPE, REPO)]
    if args.baseline:
        base = Path(args.baseline).resolve()
        if not (base / "ggscope" / "__init__.py").is_file():
            ap.error(f"--baseline {args.baseline}: no ggscope package there")
        sides.append(("ggscope before", GGSCOPE, base))
    if not args.no_transformers:
        sides.append(("transformers", TRANSFORMERS, REPO))
    print(f"file: {path.name}, {path.stat().st_size / 2**20:.0f} MiB; load average before: {load_average()}")
    runs: dict[str, list] = {name: [] for name, _, _ in sides}
    with tempfile.TemporaryDirectory(prefix="ggscope-fload-") as tmp:
        caches = {name: Path(tmp) / name.replace(" ", "-") for name, _, _ in sides}
        for name, code, tree in sides:
            if code is GGSCOPE:                        # warm-up: the bytecode an install compiles
                child(WARM, path, args.threads, tree, caches[name])
        for _ in range(max(1, args.repeat)):
            for name, code, tree in sides:
                runs[name].append(child(code, path, args.threads, tree, caches[name]))
    best = {}
    for name, got in runs.items():
        ok = [r for r in got if isinstance(r, dict)]
        best[name] = min(ok, key=lambda r: r["load"]) if ok else got[0]
    read, theirs = best["read"], best.get("transformers")
    print(f"{'side':<16} {'load':>9} {'peak RSS':>12}  {'load / read':>11}  {'RSS / transformers':>18}")
    for name, r in best.items():
        ratio_t = ratio_m = ""
        if isinstance(r, dict) and isinstance(read, dict):
            ratio_t = f"{r['load'] / read['load']:10.2f}x"
        if isinstance(r, dict) and isinstance(theirs, dict):
            ratio_m = f"{r['rss'] / theirs['rss']:17.2f}x"
        print(f"{name:<16} {cell(r)}  {ratio_t:>11}  {ratio_m:>18}")
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
