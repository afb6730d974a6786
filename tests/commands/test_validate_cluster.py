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


def test_unreachable_scheduler_gives_up_within_the_network_timeout(tmp_path):
    """Nothing listens on port 1: one line, exit 2, after GGSCOPE_HTTP_TIMEOUT (not Dask's
    30 s default - the safety timeout below is shorter than that)."""
    import subprocess
    import sys
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    env = {**os.environ, "PYTHONPATH": str(REPO), "GGSCOPE_HTTP_TIMEOUT": "1"}
    r = subprocess.run([sys.executable, "-m", "ggscope", "validate", "--scheduler", "tcp://127.0.0.1:1",
                        str(model)], env=env, capture_output=True, text=True, timeout=25)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def _sparse_f32_gguf(path: Path, nbytes: int) -> Path:
    """gguf-py writes the header of one F32 tensor of ``nbytes``; the data is a hole."""
    import gguf
    import numpy as np
    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor_info("big.weight", [nbytes // 4], np.dtype(np.float32), nbytes,
                      raw_dtype=gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    os.truncate(path, -(-path.stat().st_size // 32) * 32 + nbytes)
    if os.stat(path).st_blocks * 512 > 64 << 20:
        pytest.skip("the filesystem of tmp_path does not keep sparse files")
    return path


def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("group", [False, True], ids=["parent", "group"])
def test_ctrl_c_ends_jobs_at_once(tmp_path, group):
    """SIGINT to `validate --jobs 2` once its workers are running, first to the parent
    alone (the workers must be ended by it, not waited for: the queued files would take
    minutes), then to the whole process group (what a terminal's Ctrl-C does): exit 130
    with one line, no worker traceback, and no worker left behind."""
    import subprocess
    import sys
    small = sorted(FIXTURES.glob("*.gguf"))
    if not small:
        pytest.skip(f"no fixtures in {FIXTURES}; run python fixtures/make_fixtures.py")
    big = _sparse_f32_gguf(tmp_path / "big.gguf", 4 << 30)
    files = [str(small[0])]        # the parent checks the first file itself, before the pool starts
    for i in range(200):           # 4 GiB of --deep reading per file: the files in flight alone take
        link = tmp_path / f"{i:04d}.gguf"
        link.symlink_to(big)
        files.append(link.name)    # far longer than the safety timeout
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-m", "ggscope", "validate", "--deep", "--jobs", "2", "--format",
                          "json", *files], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # Ctrl-C reaches the command as from a terminal even when this suite
                         # runs as a background job of a non-interactive shell, which starts
                         # it with SIGINT ignored (inherited across exec)
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while len(workers) < 2 and p.poll() is None and time.monotonic() < deadline:
            workers = _children(p.pid)
            time.sleep(0.05)
        assert len(workers) >= 2 and p.poll() is None, "the worker processes never started"
        time.sleep(0.5)            # let them take files
        (os.killpg if group else os.kill)(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err
    assert err.strip().splitlines() == ["ggscope: interrupted"], err
    assert not any(Path(f"/proc/{w}").exists() and "Z" not in Path(f"/proc/{w}/stat").read_text().split()[2]
                   for w in workers)


@pytest.mark.parametrize("answer, needle", [
    (None, "cannot reach the Dask scheduler"),                                  # accepts, never speaks
    (b"\xff" * 64, "Dask scheduler at tcp://127.0.0.1:"),                      # claims an absurd frame size
], ids=["silent", "junk"])
def test_a_silent_or_hostile_scheduler_is_one_line(tmp_path, answer, needle):
    """A port that accepts and then stays silent ends after GGSCOPE_HTTP_TIMEOUT; one that
    answers junk (a frame length of exabytes) is refused, not a MemoryError traceback."""
    import socket
    import subprocess
    import sys
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    held = []

    def serve() -> None:
        srv.settimeout(20)
        try:
            while True:
                conn, _ = srv.accept()
                held.append(conn)
                if answer is not None:
                    conn.sendall(answer)
        except OSError:
            pass
    threading.Thread(target=serve, daemon=True).start()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    env = {**os.environ, "PYTHONPATH": str(REPO), "GGSCOPE_HTTP_TIMEOUT": "1"}
    try:
        r = subprocess.run([sys.executable, "-m", "ggscope", "validate", "--scheduler", f"tcp://127.0.0.1:{port}",
                            str(model)], env=env, capture_output=True, text=True, timeout=25)
    finally:
        srv.close()
        for c in held:
            c.close()
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_a_killed_jobs_worker_is_one_line(tmp_path):
    """SIGKILL to one `validate --jobs 2` worker (what the OOM killer does): the pool is
    broken; the run ends with one line and exit 2, the other worker ended too."""
    import subprocess
    import sys
    small = sorted(FIXTURES.glob("*.gguf"))
    if not small:
        pytest.skip(f"no fixtures in {FIXTURES}; run python fixtures/make_fixtures.py")
    big = _sparse_f32_gguf(tmp_path / "big.gguf", 4 << 30)
    files = [str(small[0])] + [str(big)] * 50
    p = subprocess.Popen([sys.executable, "-m", "ggscope", "validate", "--deep", "--jobs", "2", *files],
                         env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while len(workers) < 2 and p.poll() is None and time.monotonic() < deadline:
            workers = _children(p.pid)
            time.sleep(0.05)
        assert len(workers) >= 2 and p.poll() is None, "the worker processes never started"
        time.sleep(0.5)
        os.kill(min(workers), signal.SIGKILL)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 2, err
    assert err.strip().splitlines() == ["ggscope: a --jobs worker process died (killed, or out of memory) while "
                                        "checking files; rerun without --jobs to find the file"], err
