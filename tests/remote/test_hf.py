"""hf:// paths through huggingface_hub's HfFileSystem, pointed (HF_ENDPOINT) at a loopback
server that answers the two Hub routes a read needs: the repository/revision lookup
(``/api/models/OWNER/REPO/revision/REV``) and ``/OWNER/REPO/resolve/REV/PATH`` with
Range.  The token comes from HF_TOKEN, is sent, and never printed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from werkzeug.wrappers import Request, Response

from range_server import RangeServer, file_response

REPO = Path(__file__).resolve().parents[2]
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
TOKEN = "hf_loopbacktesttoken0123456789"
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub():
    if not Q8.is_file():
        pytest.skip(f"{Q8} missing; run python fixtures/make_fixtures.py")
    seen = {"auth": [], "paths": []}
    with RangeServer() as s:
        def repo_info(req: Request) -> Response:
            seen["paths"].append(req.path)
            rev = req.path.rsplit("/revision/", 1)[-1] if "/revision/" in req.path else "main"
            if rev not in ("main", SHA):
                return Response(json.dumps({"error": "Invalid rev id"}), status=404,
                                headers={"X-Error-Code": "RevisionNotFound"}, mimetype="application/json")
            return Response(json.dumps({"id": "owner/repo", "modelId": "owner/repo", "sha": SHA,
                                        "private": True, "siblings": []}), mimetype="application/json")

        def resolve(req: Request) -> Response:
            seen["auth"].append(req.headers.get("Authorization", ""))
            seen["paths"].append(req.path)
            if req.headers.get("Authorization") != f"Bearer {TOKEN}":
                return Response("unauthorized", status=401)
            return file_response(req, Q8, s.served)

        import re
        s.http.expect_request(re.compile(r"^/api/models/owner/repo(/revision/.*)?$")).respond_with_handler(repo_info)
        s.http.expect_request(re.compile(rf"^/owner/repo/resolve/(main|{SHA})/sub/{Q8.name}$")) \
            .respond_with_handler(resolve)
        yield s, seen


def _ggscope(server, *argv, token=TOKEN):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=server.url("").rstrip("/"), HF_HOME=str(Path(os.environ.get("TMPDIR", "/tmp")) / "no-hf-home"),
               HF_HUB_DISABLE_TELEMETRY="1", GGSCOPE_HTTP_TIMEOUT="5", PYTHONPATH=str(REPO))
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "ggscope", *argv], env=env, capture_output=True, text=True,
                          timeout=120)


def test_hf_path_with_revision_reads_by_range_and_sends_the_token(hub):
    server, seen = hub
    local = subprocess.run([sys.executable, "-m", "ggscope", "info", "--json", str(Q8)], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    for path in (f"hf://owner/repo/sub/{Q8.name}@main", f"hf://owner/repo@{SHA}/sub/{Q8.name}"):
        r = _ggscope(server, "info", "--json", path)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["tensors"] == json.loads(local.stdout)["tensors"]
        assert TOKEN not in r.stdout + r.stderr
    assert seen["auth"] and all(a == f"Bearer {TOKEN}" for a in seen["auth"])
    assert all(r.startswith("bytes=") for r in server.served.ranges)


def test_hf_errors_are_one_line(hub):
    server, _ = hub
    r = _ggscope(server, "info", f"hf://owner/repo/sub/{Q8.name}@nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert "not found on the Hugging Face Hub" in r.stderr and "nope" in r.stderr
    r = _ggscope(server, "info", f"hf://owner/repo/sub/{Q8.name}", token=None)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert "access denied (HTTP 401)" in r.stderr and TOKEN not in r.stderr
