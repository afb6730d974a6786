"""How long ggscope takes to give up on a hostile or absent peer (issue 23 item 5).

Each case runs ``python -m ggscope ...`` in a fresh process against a loopback peer
and reports the seconds until it exits, its exit status and its last stderr line:

* servers (pytest-httpserver): a ``Content-Range`` total of 2^62 with a consistent
  answer; a body trickled one byte per 0.2 s (GGSCOPE_HTTP_TIMEOUT=2); a redirect to
  169.254.169.254; a redirect loop; a Hub whose repository lookup never answers
  (GGSCOPE_HTTP_TIMEOUT=3);
* Dask schedulers: a refused port (no timeout set: the 30 s default) and a port that
  accepts and stays silent (GGSCOPE_HTTP_TIMEOUT=2);
* Ctrl-C: ``validate --deep --jobs 2`` over 200 links to a sparse 1 GiB model, SIGINT
  to the parent alone and to the process group once both workers run.

With ``--other PATH`` (the root of another ggscope checkout, e.g. an older commit made
with ``git worktree add``) each case runs on both trees in the same session, side by
side; the load average is printed at the end.  A case still running after ``--cap``
seconds is killed and reported as such.

Run: python benchmarks/give_up.py [--other ../ggscope-old] [--cap 60]
Needs the test extra (pytest-httpserver) and ggscope[dask].
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "remote"))
sys.path.insert(0, str(REPO / "tests" / "commands"))
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def run(tree: Path, argv: list[str], env: dict | None = None, cap: float = 60) -> tuple[float, str]:
    e = {**os.environ, "PYTHONPATH": str(tree), **(env or {})}
    t = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "ggscope", *argv], env=e, capture_output=True, text=True,
                           timeout=cap, cwd=tree)       # -m puts the working directory first on sys.path
        lines = r.stderr.strip().splitlines()
        what = f"exit {r.returncode}, {len(lines)} stderr line(s): {lines[-1][:100] if lines else ''}"
    except subprocess.TimeoutExpired:
        what = f"still running after {cap:g} s (killed)"
    return time.monotonic() - t, what


def ctrl_c(tree: Path, files: list[str], group: bool, cap: float) -> tuple[float, str]:
    from test_validate_cluster import _children
    p = subprocess.Popen([sys.executable, "-m", "ggscope", "validate", "--deep", "--jobs", "2", "--format", "json",
                          *files], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    while len(_children(p.pid)) < 2 and p.poll() is None:
        time.sleep(0.05)
    time.sleep(1)
    t = time.monotonic()
    (os.killpg if group else os.kill)(p.pid, signal.SIGINT)
    try:
        _, err = p.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return time.monotonic() - t, f"still running after {cap:g} s (killed)"
    return time.monotonic() - t, f"exit {p.returncode}, {len(err.splitlines())} stderr line(s), " \
                                 f"{err.count('Traceback')} traceback(s)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, default=None, help="root of another ggscope checkout to compare")
    ap.add_argument("--cap", type=float, default=60.0, help="seconds before a case is killed")
    args = ap.parse_args()
    trees = {"this": REPO, **({"other": args.other.resolve()} if args.other else {})}

    from range_server import RangeServer
    from test_validate_cluster import _sparse_f32_gguf
    from werkzeug.wrappers import Response

    rows: list[tuple[str, str, float, str]] = []
    with RangeServer() as s, tempfile.TemporaryDirectory() as tmp:
        total = 2**62

        def huge(req):
            start, stop = req.range.range_for_length(total)
            return Response(b"GGUF" + bytes(stop - start - 4), status=206,
                            headers={"Content-Range": f"bytes {start}-{stop - 1}/{total}"})
        release = threading.Event()

        def stall(req):
            release.wait(args.cap)
            return Response("{}", mimetype="application/json")
        s.http.expect_request(re.compile(r"^/api/models/.*")).respond_with_handler(stall)
        cases = [
            ("Content-Range total 2^62", ["info", s.handle("/huge.gguf", huge)], {}),
            ("trickle 1 B / 0.2 s, T=2", ["info", s.trickle("/slow.gguf", Q8, 0.2)], {"GGSCOPE_HTTP_TIMEOUT": "2"}),
            ("redirect to 169.254.169.254", ["info", s.redirect("/meta.gguf", "http://169.254.169.254/x")],
             {"GGSCOPE_HTTP_TIMEOUT": "2"}),
            ("redirect loop", ["info", s.redirect("/loop.gguf", "/loop.gguf")], {}),
            ("Hub lookup stalls, T=3", ["info", "hf://owner/repo/m.gguf"],
             {"HF_ENDPOINT": s.url("").rstrip("/"), "HF_TOKEN": "hf_" + "x" * 30, "GGSCOPE_HTTP_TIMEOUT": "3",
              "HF_HUB_DISABLE_TELEMETRY": "1"}),
            ("Dask scheduler refused", ["validate", "--scheduler", "tcp://127.0.0.1:1", str(Q8)], {}),
        ]
        for label, argv, env in cases:
            for name, tree in trees.items():
                rows.append((label, name, *run(tree, argv, env, args.cap)))
                print(*rows[-1][:2], f"{rows[-1][2]:.1f} s", rows[-1][3], sep="  |  ", flush=True)
        for name, tree in trees.items():
            srv = socket.create_server(("127.0.0.1", 0))
            held: list[socket.socket] = []

            def accept(srv=srv, held=held) -> None:
                try:
                    while True:
                        held.append(srv.accept()[0])
                except OSError:
                    pass
            threading.Thread(target=accept, daemon=True).start()
            rows.append(("Dask scheduler silent, T=2", name, *run(
                tree, ["validate", "--scheduler", f"tcp://127.0.0.1:{srv.getsockname()[1]}", str(Q8)],
                {"GGSCOPE_HTTP_TIMEOUT": "2"}, args.cap)))
            print(*rows[-1][:2], f"{rows[-1][2]:.1f} s", rows[-1][3], sep="  |  ", flush=True)
            srv.close()
            for c in held:
                c.close()
        release.set()
        big = _sparse_f32_gguf(Path(tmp) / "big.gguf", 1 << 30)
        files = [str(Q8)]
        for i in range(200):
            (Path(tmp) / f"{i:03d}.gguf").symlink_to(big)
            files.append(str(Path(tmp) / f"{i:03d}.gguf"))
        for group in (False, True):
            for name, tree in trees.items():
                rows.append((f"Ctrl-C --jobs 2 ({'group' if group else 'parent'})", name,
                             *ctrl_c(tree, files, group, args.cap)))
                print(*rows[-1][:2], f"{rows[-1][2]:.2f} s", rows[-1][3], sep="  |  ", flush=True)
    print("load average (1, 5, 15 min):", ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
