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


def env(tree: Path = REPO) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1"}


def wall(argv: list[str], tree: Path = REPO) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], check=True, stdout=subprocess.DEVNULL, env=env(tree), cwd=tree)
    return time.perf_counter() - t0


def importtime(argv: list[str]) -> tuple[list[tuple[int, str]], int]:
    """(self import time in microseconds per group, largest first; their total).  A group
    is a ggscope subpackage (``ggscope.ksy``) or any other top-level package (``numpy``)."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO).stderr
    groups: dict[str, int] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        own, _, name = line[len("import time:"):].split("|")
        if not own.strip().isdigit():
            continue
        parts = name.strip().split(".")
        key = ".".join(parts[:2]) if parts[0] == "ggscope" else parts[0]
        groups[key] = groups.get(key, 0) + int(own)
    top = sorted(((us, key) for key, us in groups.items()), reverse=True)
    return top, sum(us for us, _ in top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--before", type=Path, help="another ggscope source tree, measured in the same rounds")
    a = ap.parse_args()
    sides = {name: (argv, REPO) for name, argv in SIDES.items()}
    for tree in (REPO, a.before) if a.before else (REPO,):
        compileall.compile_dir(str(tree / "ggscope"), quiet=1)
    if a.before:
        for name in list(BASELINE):
            sides[f"before: {name}"] = (SIDES[name], a.before)
            BASELINE[f"before: {name}"] = BASELINE[name]
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


if __name__ == "__main__":
    main()
