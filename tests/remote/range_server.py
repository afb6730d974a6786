"""A loopback HTTP server for the remote tests: pytest-httpserver (werkzeug) serving
files with werkzeug's own Range support, counting requests and bytes sent.

Misbehaviour on demand: ``mode`` "ranges" (a correct server), "ignore-range" (answers
200 with the whole body), "error" (HTTP 500), "stall" (sleeps before answering),
plus per-path status codes (404, 403), a file that grows after the first request, and
the hostile servers of ``test_hostile``: redirects (``redirect``), a body trickled a
byte at a time (``trickle``) and any handler of a test's own (``handle``).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response
from werkzeug.wsgi import wrap_file


@dataclass
class Served:
    requests: int = 0
    bytes_sent: int = 0
    ranges: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, req: Request, nbytes: int) -> None:
        with self.lock:
            self.requests += 1
            self.bytes_sent += nbytes
            self.ranges.append(req.headers.get("Range", ""))


def file_response(req: Request, path: Path, served: Served | None = None, *, ranges: bool = True) -> Response:
    size = os.path.getsize(path)
    fh = open(path, "rb")  # noqa: SIM115 - werkzeug closes the wrapper when the response ends
    resp = Response(wrap_file(req.environ, fh), mimetype="application/octet-stream", direct_passthrough=True)
    resp.content_length = size
    if ranges:
        resp = resp.make_conditional(req.environ, accept_ranges=True, complete_length=size)
    if served is not None:
        served.count(req, resp.content_length or 0)
    return resp


class RangeServer:
    """Serve ``files`` (url path -> local path) on 127.0.0.1; see the module docstring."""

    def __init__(self, *, threaded: bool = True) -> None:
        self.http = HTTPServer(host="127.0.0.1", threaded=threaded)
        self.served = Served()
        self.delay = 0.0           # seconds added to every request (latency)

    def __enter__(self) -> "RangeServer":
        self.http.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.clear()
        if self.http.is_running():
            self.http.stop()

    def url(self, path: str) -> str:
        return self.http.url_for(path)

    def serve(self, urlpath: str, path: Path, *, mode: str = "ranges", stall: float = 5.0) -> str:
        def handler(req: Request) -> Response:
            if self.delay:
                time.sleep(self.delay)
            if mode == "error":
                self.served.count(req, 0)
                return Response("internal error", status=500)
            if mode == "stall":
                time.sleep(stall)
            return file_response(req, path, self.served, ranges=mode != "ignore-range")
        self.http.expect_request(urlpath).respond_with_handler(handler)
        return self.url(urlpath)

    def serve_growing(self, urlpath: str, first: Path, later: Path) -> str:
        """``first`` for the first request, ``later`` (another size) for every one after it."""
        calls = []

        def handler(req: Request) -> Response:
            calls.append(1)
            return file_response(req, first if len(calls) == 1 else later, self.served)
        self.http.expect_request(urlpath).respond_with_handler(handler)
        return self.url(urlpath)

    def status(self, urlpath: str, code: int) -> str:
        self.http.expect_request(urlpath).respond_with_data("no", status=code)
        return self.url(urlpath)

    def redirect(self, urlpath: str, location: str, code: int = 302) -> str:
        def handler(req: Request) -> Response:
            self.served.count(req, 0)
            return Response("", status=code, headers={"Location": location})
        self.http.expect_request(urlpath).respond_with_handler(handler)
        return self.url(urlpath)

    def trickle(self, urlpath: str, path: Path, interval: float) -> str:
        """A correct 206 header for the range asked, then one byte every ``interval`` s."""
        data = path.read_bytes()

        def handler(req: Request) -> Response:
            rng = req.range
            start, stop = rng.range_for_length(len(data)) if rng else (0, len(data))

            def body():
                for i in range(start, stop):
                    time.sleep(interval)
                    with self.served.lock:
                        self.served.bytes_sent += 1
                    yield data[i:i + 1]
            self.served.count(req, 0)
            return Response(body(), status=206, direct_passthrough=True, headers={
                "Content-Range": f"bytes {start}-{stop - 1}/{len(data)}", "Content-Length": str(stop - start)})
        self.http.expect_request(urlpath).respond_with_handler(handler)
        return self.url(urlpath)

    def handle(self, urlpath, handler) -> str:
        self.http.expect_request(urlpath).respond_with_handler(handler)
        return self.url(urlpath) if isinstance(urlpath, str) else self.url("")
