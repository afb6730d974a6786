"""``ggscope validate`` per file against ggml's C reader and against ``ggscope info`` (issue 27, item 3).

The peer: ggml's GGUF reader (``gguf_init_from_file`` with ``no_alloc``, then every
key-value pair and tensor info read through its API: benchmarks/ggml_read.c), linked
against ggml-base built the way a user of ggml on this machine builds it - Release,
``-march=native``, ``GGML_NATIVE=ON`` - by ``ggml_peer.build_harness`` (the same build
directory, reused).  ``--ggml`` names a ggml or llama.cpp source (e.g. the llama.cpp
vendored in llama-cpp-python 0.3.36), default ``$GGML_SRC``.

The files: the 12 real vocabulary files of ../shared/fixtures/llama-vocab (``--vocab``;
written by llama.cpp's converter, no tensors), any ``--model`` given (e.g. Gemma 3 270M
Q4_K_M), and ``--files`` small GGUF models written deterministically here
(``validate_folder.write_folder``: llama metadata, 4 tensors).

Measured in interleaved rounds (median of ``--rounds``), each tool in the same round and
each Python tool first in turn:

1. in-process, per file: the C reader's own time for the file (one C process reads all
   files, each timed inside it), ``ggscope info FILE`` and ``ggscope validate FILE`` run
   through ``ggscope.cli.main`` in one Python process (output discarded) after one untimed
   pass over all files - what a file costs once the interpreter is up and every lazy
   import and one-off table is in place (the C reader has none; their cost is in 2);
   beside the wall clock (1), the CPU time of the thread that runs the Python tools (1b):
   on a shared machine another process's load moves it least.  Each round takes the files
   in an order of its own (shuffled, seeded by the round; every tool the same order): a
   garbage collection falls on whichever file the allocation count reaches it in, and in
   one fixed order that is the same file every round, which the median then keeps (3.3 ms
   of a generation-1 collection on phi-3's validate in one order, on gpt-2's info in
   another);
2. whole processes, per vocabulary file: ``ggml_read FILE``, ``python -m ggscope info
   FILE``, ``python -m ggscope validate FILE`` - start-up included (issue 27 item 6 is
   start-up's own goal), with a bare ``python -c pass`` beside them; bytecode cached as an
   installed ggscope has it (``PYTHONPYCACHEPREFIX`` under ``--work``);
3. the folder: one process over all small files - ``ggml_read``, ``ggscope info``,
   ``ggscope validate --jobs 1``.

Printed: milliseconds, the ratios validate/C and validate/info (goal: <= 2 and <= 1.3),
the load average before and after; and what bounds validate/C from below: per file, the
parse through the spec engine and the rule set alone (``validate.runner.validate``, no
command line), measured in a child of the same rounds - on a small file that floor
alone is a few hundred times ggml's reader, so the 2x goal holds for real files only.  Nothing is written into the repository: the small
files and the build go to a temporary directory and ``--work``.

    python benchmarks/validate_vs_c.py [--ggml DIR] [--rounds 5] [--files 200]
                                       [--vocab DIR] [--model FILE ...] [--work DIR] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def build_reader(ggml: str | None, work: Path) -> tuple[Path | None, str]:
    """ggml_read linked against stats_vs_ggml's native ggml build, or (None, why not)."""
    from ggml_peer import build_harness
    harness, why = build_harness(ggml, work)
    if harness is None:
        return None, why
    build = harness.parent
    libdir = next((p.parent for p in build.glob("**/libggml-base.so")), None)
    src = Path(ggml)
    inc = next((p.parent for p in (src / "ggml" / "include" / "gguf.h", src / "include" / "gguf.h") if p.is_file()),
               None)
    if libdir is None or inc is None:
        return None, "no libggml-base.so or gguf.h found"
    exe = build / "ggml_read"
    try:
        subprocess.run(["cc", "-O3", "-march=native", "-o", str(exe), str(HERE / "ggml_read.c"), f"-I{inc}",
                        f"-L{libdir}", "-lggml-base", f"-Wl,-rpath,{libdir}"], check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        return None, f"compiling ggml_read failed: {exc.stderr.decode(errors='replace')[-400:]}"
    return exe, ""


def c_in_process(exe: Path, paths: list[Path]) -> list[float]:
    """Seconds the C reader spends on each file, timed inside one process."""
    out = subprocess.run([str(exe), *map(str, paths)], capture_output=True, text=True).stdout.splitlines()
    if len(out) != len(paths):
        raise SystemExit(f"ggml_read printed {len(out)} lines for {len(paths)} files")
    return [float(line.split("\t")[1]) / 1e6 for line in out]


CHILD = r"""
import contextlib, io, json, sys, time
from ggscope.cli import main
cmd, paths = sys.argv[1], sys.argv[2:]
def once(p):
    t, c = time.perf_counter(), time.thread_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main([cmd, p] + (["--jobs", "1"] if cmd == "validate" else []))
    return time.perf_counter() - t, time.thread_time() - c
for p in paths:                     # every lazy import and one-off table (a template's
    once(p)                         # sandbox, key patterns): start-up is measured apart
print(json.dumps([once(p) for p in paths]))
"""


def py_in_process(paths: list[Path], cmd: str, env: dict[str, str], cwd: Path) -> list[list[float]]:
    """Seconds ``ggscope CMD FILE`` takes per file through ggscope.cli.main - wall clock and
    the CPU time of the thread that runs it - all files in one child process (the tree
    ``env``'s PYTHONPATH names: ``cwd``, first on a ``-c`` child's path, must hold no
    ggscope), after one untimed pass over all of them: the steady state per file; what a
    first use costs is in the whole-process rows."""
    out = subprocess.run([sys.executable, "-c", CHILD, cmd, *map(str, paths)], env=env, cwd=cwd, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


FLOOR = r"""
import gc, json, os, sys, time
from ggscope.model.open import open as open_file
from ggscope.rules import CheckContext
from ggscope.validate.runner import _to_call, selected_rules, validate
rules = selected_rules()
def nothing(ctx):                   # a rule with nothing to do
    return
    yield
def once(p):
    t0 = time.perf_counter()
    mf = open_file(p)
    t1 = time.perf_counter()
    validate(mf, rules)
    t2 = time.perf_counter()
    calls = _to_call(mf, tuple(rules), {})
    t3 = time.perf_counter()
    fd = os.open(p, os.O_RDONLY)    # the least any reader does: open, stat, read the head, close
    os.fstat(fd)
    os.pread(fd, 1 << 16, 0)
    os.close(fd)
    found = []
    for rule_cls in calls:          # and call the file's rules as the runner does, each doing nothing
        found.extend(nothing(CheckContext(mf, rule_cls(), {})))
    t4 = time.perf_counter()
    mf.close()
    return t1 - t0, t2 - t1, t4 - t3, len(calls)
for p in sys.argv[1:]:              # imports, compiled specs, one-off tables
    once(p)
print(json.dumps([once(p) for p in sys.argv[1:]]))
"""


def py_floor(paths: list[Path], env: dict[str, str], cwd: Path) -> list[tuple[float, float, float, int]]:
    """Per file, without the command line around them: seconds of the spec engine's parse
    (``ggscope.model.open``) and of the rule set (``validate.runner.validate``); and the
    bare floor - seconds to open, stat, read the head of and close the file with os calls
    and to call each of the file's rules as the runner does (a rule object, its context,
    its check) with every check doing nothing - and how many rules that is: what a Python
    ``validate`` of one class per rule pays per file before any rule does any work."""
    out = subprocess.run([sys.executable, "-c", FLOOR, *map(str, paths)], env=env, cwd=cwd, capture_output=True,
                         text=True, check=True).stdout
    return [tuple(x) for x in json.loads(out.strip().splitlines()[-1])]


def child_env(work: Path, tree: Path = REPO) -> dict[str, str]:
    """The Python children as an installed ggscope runs: its bytecode cached (under
    ``--work``, not in the repository) even where PYTHONDONTWRITEBYTECODE is set, and its
    user cache (``XDG_CACHE_HOME``: the facts, the kept template studies) its own - two
    trees sharing one would overwrite each other's records (kept under a name per
    template, with the tree's stamp inside) and both would pay Jinja2 in every process."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(work / "pycache"),
               XDG_CACHE_HOME=str(work / "cache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def ms(s: float) -> str:
    return f"{s * 1e3:8.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ggml", default=os.environ.get("GGML_SRC"),
                    help="a ggml or llama.cpp source tree to build the C peer from (default $GGML_SRC)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ggscope-bench-ggml"),
                    help="where the C peer is built (reused) and bytecode is cached")
    ap.add_argument("--vocab", default=str(REPO.parent / "shared" / "fixtures" / "llama-vocab"),
                    help="a folder of real vocabulary files (default ../shared/fixtures/llama-vocab)")
    ap.add_argument("--model", nargs="*", default=[], help="more real files measured like the vocabularies")
    ap.add_argument("--files", type=int, default=200, help="small GGUF files written for the folder rows")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are printed")
    ap.add_argument("--baseline", help="another checkout (its C extensions built) whose validate runs beside, e.g. "
                                       "main: git archive main | tar -x -C DIR; python setup.py build_ext --inplace")
    a = ap.parse_args()
    exe, why = build_reader(a.ggml, Path(a.work))
    if exe is None:
        raise SystemExit(f"no C peer: {why}")
    real = sorted(Path(a.vocab).glob("*.gguf")) + [Path(m) for m in a.model]
    if not real:
        log(f"no vocabulary files in {a.vocab}")
    load0 = os.getloadavg()
    print(f"C peer: ggml's gguf_init_from_file + every KV and tensor info (benchmarks/ggml_read.c), "
          f"ggml-base Release -march=native GGML_NATIVE=ON from {a.ggml}")
    print(f"load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} ({os.cpu_count()} cpus); "
          f"median of {a.rounds} interleaved rounds")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        from validate_folder import write_folder
        small = write_folder(tmp, a.files)
        py = [sys.executable, "-m", "ggscope"]
        env = child_env(Path(a.work))
        envs = {"info": env, "validate": env}
        if a.baseline:
            envs["before"] = child_env(Path(a.work) / "baseline", Path(a.baseline))
        for k, e in envs.items():                                   # bytecode and the facts cache, once
            wall([*py, "info" if k == "info" else "validate", str(small[0])], tmp, e)
        keys = ("c", *envs)
        inproc = {k: [[] for _ in real + small] for k in keys}
        cpu = {k: [[] for _ in real + small] for k in envs}           # the Python tools' thread CPU time
        floor: list[list[tuple[float, float]]] = [[] for _ in real + small]
        proc = {k: [[] for _ in real] for k in (*keys, "pass")}
        folder = {k: [] for k in (*keys, "c per file")}
        for r in range(a.rounds):
            log(f"round {r + 1}/{a.rounds}")
            order = list(envs)[r % len(envs):] + list(envs)[:r % len(envs)]    # each tool first in turn
            perm = list(range(len(real) + len(small)))
            random.Random(r).shuffle(perm)                                     # this round's order of the files
            paths = [(real + small)[j] for j in perm]
            got = {"c": c_in_process(exe, paths)}
            for k in order:
                got[k] = py_in_process(paths, "info" if k == "info" else "validate", envs[k], tmp)
            for k, ts in got.items():
                for i, t in ((perm[at], t) for at, t in enumerate(ts)):
                    inproc[k][i].append(t if k == "c" else t[0])
                    if k != "c":
                        cpu[k][i].append(t[1])
            for at, t in enumerate(py_floor(paths, env, tmp)):
                floor[perm[at]].append(t)
            for i, p in enumerate(real):
                proc["c"][i].append(wall([str(exe), str(p)], tmp, env))
                proc["pass"][i].append(wall([sys.executable, "-c", "pass"], tmp, env))
                for k in order:
                    proc[k][i].append(wall([*py, "info" if k == "info" else "validate", str(p)], tmp, envs[k]))
            folder["c"].append(wall([str(exe), *map(str, small)], tmp, env))
            folder["c per file"].append(sum(wall([str(exe), str(p)], tmp, env) for p in small))
            for k in order:
                folder[k].append(wall([*py, "info", *map(str, small)] if k == "info" else
                                      [*py, "validate", "--jobs", "1", *map(str, small)], tmp, envs[k]))
    med = statistics.median
    extra = "before" in keys

    def row(label: str, m: dict[str, float], cols: tuple[str, ...]) -> str:
        out = f"{label[:34]:34s} " + " ".join(ms(m[k]) for k in cols)
        out += f" {m['validate'] / m['c']:7.2f} {m['validate'] / m['info']:8.2f}"
        return out + (f" {m['before'] / m['validate']:9.2f}" if extra else "")

    def head(cols: tuple[str, ...]) -> str:
        return (f"{'file':34s} " + " ".join(f"{k:>8s}" for k in cols) + f" {'val/C':>7s} {'val/info':>8s}"
                + (f" {'before/now':>9s}" if extra else ""))

    print("\n1. in-process, per file (ms; the Python tools after start-up; 'before': --baseline's validate)")
    print(head(keys))
    for i, p in enumerate(real):
        print(row(p.name, {k: med(inproc[k][i]) for k in keys}, keys))
    for label, rows in ((f"{len(real)} real files (sum)", range(len(real))),
                        (f"{len(small)} small files (sum)", range(len(real), len(real) + len(small)))):
        if len(rows):
            print(row(label, {k: sum(med(inproc[k][i]) for i in rows) for k in keys}, keys))

    ck = tuple(envs)
    print("\n1b. in-process, CPU time of the thread that runs each Python tool (ms; what other processes' load moves "
          "least, a run's own cache misses included)")
    print(f"{'file':34s} " + " ".join(f"{k:>8s}" for k in ck) + f" {'val/info':>8s}"
          + (f" {'before/now':>9s}" if extra else ""))
    for label, rows in [(p.name, [i]) for i, p in enumerate(real)] + [(f"{len(real)} real files (sum)", range(len(real))),
                                                                     (f"{len(small)} small files (sum)",
                                                                      range(len(real), len(real) + len(small)))]:
        if len(rows):
            m = {k: sum(med(cpu[k][i]) for i in rows) for k in ck}
            print(f"{label[:34]:34s} " + " ".join(ms(m[k]) for k in ck) + f" {m['validate'] / m['info']:8.2f}"
                  + (f" {m['before'] / m['validate']:9.2f}" if extra else ""))

    def floor_of(rows: range, k: int = 2) -> tuple[float, ...]:
        return tuple(sum(med([f[j] for f in floor[i]]) for i in rows) for j in range(k))

    print("\n   what bounds validate/C: ggscope's parse and rule set alone, without the command line (ms)")
    for label, rows in ((f"{len(real)} real files", range(len(real))),
                        (f"{len(small)} small files", range(len(real), len(real) + len(small)))):
        if not len(rows):
            continue
        parse, check = floor_of(rows)
        c_ms = sum(med(inproc["c"][i]) for i in rows)
        v_ms = sum(med(inproc["validate"][i]) for i in rows)
        print(f"   {label}: parse {parse * 1e3:.1f} + rules {check * 1e3:.1f} = {(parse + check) * 1e3:.1f} "
              f"({(parse + check) * 1e3 / len(rows):.2f} per file); the command line adds "
              f"{(v_ms - parse - check) * 1e3:.1f}; C {c_ms * 1e3:.1f}: validate/C >= {(parse + check) / c_ms:.1f} "
              f"in Python (parse alone {parse / c_ms:.1f})")
        bare = floor_of(rows, 3)[2]
        n_rules = med([floor[i][0][3] for i in rows])
        print(f"   {label}, bare: os.open/fstat/pread/close and the file's rules called with nothing to do "
              f"(median {n_rules:.0f} rules): {bare * 1e3 / len(rows) * 1e3:.1f} us per file against C's "
              f"{c_ms * 1e3 / len(rows) * 1e3:.1f} us: validate/C >= {bare / c_ms:.2f} before any rule does any work")

    cols = ("c", "pass", *envs)
    print("\n2. whole processes, per real file (ms; start-up included)")
    print(head(cols))
    tot = dict.fromkeys(cols, 0.0)
    for i, p in enumerate(real):
        m = {k: med(proc[k][i]) for k in cols}
        for k in m:
            tot[k] += m[k]
        print(row(p.name, m, cols))
    if real:
        print(row("sum", tot, cols))

    m = {k: med(v) for k, v in folder.items()}
    n = len(small)
    print(f"\n3. one process over {n} small files (ms): C {ms(m['c'])} (C as one process per file: "
          f"{ms(m['c per file'])}), info {ms(m['info'])}, validate {ms(m['validate'])}"
          + (f", before {ms(m['before'])}" if extra else ""))
    print(f"   validate/C {m['validate'] / m['c']:.2f}, validate/(C one process per file) "
          f"{m['validate'] / m['c per file']:.2f}, validate/info {m['validate'] / m['info']:.2f}"
          + (f", before/now {m['before'] / m['validate']:.2f}" if extra else ""))
    if n:
        parse, check = floor_of(range(len(real), len(real) + n))
        start = statistics.median([med(v) for v in proc["pass"]]) if real else 0.0
        bound = start + parse + check
        print(f"   bound: a Python process ({start * 1e3:.0f} ms bare, before ggscope's imports) + {n} x (parse "
              f"{parse * 1e3 / n:.2f} + rules {check * 1e3 / n:.2f} ms) = {bound * 1e3:.0f} ms: validate/C >= "
              f"{bound / m['c']:.0f} for a parse in Python, whatever the rules cost")
    load1 = os.getloadavg()
    print(f"\nload average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    if shutil.which("cc") is None:
        raise SystemExit("no C compiler (cc) on PATH: the C peer cannot be built")
    main()
