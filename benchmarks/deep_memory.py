"""Peak RSS and time of ``ggscope validate --deep`` on a sparse 20 GB GGUF (goal: <= 300 MB).

Why: issue 13 (item 5) measured 21 GB peak for this file, because the deep rules read
tensor data through the file's memory map and every page read stayed in the process's
resident set.  The file is the issue's: 40 F16 tensors of 32768 x 8192 (512 MiB each),
written as a header plus a sparse hole (zeros), so making it costs no disk and no time.
``validate --deep`` runs in a fresh process; its peak RSS (``getrusage``), wall time and
exit code are printed, then the file is deleted.  ``--tensors 10`` makes a 5 GB file
(for measuring an old version without filling the page cache with 20 GB).

    python benchmarks/deep_memory.py [--tensors 40] [--dir /tmp] [--ggscope DIR]
"""
from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile

NE0, NE1, F16 = 8192, 32768, 1


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_sparse(path: str, n_tensors: int) -> int:
    """A GGUF v3 header for ``n_tensors`` F16 tensors, then a hole as the data section."""
    nbytes = NE0 * NE1 * 2
    head = b"GGUF" + struct.pack("<IQQ", 3, n_tensors, 1)
    head += _str("general.architecture") + struct.pack("<I", 8) + _str("llama")
    for i in range(n_tensors):
        head += _str(f"blk.{i}.ffn_up.weight") + struct.pack("<I", 2) + struct.pack("<QQ", NE0, NE1)
        head += struct.pack("<IQ", F16, i * nbytes)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as fh:
        fh.write(head)
    os.truncate(path, len(head) + n_tensors * nbytes)
    return len(head) + n_tensors * nbytes


CHILD = """
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run([sys.executable, "-m", "ggscope", "validate", "--deep", sys.argv[1]],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=sys.argv[2]).returncode
dt = time.perf_counter() - t
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, dt, rc)
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tensors", type=int, default=40, help="F16 tensors of 32768x8192 (default 40: 21.5 GB)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where to make the sparse file")
    ap.add_argument("--ggscope", default=None, help="a checkout of ggscope to run instead of this one "
                    "(e.g. the commit before: `git archive 57d7c50 ggscope | tar -x -C DIR`)")
    args = ap.parse_args(argv)
    path = os.path.join(args.dir, f"ggscope-deepbench-{os.getpid()}.gguf")
    try:
        size = write_sparse(path, args.tensors)
        env = dict(os.environ, PYTHONPATH=args.ggscope or os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        out = subprocess.run([sys.executable, "-c", CHILD, path, args.dir], check=True, capture_output=True,
                             text=True, env=env).stdout.split()
        rss_kib, secs, rc = int(out[0]), float(out[1]), int(out[2])
        print(f"validate --deep on a sparse {size / 1e9:.1f} GB GGUF ({args.tensors} F16 tensors of "
              f"{NE1}x{NE0}): peak RSS {rss_kib / 1024:.0f} MiB, {secs:.1f} s, exit {rc} "
              f"({args.tensors * NE0 * NE1 / secs / 1e9:.2f} G elements/s)")
    finally:
        if os.path.exists(path):
            os.remove(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
