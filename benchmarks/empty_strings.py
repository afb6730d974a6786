"""``info``, ``info --json`` and ``validate`` of a GGUF whose one metadata array holds 16 M
empty strings (issues 13 and 23, item 6).

Such a file is 134 MB of zero length prefixes.  Measured: each command in a fresh
subprocess, median seconds of N runs and peak RSS (which counts the mapped file's pages),
printed beside the file size as a ratio (goal: peak within 2x the file, validate under
2 s); side by side with gguf-py's ``GGUFReader`` opening the same file (the peer:
llama.cpp's own Python reader) unless --skip-gguf-py, and with another ggscope tree
(``--before DIR``: e.g. ``git archive main | tar -x -C DIR`` built with ``python setup.py
build_ext --inplace``) for a before/after in one run.  Also an array of 16 M strings
alternating "" and "a" (the pattern that defeats a scanner tuned for non-empty
strings).  The load average is printed with the results: the numbers are only
comparable within one run.

Run: python benchmarks/empty_strings.py [--runs 3] [--n 16777216] [--skip-gguf-py] [--before DIR]
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, n: int, pattern: str) -> None:
    """GGUF v3, no tensors, general.architecture and one string array of n elements."""
    def s(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b
    with open(path, "wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 2))
        fh.write(s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama"))
        fh.write(s(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, n))
        if pattern == "empty":
            unit, per = struct.pack("<Q", 0), 1
        else:
            unit, per = struct.pack("<Q", 0) + s(b"a"), 2
        chunk = unit * (1 << 16)
        left = n // per
        while left:
            k = min(left, 1 << 16)
            fh.write(chunk if k == 1 << 16 else unit * k)
            left -= k
        fh.write(b"\0" * (-fh.tell() % 32))


_COMMAND = """
import io, resource, sys, time
t = time.perf_counter()
from ggscope.cli import main
out, sys.stdout = sys.stdout, io.TextIOWrapper(open("/dev/null", "wb"))   # the output is written, not kept
rc = main(sys.argv[2:] + [sys.argv[1]])
sys.stdout.flush()
sys.stdout = out
dt = time.perf_counter() - t
print({"seconds": dt, "rc": rc, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""
COMMANDS = {"info": ["info"], "info_json": ["info", "--json"], "validate": ["validate", "--ignore", "filename"]}
_GGUF_PY = """
import resource, sys, time
t = time.perf_counter()
import gguf
r = gguf.GGUFReader(sys.argv[1])
n = len(r.fields["tokenizer.ggml.tokens"].data)
dt = time.perf_counter() - t
print({"seconds": dt, "rc": 0, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


def timed(code: str, path: Path, runs: int, timeout: float = 600, tree: Path = REPO,
          args: list[str] | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = []
    for _ in range(runs):
        try:
            r = subprocess.run([sys.executable, "-c", code, str(path), *(args or [])], env=env, capture_output=True,
                               text=True, timeout=timeout, cwd=tree)
        except subprocess.TimeoutExpired:
            return {"median_s": f"> {timeout:g} (stopped)", "peak_mib": None, "rc": None}
        line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "{}"
        out.append(ast.literal_eval(line) if line.startswith("{") else {"seconds": float("nan"), "error": r.stderr[-300:]})
    secs = [o.get("seconds", float("nan")) for o in out]
    return {"median_s": round(statistics.median(secs), 3), "peak_mib": round(max(o.get("peak_mib", 0) for o in out)),
            "rc": out[-1].get("rc")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--skip-gguf-py", action="store_true")
    ap.add_argument("--before", type=Path, help="another ggscope tree to measure side by side (e.g. main)")
    ap.add_argument("--peer-timeout", type=float, default=120, help="seconds before the peer run is stopped")
    args = ap.parse_args()
    trees = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for pattern in ("empty", "alternating"):
            p = Path(d) / f"{pattern}.gguf"
            write(p, args.n, pattern)
            size_mib = p.stat().st_size / 2 ** 20
            row: dict = {"file_mib": round(size_mib, 1)}
            for label, tree in trees.items():
                for name, argv in COMMANDS.items():
                    m = timed(_COMMAND, p, args.runs, tree=tree, args=argv)
                    if m["peak_mib"]:
                        m["peak_over_file"] = round(m["peak_mib"] / size_mib, 2)
                    row[f"{label}_{name}"] = m
            if not args.skip_gguf_py:
                row["gguf_py_open"] = g = timed(_GGUF_PY, p, 1, args.peer_timeout)
                s, gs = row["after_validate"]["median_s"], g["median_s"]
                ok = isinstance(gs, float) and gs == gs and gs > 0
                row["ratio_validate_to_gguf_py"] = round(s / gs, 3) if ok else f"< {s / args.peer_timeout:.3f}"
                if g["peak_mib"]:
                    g["peak_over_file"] = round(g["peak_mib"] / size_mib, 2)
            results[pattern] = row
    print(json.dumps({"n_strings": args.n, "load_average": os.getloadavg(), **results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
