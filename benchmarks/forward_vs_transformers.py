"""ggscope's reference forward pass side by side with transformers' own GGUF path.

Why: issue 15 asks the numpy decoder to load and run a published-size model faster
than transformers does from the same GGUF file, in at most half its peak memory, and an
8-token prompt through a ~270M-parameter model in under 5 s on a 2-core machine.  Both
sides run in fresh interpreters, one file at a time, so each peak RSS (``ru_maxrss``)
is that side's alone:

* ggscope: ``ggscope.open`` + the architecture's ``load`` (weights decoded by the
  compiled decoders, up to ``forward.loading.DECODED_BUDGET`` of them kept as float32, the
  rest packed and decoded per product) + one ``forward`` over the prompt;
* transformers: ``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)`` + one
  forward over the same prompt under ``torch.no_grad``.

Files: the tiny models of ../shared/fixtures/llama-cpp-arch (F32 and Q8_0; the
architectures transformers' GGUF loader knows), and a gemma3-shaped model of random
weights with gemma-3-270m's shapes (262144 × 640 embedding, 18 layers, 4 query heads and
1 key/value head of 256, FFN 2048; 268 M parameters) quantized the way llama.cpp's
Q4_K_M recipe quantizes that model: Q4_K, and Q6_K on the more-bits layers' ffn_down;
tensors whose rows (640) are not a multiple of 256 fall back as llama.cpp does (Q4_K ->
Q5_0, Q6_K -> Q8_0, so the tied embedding is Q8_0).  gguf-py cannot quantize K types,
so blocks are random bytes with sane f16 scales; the file is written to a temporary
directory and deleted afterwards.

``--baseline DIR`` adds a column: another ggscope source tree (a git worktree of an
older commit, e.g. ``git worktree add /tmp/base-57d7c50 57d7c50``) measured in the same
run, in the same fresh-process way, its children started in that tree with only it on
``PYTHONPATH`` (each child reports which ``ggscope`` it imported, and the run stops if
it is not the one asked for).  Issue 18 item 7's "before" is 57d7c50, the parent of the
commit that dropped ``WeightMapper.take``'s second float32 copy; that tree has no
gemma3 forward pass (its cells for that file say so) and no compiled extensions (which
weight loading does not use: ``dequantize`` is numpy in both trees).  So with
``--baseline`` the run also writes a llama-shaped model both trees load, with about
234 M parameters (32000 x 1024 untied embedding and output, 15 layers, 16 query and 4
key/value heads of 64, FFN 2816; F32 norms), twice: F16 matrices of N(0, 0.02) values
(decoding is little more than a widening, so the copy weighs most) and Q8_0 blocks of
random codes with f16 scales sized for weights ~N(0, 0.02); both on all three sides.
Each cell shows load seconds, forward seconds, peak RSS (MiB) after the load and after
the forward; with ``--repeat N`` each side runs N times, interleaved, and the run with
the least load + forward time is shown.

    python benchmarks/forward_vs_transformers.py [--no-tiny] [--no-big] [--threads 2] [--dir /tmp]
                                                [--baseline DIR] [--repeat 1]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
ARCH_DIR = REPO / ".." / "shared" / "fixtures" / "llama-cpp-arch"
TINY = ["Llama-140K", "Qwen2-140K", "Qwen3-164K", "Gemma2-119K", "Gemma3-317K", "Phi-3-140K",
        "StarCoder2-133K", "GPT2-149K", "Qwen3MoE-4x116K", "DeepSeek2-4x138K"]
PROMPT_TINY = [317, 10, 20, 30, 40, 50, 60, 70]
PROMPT_BIG = [2, 651, 6037, 603, 476, 2121, 576, 10]         # 8 ids, BOS first

GGSCOPE = """
import json, resource, sys, time
t0 = time.perf_counter()
import ggscope
from ggscope.forward import module_for
mf = ggscope.open(sys.argv[1])
mod = module_for(mf)
w = mod.load(mf)
t1 = time.perf_counter()
rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
logits, _ = mod.forward(w, json.loads(sys.argv[2]))
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "forward": t2 - t1, "rss_load": rss_load,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "top1": int(logits.argmax()), "module": ggscope.__file__}))
"""

TRANSFORMERS = """
import json, os, resource, sys, time
t0 = time.perf_counter()
import torch
from transformers import AutoModelForCausalLM
torch.set_num_threads(int(sys.argv[3]))
path = sys.argv[1]
m = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
t1 = time.perf_counter()
rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
with torch.no_grad():
    logits = m(torch.tensor([json.loads(sys.argv[2])])).logits[0, -1]
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "forward": t2 - t1, "rss_load": rss_load,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "top1": int(logits.argmax())}))
"""


def _child(code: str, path: Path, tokens: list[int], threads: int, tree: Path = REPO) -> dict | str:
    """One fresh interpreter; ``tree`` is the ggscope source tree it imports.  Its working
    directory is ``tree`` too: ``python -c`` puts the working directory ahead of
    ``PYTHONPATH`` on ``sys.path``."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), PYTHONPATH=str(tree), TOKENIZERS_PARALLELISM="false")
    try:
        out = subprocess.run([sys.executable, "-c", code, str(path), json.dumps(tokens), str(threads)],
                             capture_output=True, text=True, env=env, timeout=900, cwd=tree)
    except subprocess.TimeoutExpired:
        return "timed out"
    if out.returncode:
        if "ignore_mismatched_sizes" in out.stderr:
            return "its config mismatches the weights"
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        if "UnsupportedArchitecture" in last:
            return "unsupported architecture"
        return last.split(": ", 1)[-1][:40]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    module = res.get("module")
    if module is not None and not Path(module).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"a child meant to run the ggscope of {tree} imported {module}")
    return res


def _best_of(runs: list) -> dict | str:
    """The run least disturbed by the shared machine (least load + forward), else the failure."""
    ok = [r for r in runs if isinstance(r, dict)]
    return min(ok, key=lambda r: r["load"] + r["forward"]) if ok else runs[0]


from random_models import write_gemma3_270m, write_llama_234m  # noqa: E402 - benchmarks/ is on the path

# ---- report ---------------------------------------------------------------------------------

CELL = 30          # "load s, forward s, MiB after load, peak MiB"


def _cell(r) -> str:
    if isinstance(r, str):
        return f"{'n/a: ' + r:<{CELL}.{CELL}}"
    return f"{r['load']:6.2f} {r['forward']:6.3f} {r['rss_load']:7.0f} {r['rss']:7.0f} "


def _ratio(now, other, what: str) -> str:
    if not (isinstance(now, dict) and isinstance(other, dict)):
        return ""
    if what == "before":
        return (f"before/now: load {other['load'] / now['load']:4.1f}x, "
                f"peak {other['rss'] - now['rss']:+.0f} MiB")
    t_o, t_t = now["load"] + now["forward"], other["load"] + other["forward"]
    return f"{t_t / t_o:5.1f}x faster, {now['rss'] / other['rss']:4.2f}x memory"


class Bench:
    """The sides of one run: ggscope, optionally an older ggscope tree, transformers."""

    def __init__(self, threads: int, baseline: Path | None, repeat: int) -> None:
        self.threads, self.baseline, self.repeat = threads, baseline, repeat

    def header(self) -> None:
        sides = ["ggscope"] + (["ggscope before"] if self.baseline else []) + ["transformers"]
        cols = " ".join(f"{name:<{CELL}.{CELL}}" for name in sides)
        unit = " ".join(f"{'load s  fwd s  MiB@load peak':<{CELL}}" for _ in sides)
        print(f"{'file':<34} {cols} ratio (transformers / ggscope)")
        print(f"{'':<34} {unit}")

    def row(self, path: Path, tokens: list[int]) -> tuple:
        """Every side ``repeat`` times, interleaved (a busy spell of the machine hits all
        alike); prints the row and returns (ggscope, before, transformers)."""
        runs: dict[str, list] = {"now": [], "before": [], "theirs": []}
        for _ in range(self.repeat):
            runs["now"].append(_child(GGSCOPE, path, tokens, self.threads))
            if self.baseline:
                runs["before"].append(_child(GGSCOPE, path, tokens, self.threads, self.baseline))
            runs["theirs"].append(_child(TRANSFORMERS, path, tokens, self.threads))
        now, theirs = _best_of(runs["now"]), _best_of(runs["theirs"])
        before = _best_of(runs["before"]) if self.baseline else None
        cells = [_cell(now)] + ([_cell(before)] if self.baseline else []) + [_cell(theirs)]
        ratio = "; ".join(r for r in (_ratio(now, theirs, "theirs"), _ratio(now, before, "before")) if r)
        print(f"{path.stem:<34} {' '.join(cells)} {ratio}", flush=True)
        return now, before, theirs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-tiny", action="store_true", help="skip the tiny llama-cpp-arch models")
    ap.add_argument("--no-big", action="store_true", help="skip the 270M-parameter Q4_K_M model")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS / torch threads for both sides (1: the machine is shared, and "
                         "contended threads make small products slower, for both)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where to write the big models")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another ggscope source tree (e.g. a git worktree of an older commit) measured "
                         "in the same run as a column of its own; adds the 234M llama-shaped F16 and Q8_0 models")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per side and file, interleaved; the least disturbed one is shown")
    args = ap.parse_args()
    baseline = None
    if args.baseline:
        baseline = Path(args.baseline).resolve()
        if not (baseline / "ggscope" / "__init__.py").is_file():
            ap.error(f"--baseline {args.baseline}: no ggscope package there")
        print(f"(ggscope before: {baseline}"
              + (f", commit {_commit(baseline)}" if _commit(baseline) else "") + ")")
    print(f"(ggscope: {REPO}" + (f", commit {_commit(REPO)}" if _commit(REPO) else "") + ")")
    bench = Bench(args.threads, baseline, max(1, args.repeat))
    bench.header()
    if not args.no_tiny:
        if not ARCH_DIR.is_dir():
            print(f"(tiny models skipped: {ARCH_DIR.resolve()} not found)")
        for stem in TINY:
            for enc in ("F32", "Q8_0"):
                path = ARCH_DIR / f"Tiny-{stem}-v1.0-{enc}.gguf"
                if path.is_file():
                    bench.row(path.resolve(), PROMPT_TINY)
    big = [] if args.no_big else [("Random-Gemma3-270M-Q4_K_M.gguf", write_gemma3_270m)]
    if baseline:
        big += [(f"Random-Llama-234M-{enc}.gguf", functools.partial(write_llama_234m, encoding=enc))
                for enc in ("F16", "Q8_0")]
    for name, write in big:
        tmp = Path(tempfile.mkdtemp(prefix="ggscope-fwdbench-", dir=args.dir))
        try:
            path = tmp / name
            t = time.perf_counter()
            n = write(path)
            print(f"(wrote {path.name}: {n / 1e6:.0f} M parameters, "
                  f"{path.stat().st_size / 2**20:.0f} MiB, in {time.perf_counter() - t:.1f} s)")
            ours, _, theirs = bench.row(path, PROMPT_BIG)
            if write is write_gemma3_270m and isinstance(ours, dict):
                total = ours["load"] + ours["forward"]
                print(f"8-token prompt through the 270M model: {total:.2f} s load + forward "
                      f"(goal < 5 s); top-1 ggscope {ours['top1']}"
                      + (f", transformers {theirs['top1']}" if isinstance(theirs, dict) else ""))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _commit(tree: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


if __name__ == "__main__":
    sys.exit(main())
