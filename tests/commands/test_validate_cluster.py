"""`validate --scheduler`: a Dask LocalCluster of 2 worker processes checks 200 files
while one worker is killed mid-run; the report, its order and the exit status equal a
local run's, and no file is lost or reported twice."""
from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from ggscope.cli import main

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"


def _files(tmp_path: Path, n: int = 200) -> list[str]:
    sources = sorted(FIXTURES.glob("*.gguf")) + sorted((FIXTURES / "malicious").glob("*.gguf"))
    if len(sources) < 3:
        pytest.skip(f"no fixtures in {FIXTURES}; run python fixtures/make_fixtures.py")
    out = []
    for i in range(n - 2):
        src = sources[i % len(sources)]
        dst = tmp_path / f"{i:03d}-{src.name}"
        shutil.copyfile(src, dst)
        out.append(str(dst))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"PK\x03\x04 not a model")
    return out[:100] + [str(tmp_path / "missing.gguf"), str(junk)] + out[100:]


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    return code, json.loads(cap.out), cap.err.splitlines()


def _memory_tasks(dask_scheduler) -> int:
    return sum(1 for ts in dask_scheduler.tasks.values() if ts.state == "memory")


def test_two_workers_one_killed_same_report(tmp_path, capsys):
    files = _files(tmp_path)
    listed = tmp_path / "list.txt"
    listed.write_text("# the second half\n" + "\n".join(files[100:]) + "\n")
    argv = ["validate", "--deep", "--format", "json", *files[:100], "--from-list", str(listed)]
    local = _run(capsys, argv)
    assert local[0] == 2          # the missing and the junk file are exit-2 problems
    from distributed import LocalCluster
    killed = {}
    # no Client in this process besides the command's own: the scheduler object of a
    # LocalCluster lives here and is read directly; workers are processes under nannies
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        sched = cluster.scheduler

        def kill_one() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    done = sum(1 for ts in list(sched.tasks.values()) if ts.state == "memory")
                    busy = {ws.address: len(ws.processing) for ws in list(sched.workers.values()) if ws.processing}
                except RuntimeError:        # a dict changed size while read; look again
                    continue
                if done >= 20 and len(busy) == 2:
                    victim = next(iter(busy))
                    nanny = next(n for n in cluster.workers.values() if n.worker_address == victim)
                    killed.update(worker=victim, done=done, tasks=busy[victim])
                    os.kill(nanny.process.process.pid, signal.SIGKILL)
                    return
                time.sleep(0.01)
        t = threading.Thread(target=kill_one, daemon=True)
        t.start()
        remote = _run(capsys, ["validate", "--scheduler", cluster.scheduler_address, *argv[1:]])
        t.join(5)
    assert killed, "no worker was killed while files were in flight"
    assert killed["done"] < len(files) and killed["tasks"] >= 1
    assert remote[2] == local[2]
    assert remote[0] == local[0]
    assert remote[1] == local[1]


def test_scheduler_local_and_unreachable(tmp_path, capsys):
    files = _files(tmp_path, 6)
    local = _run(capsys, ["validate", "--format", "json", *files])
    assert _run(capsys, ["validate", "--scheduler", "local", "--jobs", "2", "--format", "json", *files]) == local
    import dask
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main(["validate", "--scheduler", "tcp://127.0.0.1:9", files[0]]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and "Traceback" not in err
