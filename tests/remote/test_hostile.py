"""Hostile servers (issue 23 item 5): a claimed size checked before it is used, a total
deadline with a minimum rate, redirects held to the URL's host and never to link-local
or (from a public URL) private addresses nor with credentials, token-shaped server text
masked, and every failure one line with exit status 2.  Counts and messages are
asserted, never durations."""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from werkzeug.wrappers import Request, Response

from ggscope.cli import main
from ggscope.source import netguard
from ggscope.source.remote import HttpRangeFetcher, RemoteError

from range_server import RangeServer, file_response

REPO = Path(__file__).resolve().parents[2]
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
TOKEN = "hf_hostiletesttoken0123456789abcd"


@pytest.fixture
def server():
    with RangeServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "2")
    monkeypatch.delenv(netguard.ALLOW_ENV, raising=False)


def _q8() -> Path:
    if not Q8.is_file():
        pytest.skip(f"{Q8} missing; run python fixtures/make_fixtures.py")
    return Q8


def _one_line_exit_2(capsys, argv, *needles) -> str:
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err and len(cap.err.strip().splitlines()) == 1, cap.err
    for n in needles:
        assert n in cap.err, cap.err
    return cap.err


# ---- sizes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("total", [2**62, netguard.MAX_REMOTE_SIZE + 1, 10**19])
def test_a_claimed_size_beyond_the_limit_is_refused_before_it_is_used(server, capsys, total):
    def huge(req: Request) -> Response:       # a consistent answer: the range asked, of a huge file
        start, stop = req.range.range_for_length(total)
        server.served.count(req, stop - start)
        return Response(b"GGUF" + bytes(stop - start - 4), status=206,
                        headers={"Content-Range": f"bytes {start}-{stop - 1}/{total}"})
    url = server.handle("/huge.gguf", huge)
    err = _one_line_exit_2(capsys, ["info", url], f"claims a size of {total} bytes", "1 TiB")
    assert server.served.requests == 1, err


def test_a_size_at_the_limit_is_mapped_sparsely():
    """The largest size accepted costs address space only: the map and its block table."""
    from ggscope.source.mapped import RemoteByteSource

    class Claimed:
        size = netguard.MAX_REMOTE_SIZE
    src = RemoteByteSource(Claimed(), b"GGUF", "http://example.invalid/x.gguf")
    assert src.size == netguard.MAX_REMOTE_SIZE and bytes(src.buf[:4]) == b"GGUF"
    assert src._have.nbytes == netguard.MAX_REMOTE_SIZE // (64 << 10)     # 16 MiB of block table


def test_content_range_digits_are_bounded(server, capsys):
    def long_digits(req: Request) -> Response:
        return Response(b"x", status=206, headers={"Content-Range": "bytes 0-0/" + "9" * 5000})
    url = server.handle("/digits.gguf", long_digits)
    _one_line_exit_2(capsys, ["info", url], "no usable Content-Range")


# ---- deadline ------------------------------------------------------------------------------

def test_a_trickling_server_meets_the_total_deadline(server, capsys, monkeypatch):
    """One byte every 0.2 s never trips a 0.5 s per-read timeout; the request's deadline
    (0.5 s + 256 KiB at 64 KiB/s) ends it with the count of what arrived."""
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "0.5")
    url = server.trickle("/slow.gguf", _q8(), 0.2)
    err = _one_line_exit_2(capsys, ["info", url], "timed out", f"of {256 << 10} bytes arrived",
                           "GGSCOPE_HTTP_TIMEOUT=0.5")
    got = int(re.search(r"timed out: (\d+) of", err).group(1))
    assert 0 < got < 256 << 10 and server.served.bytes_sent < 256 << 10


def test_deadline_grows_with_the_request_and_has_a_floor(monkeypatch):
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "3")
    assert netguard.deadline(0) == 3 and netguard.deadline(netguard.MIN_RATE * 10) == 13
    for bad in ("nan", "inf", "junk"):
        monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", bad)
        assert netguard.timeout() == 30.0
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "0")
    assert netguard.timeout() == 0.1


# ---- redirects -----------------------------------------------------------------------------

def test_same_host_redirect_is_followed(server, capsys):
    q8 = _q8()
    server.serve("/real.gguf", q8)
    url = server.redirect("/moved.gguf", "/real.gguf", 301)
    assert main(["info", "--json", url]) == 0
    assert json.loads(capsys.readouterr().out)["tensors"]


def test_redirect_to_another_host_needs_the_users_leave(server, capsys, monkeypatch):
    q8 = _q8()
    other = server.serve("/real.gguf", q8).replace("127.0.0.1", "localhost")
    url = server.redirect("/elsewhere.gguf", other)
    err = _one_line_exit_2(capsys, ["info", url], "not followed", "another host, localhost",
                           f"{netguard.ALLOW_ENV}=localhost")
    assert server.served.requests == 1, err
    monkeypatch.setenv(netguard.ALLOW_ENV, "localhost")
    assert main(["info", "--json", url]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/x",
                                    "http://0.0.0.0/x", "http://[::ffff:169.254.169.254]/x", "http://2852039166/x"])
@pytest.mark.parametrize("allow", ["*", None])
def test_never_to_link_local_even_when_every_host_is_allowed(server, capsys, monkeypatch, target, allow):
    if allow:
        monkeypatch.setenv(netguard.ALLOW_ENV, allow)
    url = server.redirect("/meta.gguf", target)
    err = _one_line_exit_2(capsys, ["info", url], "not followed", "link-local or unroutable"
                           if allow or "2852039166" not in target else "another host")
    assert server.served.requests == 1 and "unknown format" not in err


@pytest.mark.parametrize("target", ["http://127.0.0.1:8080/x", "http://10.1.2.3/x", "http://192.168.0.1/x",
                                    "http://[::1]/x", "http://100.64.0.1/x"])
def test_never_from_a_public_url_to_a_private_address(monkeypatch, target):
    monkeypatch.setenv(netguard.ALLOW_ENV, "*")
    policy = netguard.RedirectPolicy("http://93.184.215.14/model.gguf")
    with pytest.raises(netguard.RedirectRefused, match="from a public address"):
        asyncio.run(policy.check(policy.url, target))
    asyncio.run(policy.check(policy.url, "http://8.8.8.8/model.gguf"))     # public to public: allowed


@pytest.mark.parametrize("target, why", [("ftp://127.0.0.1/x", "non-HTTP"),
                                         ("http://user:pw@127.0.0.1/x", "carries credentials"),
                                         ("http://a.example/x", "another host")])
def test_redirect_refusals(target, why):
    policy = netguard.RedirectPolicy("http://127.0.0.1/model.gguf")
    with pytest.raises(netguard.RedirectRefused, match=why):
        asyncio.run(policy.check(policy.url, target))
    https = netguard.RedirectPolicy("https://127.0.0.1/model.gguf")
    with pytest.raises(netguard.RedirectRefused, match="https to plain http"):
        asyncio.run(https.check(https.url, "http://127.0.0.1/model.gguf"))


def test_hub_domains_only_for_the_hub():
    assert "*.hf.co" in netguard.hub_policy_domains("https://huggingface.co")
    assert netguard.hub_policy_domains("http://127.0.0.1:5000") == ()


def test_credentials_stay_with_the_origin(server, monkeypatch):
    q8 = _q8()
    seen = []

    def real(req: Request) -> Response:
        seen.append((req.host.split(":")[0], req.headers.get("Authorization"), req.headers.get("Cookie")))
        return file_response(req, q8, server.served)
    target = server.handle("/real.gguf", real)
    server.redirect("/same.gguf", "/real.gguf")
    server.redirect("/other.gguf", target.replace("127.0.0.1", "localhost"))
    monkeypatch.setenv(netguard.ALLOW_ENV, "localhost")
    auth = {"Authorization": f"Bearer {TOKEN}", "Cookie": "session=1"}
    assert HttpRangeFetcher(server.url("/same.gguf"), "same", auth).fetch(0, 4) == b"GGUF"
    assert HttpRangeFetcher(server.url("/other.gguf"), "other", auth).fetch(0, 4) == b"GGUF"
    assert seen == [("127.0.0.1", f"Bearer {TOKEN}", "session=1"), ("localhost", None, None)]


def test_a_redirect_loop_is_one_line(server, capsys):
    url = server.redirect("/loop.gguf", "/loop.gguf")
    _one_line_exit_2(capsys, ["info", url], f"more than {netguard.MAX_REDIRECTS} redirects")
    assert server.served.requests == netguard.MAX_REDIRECTS + 1


# ---- server text ---------------------------------------------------------------------------

def test_mask_hides_token_shapes_and_keeps_the_rest():
    text = (f"bad request\nAuthorization: Bearer {TOKEN} x-api-key=abc123secret "
            "sig=0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b token hf_abcdefghij12 HTTP 500 not found")
    got = netguard.mask(text, ["sekrit-value"])
    for leak in (TOKEN, "abc123secret", "0a1b2c3d4e5f6a7b8c9d", "hf_abcdefghij12"):
        assert leak not in got
    assert "\n" not in got and got.startswith("bad request") and "HTTP 500 not found" in got
    assert netguard.mask("my sekrit-value here", ["sekrit-value"]) == "my *** here"
    assert len(netguard.mask("x" * 1000)) == 200


def test_a_reason_phrase_echoing_the_token_is_masked(server, capsys):
    def echo(req: Request) -> Response:
        return Response("no", status=f"599 echo {req.headers.get('Authorization')}")
    url = server.handle("/echo.gguf", echo)
    with pytest.raises(RemoteError) as exc:
        HttpRangeFetcher(url, "echo", {"Authorization": "Bearer plainsecretvalue"}).fetch(0, 4)
    assert "HTTP 599" in str(exc.value) and "plainsecretvalue" not in str(exc.value)


# ---- the Hub -------------------------------------------------------------------------------

def _ggscope_hub(server, *argv, timeout="5"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "GGSCOPE_"))}
    env.update(HF_ENDPOINT=server.url("").rstrip("/"), HF_TOKEN=TOKEN, HF_HUB_DISABLE_TELEMETRY="1",
               HF_HOME=str(Path(os.environ.get("TMPDIR", "/tmp")) / "no-hf-home"),
               GGSCOPE_HTTP_TIMEOUT=timeout, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "ggscope", *argv], env=env, capture_output=True, text=True,
                          timeout=60)


def test_a_hub_echoing_the_authorization_header_gets_it_masked(server):
    def echo(req: Request) -> Response:
        return Response(json.dumps({"error": f"bad header Authorization: {req.headers.get('Authorization')} "
                                             f"(token {TOKEN})"}), status=500, mimetype="application/json")
    server.handle(re.compile(r"^/api/models/.*"), echo)
    r = _ggscope_hub(server, "info", "hf://owner/repo/model.gguf")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cannot resolve on the Hugging Face Hub" in r.stderr and TOKEN not in r.stderr + r.stdout
    assert "Traceback" not in r.stderr


def test_hub_resolution_keeps_to_the_timeout(server):
    import threading
    release = threading.Event()

    def stall(req: Request) -> Response:
        release.wait(30)
        return Response("{}", mimetype="application/json")
    server.handle(re.compile(r"^/api/models/.*"), stall)
    try:
        r = _ggscope_hub(server, "info", "hf://owner/repo/model.gguf", timeout="1")
    finally:
        release.set()
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "did not resolve it within 1 s (GGSCOPE_HTTP_TIMEOUT)" in r.stderr
