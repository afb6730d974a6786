"""Range reads of remote model files: ``http(s)://`` through fsspec, ``hf://`` through
huggingface_hub's ``HfFileSystem``.

Why a validating layer over fsspec's session instead of ``fs.open().read()``: fsspec's
HTTP file silently accepts a server that ignores ``Range`` when reading from offset 0
and never notices a file that changes size between two requests; HfFileSystem's file
reads a whole response into memory.  For a 20 GB model each of those is either wrong
answers or a 20 GB download.  So every request here is a ranged GET on fsspec's aiohttp
session (its connection pool, URL encoding, event loop) whose answer must be ``206``
with a ``Content-Range`` that matches the request and the size seen first (and the
ETag and Last-Modified seen first, where the server sends them); anything
else is a ``RemoteError`` with one line of text.  ``hf://`` paths are resolved by
``HfFileSystem`` (repository, revision, path; the token from ``HF_TOKEN`` or the token
file, as every Hugging Face tool does) and then read through the same ranged GET.

Timeouts: ``GGSCOPE_HTTP_TIMEOUT`` seconds (default 30) to connect and between two
chunks of an answer, so a stalled server is an error, not a hang.
"""
from __future__ import annotations

import os
import re

from ggscope.core.errors import UnreadableFile

__all__ = ["RemoteError", "RangeReader", "is_remote", "open_reader", "timeout"]

REMOTE_PREFIXES = ("http://", "https://", "hf://")
_CONTENT_RANGE = re.compile(r"bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)")


class RemoteError(UnreadableFile):
    """A remote file could not be read (network, HTTP status, a server without Range)."""


def is_remote(path: object) -> bool:
    return isinstance(path, str) and path.startswith(REMOTE_PREFIXES)


def timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("GGSCOPE_HTTP_TIMEOUT", "30")))
    except ValueError:
        return 30.0


def _printable(text: object, limit: int = 200) -> str:
    """Server-provided text, one line, no control characters."""
    s = str(text) if text is not None else ""
    s = s.splitlines()[0] if s.strip() else ""
    return "".join(ch if ch.isprintable() else " " for ch in s)[:limit]


def _http_fs():
    import aiohttp
    import fsspec
    t = timeout()
    return fsspec.filesystem("http", client_kwargs={
        "timeout": aiohttp.ClientTimeout(total=None, sock_connect=t, sock_read=t)})


class RangeReader:
    """Ranged GETs of one URL; counts requests and bytes so benchmarks and tests can see them."""

    def __init__(self, url: str, display: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.display = display
        self.headers = dict(headers or {})
        self.size: int | None = None
        self.identity: tuple[str | None, str | None] | None = None    # (ETag, Last-Modified) first seen
        self.requests = 0
        self.bytes_received = 0
        self._fs = _http_fs()

    # ---- public -----------------------------------------------------------------------
    def fetch(self, start: int, end: int) -> bytes:
        """Exactly the bytes [start, end) (clipped to the file once its size is known)."""
        import asyncio

        from fsspec.asyn import sync
        if self.size is not None:
            end = min(end, self.size)
        if end <= start:
            return b""
        try:
            return sync(self._fs.loop, self._get, start, end, timeout=None)
        except RemoteError:
            raise
        except (asyncio.TimeoutError, TimeoutError):
            raise RemoteError(f"{self.display}: no answer within {timeout():g} s (timed out)") from None
        except Exception as exc:  # noqa: BLE001 - aiohttp / OS errors become one line
            raise RemoteError(f"{self.display}: network error: {_describe(exc)}") from None

    # ---- one request ------------------------------------------------------------------
    async def _get(self, start: int, end: int) -> bytes:
        import asyncio
        fs = self._fs
        session = await fs.set_session()
        headers = {**self.headers, "Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}
        self.requests += 1
        async with session.get(fs.encode_url(self.url), headers=headers, allow_redirects=True) as r:
            status = r.status
            if status == 416:
                total = _parse_range(r.headers.get("Content-Range", ""))[2]
                if total is not None:
                    self._check_size(total)
                    return b""
            if status in (401, 403):
                raise RemoteError(f"{self.display}: access denied (HTTP {status}); for a gated or private "
                                  "Hugging Face repository set HF_TOKEN or log in with `hf auth login`")
            if status in (404, 410):
                raise RemoteError(f"{self.display}: not found (HTTP {status})")
            if status == 200:
                raise RemoteError(f"{self.display}: the server ignores HTTP Range requests (it answered 200 "
                                  "with the whole file); ggscope reads remote files by range only")
            if status != 206:
                raise RemoteError(f"{self.display}: the server answered HTTP {status} "
                                  f"{_printable(r.reason)}".rstrip())
            first, last, total = _parse_range(r.headers.get("Content-Range", ""))
            if first is None or total is None:
                raise RemoteError(f"{self.display}: the server's partial answer has no usable Content-Range "
                                  f"header ({_printable(r.headers.get('Content-Range', 'none'))})")
            self._check_size(total)
            self._check_identity(r.headers.get("ETag"), r.headers.get("Last-Modified"))
            want = min(end, total) - start
            if first != start or last - first + 1 != want:
                raise RemoteError(f"{self.display}: asked for bytes {start}-{start + want - 1}, the server sent "
                                  f"{first}-{last}")
            try:
                data = await r.content.readexactly(want)
            except asyncio.IncompleteReadError as exc:
                raise RemoteError(f"{self.display}: the connection closed after {len(exc.partial)} of "
                                  f"{want} bytes") from None
            self.bytes_received += len(data)
            return data

    def _check_size(self, total: int) -> None:
        if self.size is None:
            self.size = total
        elif total != self.size:
            raise RemoteError(f"{self.display}: the file changed size from {self.size} to {total} bytes "
                              "while being read")

    def _check_identity(self, etag: str | None, modified: str | None) -> None:
        """A file replaced by one of the same size shows a new ETag or Last-Modified: an
        error, not bytes of two different files mixed into one answer."""
        if self.identity is None:
            self.identity = (etag, modified)
        elif _changed(self.identity[0], etag) or _changed(self.identity[1], modified):
            raise RemoteError(f"{self.display}: the file changed while being read (its "
                              f"{'ETag' if _changed(self.identity[0], etag) else 'Last-Modified date'} changed)")


def _changed(old: str | None, new: str | None) -> bool:
    return old is not None and new is not None and old != new


def _parse_range(value: str) -> tuple[int | None, int | None, int | None]:
    m = _CONTENT_RANGE.search(value or "")
    if not m:
        return None, None, None
    first = int(m.group(1)) if m.group(1) is not None else None
    last = int(m.group(2)) if m.group(2) is not None else None
    total = int(m.group(3)) if m.group(3) not in (None, "*") else None
    return first, last, total


def _describe(exc: BaseException) -> str:
    text = _printable(exc)
    return text or type(exc).__name__


# ---- hf:// ----------------------------------------------------------------------------

def _hf_reader(path: str) -> RangeReader:
    """``hf://OWNER/REPO/PATH[@REVISION]`` (or HfFileSystem's own ``OWNER/REPO@REVISION/PATH``)."""
    spec = path[len("hf://"):]
    revision = None
    head, _, last = spec.rpartition("/")
    if "@" in last and head.count("/") >= 1:
        last, _, revision = last.partition("@")
        spec = f"{head}/{last}"
    try:
        from huggingface_hub import HfFileSystem, hf_hub_url
        from huggingface_hub.utils import build_hf_headers
        fs = HfFileSystem()
        res = fs.resolve_path(spec, revision=revision)
        url = hf_hub_url(res.repo_id, res.path_in_repo, repo_type=res.repo_type, revision=res.revision,
                         endpoint=fs.endpoint)
        headers = build_hf_headers()
    except FileNotFoundError as exc:
        raise RemoteError(f"{path}: not found on the Hugging Face Hub ({_describe(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - resolution errors (network, HTTP, bad path) become one line
        raise RemoteError(f"{path}: cannot resolve on the Hugging Face Hub: {_describe(exc)}") from None
    if not res.path_in_repo:
        raise RemoteError(f"{path}: names a repository, not a file in it")
    return RangeReader(url, path, headers)


def open_reader(path: str) -> RangeReader:
    if path.startswith("hf://"):
        return _hf_reader(path)
    return RangeReader(path, path)
