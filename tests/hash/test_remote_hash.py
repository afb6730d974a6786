"""Hashing over HTTP ranges: the same digests as the local file, only tensor data
requested, several requests in flight, progress reported, and a file that changes
while it is read is an error rather than a wrong hash."""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from ggscope.cli import main
from ggscope.core import progress

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
import generated  # noqa: E402
from range_server import RangeServer, file_response  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return generated.write_all(tmp_path_factory.mktemp("hash_remote"))


@pytest.fixture(autouse=True)
def _short_timeout(monkeypatch):
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "5")


def run(capsysbinary, args: list[str]) -> tuple[int, bytes, bytes]:
    capsysbinary.readouterr()
    code = main(["hash", *args])
    got = capsysbinary.readouterr()
    return code, got.out, got.err


def test_a_url_hashes_as_the_local_file(files, capsysbinary, monkeypatch):
    p = files["big_tensor.gguf"]
    monkeypatch.chdir(p.parent)
    code, local, _ = run(capsysbinary, ["--all", "--uuid", p.name])
    assert code == 0
    with RangeServer() as srv:
        url = srv.serve("/m/big_tensor.gguf", p)
        code, remote, _ = run(capsysbinary, ["--all", "--uuid", url])
        assert code == 0
        assert remote == local.replace(p.name.encode(), url.encode())
        # the header once, then the tensor data: never the whole file twice
        assert srv.served.bytes_sent <= (256 << 10) + p.stat().st_size


def test_a_remote_split_set_hashes_from_any_shard(files, capsysbinary, monkeypatch):
    monkeypatch.chdir(files[generated.SPLIT[0]].parent)
    code, local, _ = run(capsysbinary, ["--sha256", generated.SPLIT[2]])
    with RangeServer() as srv:
        urls = [srv.serve(f"/s/{n}", files[n]) for n in generated.SPLIT]
        base = urls[0].rsplit("/", 1)[0] + "/"
        code, remote, _ = run(capsysbinary, ["--sha256", urls[1]])
    assert code == 0 and remote == local.replace(b"split-", base.encode() + b"split-")


def test_several_reads_are_in_flight_and_progress_is_reported(files, capsysbinary):
    p = files["big_tensor.gguf"]
    live, peak, lock = [0], [0], threading.Lock()
    with RangeServer() as srv:
        def handler(req):
            with lock:
                live[0] += 1
                peak[0] = max(peak[0], live[0])
            time.sleep(0.3)
            try:
                return file_response(req, p, srv.served)
            finally:
                with lock:
                    live[0] -= 1
        srv.http.expect_request("/slow.gguf").respond_with_handler(handler)
        url = srv.url("/slow.gguf")
        seen: list[tuple[str, int | None, int]] = []

        class Rec:
            def __init__(self, desc, total):
                self.desc, self.total, self.done = desc, total, 0

            def advance(self, n):
                self.done += n

            def update(self, done, total=None, desc=None):
                self.done = done

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                seen.append((self.desc, self.total, self.done))

        from ggscope.hash.engine import hash_set
        with progress.use(Rec):
            sh = hash_set(url, ["xxh64"], threads=1)
    assert peak[0] >= 2                                  # the two 8 MiB windows of big.weight at once
    hashing = [s for s in seen if s[0].startswith("hashing ")]
    assert hashing and hashing[-1][1] == hashing[-1][2] == sh.files[0].nbytes


def test_a_remote_file_that_changes_size_while_read_is_an_error(files, capsysbinary):
    with RangeServer() as srv:
        url = srv.serve_growing("/g.gguf", files["big_tensor.gguf"], files["many_tensors.gguf"])
        code, out, err = run(capsysbinary, [url])
    assert code == 2 and out == b""
    assert err.count(b"\n") == 1 and b"changed" in err


def test_a_remote_file_replaced_by_one_of_the_same_size_is_an_error(files, tmp_path, capsysbinary):
    a = files["big_tensor.gguf"]
    b = tmp_path / "b.gguf"
    data = bytearray(a.read_bytes())
    data[-1000] ^= 0xFF                                   # same size, other content, other ETag
    b.write_bytes(bytes(data))
    calls = []
    with RangeServer() as srv:
        def handler(req):
            calls.append(1)
            resp = file_response(req, a if len(calls) == 1 else b, srv.served)
            resp.set_etag("v1" if len(calls) == 1 else "v2")
            return resp
        srv.http.expect_request("/r.gguf").respond_with_handler(handler)
        code, out, err = run(capsysbinary, [srv.url("/r.gguf")])
    assert code == 2 and out == b""
    assert b"changed while being read" in err and b"ETag" in err


def test_an_hf_path_hashes_as_the_local_file(tmp_path):
    """hf://OWNER/REPO/PATH through huggingface_hub (HF_ENDPOINT at a loopback Hub that
    answers the revision lookup and the ranged resolve), as tests/remote/test_hf.py does."""
    import json
    import os
    import re
    import subprocess

    from werkzeug.wrappers import Response
    repo = Path(__file__).resolve().parents[2]
    q8 = repo / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
    sha = "0123456789abcdef0123456789abcdef01234567"
    with RangeServer() as srv:
        srv.http.expect_request(re.compile(r"^/api/models/owner/repo(/revision/.*)?$")).respond_with_handler(
            lambda req: Response(json.dumps({"id": "owner/repo", "sha": sha, "siblings": []}),
                                 mimetype="application/json"))
        srv.http.expect_request(re.compile(rf"^/owner/repo/resolve/(main|{sha})/{q8.name}$")).respond_with_handler(
            lambda req: file_response(req, q8, srv.served))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=srv.url("").rstrip("/"), HF_HOME=str(tmp_path / "hf-home"), HF_TOKEN="hf_x",
                   HF_HUB_DISABLE_TELEMETRY="1", GGSCOPE_HTTP_TIMEOUT="5", PYTHONPATH=str(repo))
        url = f"hf://owner/repo/{q8.name}"
        got = subprocess.run([sys.executable, "-m", "ggscope", "hash", "--sha256", url], env=env,
                             capture_output=True, timeout=120)
    local = subprocess.run([sys.executable, "-m", "ggscope", "hash", "--sha256", q8.name], cwd=q8.parent,
                           env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout == local.stdout.replace(q8.name.encode(), url.encode())
