"""What a whole ``ggscope run`` process costs next to its forward pass, phase by phase, as the work grows.

Why: issue 28 item 5 -- "the whole ``run`` process must cost at most 1.3x its forward
pass, measured by a benchmark on the real Gemma 3" (``run --tokens`` once spent 8.7 of
its 16.6 s building a SentencePiece merge table to print five candidates).  Each round
starts a fresh interpreter running ``ggscope run MODEL ...`` exactly as the command line
does (``ggscope.cli.main``); the child wraps the functions ``run`` calls with timers
before it starts, so the breakdown is of the real command:

* start-up: interpreter, imports (with compiled bytecode, as an installed package has
  it: a warm-up round fills a private ``PYTHONPYCACHEPREFIX``), the argument parser;
* open (``ggscope.open``), refusal (llama.cpp's loader verdict, the rules' predictor),
  tokenizer (reading the vocabulary, building the encoder, encoding the prompt);
* load (``forward.load_weights``), forward (the architecture's ``forward``: the pass the
  ratio is over), report (everything after: top-k, candidates' text, printing);
* exit: from the end of ``cli.main`` to the parent seeing the process gone (wall clock
  only): the interpreter's finalization -- where a reference cycle holding the weights
  would be paid, freed by the collector at exit -- and the kernel's teardown;
* total: the parent's wall clock from starting the child to its exit, and the child's
  CPU seconds (user + system, every thread).

The cases grow the work: the 6-token prompt (as ``--prompt`` and as ``--tokens``) and
prompts of 64 and 256 tokens cut from a fixed English text (fixtures/perplexity/corpus.txt,
the longest run of its words that the model's vocabulary makes at most that many tokens,
BOS included).  Per case: ``total / forward`` on the wall clock and in CPU seconds (the
process's, every thread; steadier on a shared machine, where a waiting process's wall
clock says more about its neighbours) and the fixed cost, ``total - forward`` in seconds.
The ratio is not one number: the fixed cost is paid once while the forward pass grows
with the prompt.  Its floor is measured in the same rounds and printed: a bare
``python -c pass`` plus ``import numpy`` (the interpreter and the one library a numpy
forward pass cannot do without).  That floor bounds the ratio from below for very short
prompts - ``(floor + forward) / forward`` is printed per case as the best any Python
implementation could show - so for six tokens, whose forward pass costs about what the
interpreter and numpy cost to start, 1.3x is out of reach, and the goal is judged where
the forward pass is the work.

Each side's round with the least CPU is shown, and per case the least fixed cost of
all rounds (a busy machine only adds to it: the steadiest side-by-side figure).  ``--baseline DIR`` measures another
source tree (e.g. ``git archive`` of main, its extensions built) in the same interleaved
rounds; the load average is printed before and after.

    python benchmarks/run_cost.py --model gemma-3-270m-q4_k_m.gguf [--baseline DIR] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import load_average  # noqa: E402
PROMPT = "The capital of France is"
TOKENS = "2,818,5279,529,7001,563"          # the prompt's ids in Gemma 3's vocabulary
CORPUS = REPO / "fixtures" / "perplexity" / "corpus.txt"
LENGTHS = (64, 256)                          # the longer prompts, in tokens (BOS included)
FLOOR = {"python -c pass": "pass", "+ import numpy": "import numpy"}

CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
phases = {}

cpu = {}

def timed(owner, name, key):
    real = getattr(owner, name)
    def wrapper(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return real(*a, **k)
        finally:
            phases[key] = phases.get(key, 0.0) + time.perf_counter() - t
            cpu[key] = cpu.get(key, 0.0) + time.process_time() - c
    setattr(owner, name, wrapper)

import ggscope
from ggscope import cli, forward
from ggscope.commands import run as run_cmd
from ggscope.forward import decoder
from ggscope.model import tokenizer
from ggscope.rules import refusal
timed(run_cmd, "open_or_report", "open")
timed(refusal, "loader_refusal", "refusal")
timed(tokenizer, "load", "tokenizer")
timed(tokenizer.Tokenizer, "encode", "tokenizer")
timed(forward, "load_weights", "load")
timed(decoder, "forward", "forward")
t_main, c_main = time.perf_counter(), time.process_time()
try:
    status = cli.main(sys.argv[2:])
except SystemExit as exc:
    status = exc.code
t_end, c_end = time.perf_counter(), time.process_time()
phases["startup"] = t_main - t_start
phases["report"] = (t_end - t_main) - sum(v for k, v in phases.items() if k != "startup")
cpu["startup"] = c_main                      # the interpreter's own start-up included
cpu["report"] = (c_end - c_main) - sum(v for k, v in cpu.items() if k != "startup")
phases["cpu"] = cpu
phases["status"] = status
phases["module"] = ggscope.__file__
phases["exit_at"] = time.time()              # the parent's clock at our exit, less this: teardown
with open(sys.argv[1], "w") as fh:
    json.dump(phases, fh)
"""

PHASES = ["startup", "open", "refusal", "tokenizer", "load", "forward", "report"]


def child(tree: Path, argv: list[str], cache: Path) -> dict | str:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(cache), OMP_NUM_THREADS="2",
               OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, str(out), *argv], capture_output=True, text=True,
                              env=env, cwd=tree, timeout=1800)
        wall, gone = time.perf_counter() - t, time.time()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode or not out.stat().st_size:
            return ((proc.stderr.strip().splitlines() or ["failed"])[-1])[:60]
        res = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    if not Path(res["module"]).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"a child meant to run the ggscope of {tree} imported {res['module']}")
    res["total"] = wall
    res["exit"] = max(0.0, gone - res.pop("exit_at"))
    res["cpu"]["total"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res


def prompt_of(model: str, n: int) -> tuple[str, int]:
    """The longest run of the corpus's first words that ``model``'s vocabulary makes at
    most ``n`` tokens (BOS included), and its count (this tree's tokenizer, in process)."""
    sys.path.insert(0, str(REPO))
    import ggscope
    from ggscope.model.tokenizer import load
    tok = load(ggscope.open(model))
    words = CORPUS.read_text(encoding="utf-8").split(" ")
    lo, hi = 1, len(words)
    while lo < hi:                                 # the most words within n tokens
        mid = (lo + hi + 1) // 2
        if len(tok.encode(" ".join(words[:mid]))) <= n:
            lo = mid
        else:
            hi = mid - 1
    text = " ".join(words[:lo])
    return text, len(tok.encode(text))


def floor(code: str, cache: Path) -> tuple[float, float]:
    """A bare interpreter running ``code``: (wall, CPU) seconds."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the real Gemma 3 270M GGUF (read-only)")
    ap.add_argument("--baseline", metavar="DIR", help="another ggscope source tree, measured alongside")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds; each side's fastest is shown")
    args = ap.parse_args()
    model = str(Path(args.model).resolve())
    trees = [("ggscope", REPO)]
    if args.baseline:
        trees.append(("before", Path(args.baseline).resolve()))
    cases = [("6 --prompt", ["run", model, "--prompt", PROMPT, "--top-k", "5"]),
             ("6 --tokens", ["run", model, "--tokens", TOKENS, "--top-k", "5"])]
    for n in LENGTHS:
        text, got = prompt_of(model, n)
        cases.append((f"{got} --prompt", ["run", model, "--prompt", text, "--top-k", "5"]))
    print(f"model: {Path(model).name}; load average before: {load_average()}")
    floors: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ggscope-runcost-") as tmp:
        caches = {name: Path(tmp) / name for name, _ in trees}
        for name, tree in trees:                       # warm-up: bytecode, page cache
            child(tree, cases[1][1], caches[name])
        for code in FLOOR.values():                    # numpy's bytecode in the floor's own cache
            floor(code, Path(tmp) / "floor")
        runs: dict[tuple[str, str], list] = {}
        for _ in range(max(1, args.repeat)):
            for label, code in FLOOR.items():
                floors.setdefault(label, []).append(floor(code, Path(tmp) / "floor"))
            for case, argv in cases:
                for name, tree in trees:
                    runs.setdefault((case, name), []).append(child(tree, argv, caches[name]))
    floor_wall, floor_cpu = (min(w for w, _ in floors["+ import numpy"]), min(c for _, c in floors["+ import numpy"]))
    print("floor (least of the rounds): " + "; ".join(
        f"{label} {min(w for w, _ in got):.3f} s wall, {min(c for _, c in got):.3f} s CPU" for label, got in floors.items()))
    head = "".join(f"{p:>10}" for p in PHASES)
    print(f"{'case':<12} {'tree':<8} {'clock':<5}{head}{'exit':>7}{'total':>9}{'fixed':>8}  total/forward  floor-bound")
    for (case, name), got in runs.items():
        ok = [r for r in got if isinstance(r, dict)]
        if not ok:
            print(f"{case:<12} {name:<8} n/a: {got[0]}")
            continue
        r = min(ok, key=lambda r: r["cpu"]["total"])
        for clock, d, fl in (("wall", r, floor_wall), ("cpu", r["cpu"], floor_cpu)):
            cells = "".join(f"{d.get(p, 0.0):10.2f}" for p in PHASES)
            cells += f"{r['exit']:7.3f}" if clock == "wall" else f"{'':7}"
            fwd = d["forward"]
            print(f"{case:<12} {name:<8} {clock:<5}{cells}{d['total']:9.2f}{d['total'] - fwd:8.2f}  "
                  f"{d['total'] / fwd:12.2f}x  {(fl + fwd) / fwd:10.2f}x")
    print("fixed cost, the least of the rounds (noise only adds to it), CPU seconds:")
    for case, _ in cases:
        cells = []
        for name, _ in trees:
            ok = [r["cpu"] for r in runs[(case, name)] if isinstance(r, dict)]
            cells.append(f"{name} {min(r['total'] - r['forward'] for r in ok):.3f}" if ok else f"{name} n/a")
        print(f"  {case:<12} " + "   ".join(cells) + f"   (floor {floor_cpu:.3f})")
    print(f"load average after: {load_average()}  (seconds; least CPU of {max(1, args.repeat)} rounds; "
          "fixed = total - forward; floor-bound = (floor + forward) / forward, the floor being "
          "python -c pass + import numpy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
