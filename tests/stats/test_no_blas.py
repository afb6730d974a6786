"""No BLAS in the statistics, and no OpenBLAS thread spinning beside them.

numpy hands a dot product, a matrix product or an ``einsum`` to OpenBLAS, whose worker
threads then spin for about 0.1 s before they sleep -- on a two-core machine that is a
core taken from the statistics' second thread (it showed as ``blas_thread_server`` in
profiles).  Two checks, each in a fresh process:

* the statistics of every route wake no OpenBLAS thread: a worker that is given work
  goes to sleep again afterwards, one voluntary context switch more, so its count must
  not move (a ``numpy.dot`` on large vectors, the positive control, moves it);
* a one-shot ``ggscope stats`` leaves OpenBLAS's workers idle from the start: they spin
  after numpy's import unless ``OPENBLAS_THREAD_TIMEOUT`` tells them to sleep at once,
  which the CLI sets for the commands that run no BLAS (measured: 70 ms of CPU and
  60-80 ms of wall time of a ``stats`` of the bundled example on a busy machine).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))     # the sibling module, in any import mode
from test_reading import write_model  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"

PROBE = r'''
import json, os, threading
def foreign():
    """(voluntary context switches, CPU ticks) of each thread Python did not start."""
    mine = {t.native_id for t in threading.enumerate()}
    out = {}
    for tid in os.listdir("/proc/self/task"):
        if int(tid) in mine:
            continue
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                ctx = next(int(l.split()[1]) for l in f if l.startswith("voluntary_ctxt_switches"))
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, StopIteration):
            continue
        out[tid] = (ctx, int(fields[11]) + int(fields[12]))
    return out
'''

STATS = PROBE + r'''
import sys, numpy as np
import ggscope
from ggscope.stats.tensors import tensor_stats
mf = ggscope.open(sys.argv[1])
for t in mf.tensors:                        # warm: imports, tables, pools
    tensor_stats(t, threads=2, chunk_elems=1 << 14)
before = foreign()
for t in mf.tensors:
    for threads in (1, 2):
        tensor_stats(t, threads=threads, chunk_elems=1 << 14)
after = foreign()
x = np.ones(1 << 21)
np.dot(x, x)                                # the positive control: a threaded BLAS call
import time; time.sleep(0.05)
control = foreign()
print(json.dumps({"before": before, "after": after, "control": control}))
'''

CLI = PROBE + r'''
import sys, time
from ggscope.cli import main
main(["stats", "--json", sys.argv[1]])
time.sleep(0.3)                             # past the spin a worker would do after numpy's import
print(json.dumps(foreign()))
'''

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc for per-thread counts")


def _child(code: str, *args: str, **env: str) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_", "GOTO_"))}
    e.update(env, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=e, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_statistics_of_every_route_wake_no_blas_thread(tmp_path):
    r = _child(STATS, str(write_model(tmp_path / "routes.gguf")), OPENBLAS_THREAD_TIMEOUT="4")
    woke = [tid for tid in r["control"] if tid in r["before"] and r["control"][tid][0] > r["after"][tid][0]]
    if not woke:
        pytest.skip("numpy's BLAS runs no worker threads here: nothing to watch")
    assert {tid: r["after"][tid][0] for tid in woke} == {tid: r["before"][tid][0] for tid in woke}


def test_a_one_shot_stats_leaves_the_blas_threads_asleep():
    threads = _child(CLI, str(EXAMPLE))
    if not threads:
        pytest.skip("numpy's BLAS started no worker threads here")
    spun = {tid: ticks for tid, (_, ticks) in threads.items() if ticks >= 3}    # 30 ms of CPU or more
    assert spun == {}
