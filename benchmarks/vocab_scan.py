"""The compiled duplicate scan (GG1101's vocabulary check) per token, this tree beside another (issue 27, item 3).

``ggscope.rules._cvocab.scan`` - the first duplicate token and the tokens that are not
UTF-8, in one walk over the file's bytes - timed on each vocabulary's token array in
nanoseconds per token: with both checks (what ``validate`` asks), the duplicate search
alone and the UTF-8 check alone.  The peer is the same function as another checkout
builds it (``--baseline``: a tree with its C extensions built, e.g. main): both modules
are loaded into this one process and called in interleaved rounds (each first in turn),
the minimum per call kept - the load another process puts on the machine moves both
alike.  Their answers are compared on every array first.  ``--levels`` also times this
tree's vector routes (scan's ``simd``: 2 the widest the CPU has, 1 at most AVX2, 0 none).

Files: the 12 real vocabulary files of ../shared/fixtures/llama-vocab (``--vocab``) and
any ``--model``.  Printed: ns per token before and after, the speed-up, the load average
before and after.  Nothing is written.

    python benchmarks/vocab_scan.py --baseline DIR [--vocab DIR] [--model FILE ...] [--rounds 20] [--levels]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

import ggscope  # noqa: E402
from ggscope.rules import _cvocab  # noqa: E402

CHECKS = {"dups+utf8": (True, True), "dups": (True, False), "utf8": (False, True)}


def load_from(tree: Path):
    """The compiled scan module as ``tree`` built it, loaded beside this tree's."""
    built = sorted((tree / "ggscope" / "rules").glob("_cvocab*.so")) + sorted((tree / "ggscope" / "rules").glob("_cvocab*.pyd"))
    if not built:
        sys.exit(f"{tree}: no built ggscope/rules/_cvocab (python setup.py build_ext --inplace there)")
    spec = importlib.util.spec_from_file_location("ggscope.rules._cvocab", built[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best(calls: dict, rounds: int, reps: int = 10) -> dict:
    """The minimum seconds per call of each named callable, in interleaved rounds."""
    out = {name: float("inf") for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            fn = calls[name]
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                out[name] = min(out[name], time.perf_counter() - t0)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="another checkout with its C extensions built")
    ap.add_argument("--vocab", default=str(REPO.parent / "shared" / "fixtures" / "llama-vocab"))
    ap.add_argument("--model", nargs="*", default=[])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--levels", action="store_true", help="also time this tree's simd levels 0, 1, 2")
    a = ap.parse_args(argv)
    before = load_from(Path(a.baseline))
    files = sorted(Path(a.vocab).glob("*.gguf")) + [Path(m) for m in a.model]
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'file':34s} {'tokens':>8s} {'check':10s} {'before':>8s} {'after':>8s} {'speed-up':>8s}" +
          ("   simd 0   simd 1   simd 2" if a.levels else ""))
    for f in files:
        strings = ggscope.open(str(f)).metadata.get("tokenizer.ggml.tokens")
        if strings is None or not hasattr(strings, "lens") or strings.rel is not None:
            continue
        n = len(strings)
        lens = np.ascontiguousarray(strings.lens)
        for check, (dups, utf8) in CHECKS.items():
            args = (strings._arr, strings.first, lens, lens.itemsize, b"", 0, strings.width, strings.tail, dups, utf8)
            if before.scan(*args) != _cvocab.scan(*args):
                print(f"{f.name}: the two trees disagree ({check})")
                return 1
            calls = {"before": lambda: before.scan(*args), "after": lambda: _cvocab.scan(*args)}
            if a.levels:
                calls.update({f"simd {k}": (lambda k=k: _cvocab.scan(*args, -1, k)) for k in (0, 1, 2)})
            t = {k: v * 1e9 / n for k, v in best(calls, a.rounds).items()}
            extra = "".join(f" {t[f'simd {k}']:8.2f}" for k in (0, 1, 2)) if a.levels else ""
            print(f"{f.name:34s} {n:8d} {check:10s} {t['before']:8.2f} {t['after']:8.2f} "
                  f"{t['before'] / t['after']:7.2f}x{extra}")
    print("ns per token, minimum per call;", "load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
