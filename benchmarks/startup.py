"""Start-up: ``ggscope --version`` and ``ggscope info`` on the bundled example vs a bare interpreter.

Why: issue 27's goal -- each of these within 0.15 s of a bare ``python -c pass`` plus
the cost of the imports the command cannot avoid.  ``--version`` needs nothing beyond
the interpreter; ``info`` decodes a GGUF header, whose arrays ggscope holds as numpy
arrays, so numpy is the one import it cannot avoid.  Every figure is the wall time of a
new process, best of ``--repeat`` rounds; each round runs every side once (the machine
is shared: rounds spread a busy spell over all sides alike).  Python compiles ggscope's
modules to bytecode first (``compileall``), as ``pip install`` does.

Then the breakdown of each command (``python -X importtime``): the top-level imports
and their cumulative import time, largest first, and what is left for the work itself.

``ggscope validate EXAMPLE`` is measured beside ``info`` (issue 27 item 3: a process of
validate within 1.3x one of info on the same file), with the modules validate imports that
info does not, largest first.  (``-X importtime`` does not see modules loaded through
``importlib.import_module``, such as the rule families the catalogue registers: their
time shows under the module that asked for them, ``ggscope.validate.runner``.)

``--before DIR`` adds the two ggscope rows for another source tree (e.g. an archive of
an older commit with its extensions built in place), in the same rounds.

    python benchmarks/startup.py [--repeat 7] [--top 12] [--before DIR]
"""
from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
GOAL = 0.15

# name -> (argv after the interpreter, the baseline it is measured against)
SIDES = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import numpy'": ["-c", "import numpy"],
    "ggscope --version": ["-m", "ggscope", "--version"],
    "ggscope info EXAMPLE": ["-m", "ggscope", "info", str(EXAMPLE)],
}
BASELINE = {"ggscope --version": "python -c pass", "ggscope info EXAMPLE": "python -c 'import numpy'"}
# name -> (argv after the interpreter, the side it is a ratio of, the goal for that ratio)
RATIOS = {"ggscope validate EXAMPLE": (["-m", "ggscope", "validate", str(EXAMPLE)], "ggscope info EXAMPLE", 1.3)}


def env(tree: Path = REPO) -> dict[str, str]:
    """The tree's own user cache for ``--before``: two trees sharing one would overwrite each
    other's kept records (a template's study is kept under one name, with the tree's stamp
    inside) and both would pay Jinja2 in every process."""
    out = {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1"}
    if tree != REPO:
        out["XDG_CACHE_HOME"] = os.path.join(tempfile.gettempdir(), "ggscope-startup-before-cache")
    return out


def wall(argv: list[str], tree: Path = REPO) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env(tree), cwd=tree)          # validate exits 1 on error-level findings
    return time.perf_counter() - t0


def modules(argv: list[str]) -> dict[str, int]:
    """Module -> self import time in microseconds (``python -X importtime``, one run)."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv], check=False, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO).stderr
    out: dict[str, int] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        own, _, name = line[len("import time:"):].split("|")
        if own.strip().isdigit():
            out[name.strip()] = int(own)
    return out


def importtime(argv: list[str]) -> tuple[list[tuple[int, str]], int]:
    """(self import time in microseconds per group, largest first; their total).  A group
    is a ggscope subpackage (``ggscope.ksy``) or any other top-level package (``numpy``)."""
    groups: dict[str, int] = {}
    for name, us in modules(argv).items():
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "ggscope" else parts[0]
        groups[key] = groups.get(key, 0) + us
    top = sorted(((us, key) for key, us in groups.items()), reverse=True)
    return top, sum(us for us, _ in top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--before", type=Path, help="another ggscope source tree, measured in the same rounds")
    a = ap.parse_args()
    sides = {name: (argv, REPO) for name, argv in {**SIDES, **{k: v[0] for k, v in RATIOS.items()}}.items()}
    for tree in (REPO, a.before) if a.before else (REPO,):
        compileall.compile_dir(str(tree / "ggscope"), quiet=1)
    if a.before:
        for name in list(BASELINE):
            sides[f"before: {name}"] = (SIDES[name], a.before)
            BASELINE[f"before: {name}"] = BASELINE[name]
        for name, (argv, of, goal) in list(RATIOS.items()):
            sides[f"before: {name}"] = (argv, a.before)
            RATIOS[f"before: {name}"] = (argv, f"before: {of}", goal)
    best = {name: float("inf") for name in sides}
    load0 = os.getloadavg()[0]
    for name, (argv, tree) in sides.items():         # warm-up: page cache, bytecode
        wall(argv, tree)
    for _ in range(a.repeat):
        for name, (argv, tree) in sides.items():
            best[name] = min(best[name], wall(argv, tree))
    print(f"wall time of a new process, best of {a.repeat} rounds; load average {load0:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end")
    print(f"{'':28} {'seconds':>8} {'baseline':>28} {'over it':>8} {'goal':>6}")
    for name, t in best.items():
        base = BASELINE.get(name)
        if name in RATIOS:
            _, of, goal = RATIOS[name]
            ratio = t / best[of]
            print(f"{name:28} {t:8.3f} {'x ' + of:>28} {ratio:8.2f} {'ok' if ratio <= goal else 'MISSED':>6} "
                  f"(goal: <= {goal}x)")
            continue
        if base is None:
            print(f"{name:28} {t:8.3f}")
            continue
        over = t - best[base]
        print(f"{name:28} {t:8.3f} {base:>28} {over:8.3f} {'ok' if over <= GOAL else 'MISSED':>6}")
    for name in SIDES:
        if name not in BASELINE:
            continue
        top, total = importtime(SIDES[name])
        print(f"\n{name}: import time by package (python -X importtime, self ms summed; one run)")
        for cum, mod in top[:a.top]:
            print(f"  {cum / 1000:8.1f}  {mod}")
        print(f"  {total / 1000:8.1f}  all imports; the rest of {best[name] * 1000:.0f} ms is the interpreter and the work")
    for name, (argv, of, _) in RATIOS.items():
        if name.startswith("before: "):
            continue
        mine, theirs = modules(argv), modules(SIDES[of])
        extra = sorted(((us, m) for m, us in mine.items() if m not in theirs), reverse=True)
        print(f"\n{name}: the modules it imports beyond {of} (self ms; one run)")
        for us, m in extra[:a.top]:
            print(f"  {us / 1000:8.1f}  {m}")
        print(f"  {sum(us for us, _ in extra) / 1000:8.1f}  all {len(extra)} of them")


if __name__ == "__main__":
    main()
