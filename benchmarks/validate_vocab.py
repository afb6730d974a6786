"""What ``validate``'s vocabulary work costs beside ``ggscope info`` of the same file (issue 27, item 3).

The goal: everything the loader and tokenizer rules do per token or per merge (the
first duplicate token, the strings that are not UTF-8, the special tokens' texts - the
entry points of ``ggscope.rules.vocab_bytes``) costs at most about a quarter of ``info``
on the same file, so that ``validate`` stays within 1.3x ``info``.  The peer here is
``info`` itself, measured in the same process, interleaved with ``validate`` (each one
first in turn), median of ``--rounds``; ``--baseline`` (another checkout with its C
extensions built, e.g. main) runs the same measurement in a child process between this
tree's rounds, so both see the same load.

Files: the 12 real vocabulary files of ../shared/fixtures/llama-vocab (``--vocab``) and
any ``--model`` (e.g. Gemma 3 270M: 262,144 tokens).  Printed per file and in total:
milliseconds of ``info``, of ``validate``, of the vocabulary work inside ``validate``,
the ratios vocabulary/info and validate/info, and the load average before and after.
Nothing is written.

    python benchmarks/validate_vocab.py [--vocab DIR] [--model FILE ...] [--rounds 7] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENTRY_POINTS = ("first_duplicate", "invalid_utf8", "texts", "joined_texts", "is_token")


def measure(files: list[str], rounds: int) -> dict:
    """{file: {"info": s, "validate": s, "vocab": s}}: medians over ``rounds``, the
    vocabulary work timed at the outermost call of the entry points."""
    from ggscope import cli
    from ggscope.rules import vocab_bytes
    spent, depth = [0.0], [0]

    def timed(f):
        @functools.wraps(f)
        def g(*a, **k):
            depth[0] += 1
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    spent[0] += time.perf_counter() - t
        return g

    for name in ENTRY_POINTS:
        if hasattr(vocab_bytes, name):
            setattr(vocab_bytes, name, timed(getattr(vocab_bytes, name)))

    def run(cmd: str, path: str) -> float:
        spent[0] = 0.0
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main([cmd, path])
            except SystemExit:
                pass
        return time.perf_counter() - t

    for path in files:                                   # caches warm, modules imported
        run("info", path), run("validate", path)
    got: dict = {p: {"info": [], "validate": [], "vocab": []} for p in files}
    for r in range(rounds):
        for path in files:
            for cmd in (("info", "validate") if r % 2 else ("validate", "info")):
                got[path][cmd].append(run(cmd, path))
                if cmd == "validate":
                    got[path]["vocab"].append(spent[0])
    return {p: {k: statistics.median(v) for k, v in d.items()} for p, d in got.items()}


def child(tree: Path, files: list[str], rounds: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, __file__, "--child", "--rounds", str(rounds), *files], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def table(title: str, res: dict) -> None:
    print(f"\n{title}\n{'file':36s} {'info':>7s} {'validate':>9s} {'vocab':>7s} {'vocab/info':>11s} {'val/info':>9s}")
    tot = {"info": 0.0, "validate": 0.0, "vocab": 0.0}
    for path, m in res.items():
        for k in tot:
            tot[k] += m[k]
        print(f"{Path(path).name[:36]:36s} {m['info'] * 1e3:7.2f} {m['validate'] * 1e3:9.2f} {m['vocab'] * 1e3:7.2f} "
              f"{m['vocab'] / m['info']:11.2f} {m['validate'] / m['info']:9.2f}")
    print(f"{'sum':36s} {tot['info'] * 1e3:7.2f} {tot['validate'] * 1e3:9.2f} {tot['vocab'] * 1e3:7.2f} "
          f"{tot['vocab'] / tot['info']:11.3f} {tot['validate'] / tot['info']:9.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--vocab", default=str(REPO.parent / "shared" / "fixtures" / "llama-vocab"))
    ap.add_argument("--model", nargs="*", default=[], help="more real files (e.g. a GGUF model with its vocabulary)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--baseline", help="another checkout with its C extensions built, measured beside this one")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(a.files, a.rounds)))
        return
    files = [str(p) for p in sorted(Path(a.vocab).glob("*.gguf"))] + list(a.model)
    if not files:
        raise SystemExit(f"no GGUF files in {a.vocab} and no --model")
    load0 = os.getloadavg()
    print(f"load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} ({os.cpu_count()} cpus); "
          f"median of {a.rounds} interleaved rounds; vocabulary work: ggscope.rules.vocab_bytes's entry points")
    now, before = [], []
    for _ in range(2 if a.baseline else 1):              # this tree, the baseline, this tree, the baseline
        now.append(child(REPO, files, a.rounds))
        if a.baseline:
            before.append(child(Path(a.baseline), files, a.rounds))
    pick = {p: {k: statistics.median(r[p][k] for r in now) for k in ("info", "validate", "vocab")} for p in files}
    table("this tree (ms; median)", pick)
    if before:
        table("--baseline (ms; median)",
              {p: {k: statistics.median(r[p][k] for r in before) for k in ("info", "validate", "vocab")}
               for p in files})
    load1 = os.getloadavg()
    print(f"\nload average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
