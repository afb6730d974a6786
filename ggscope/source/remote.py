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

A server is hostile input: ``netguard`` holds every request to its limits - a claimed
size is checked before it is used, a request (redirects and body included) ends within
``netguard.deadline``, redirects are followed here one hop at a time under its
``RedirectPolicy`` (the Authorization header only to the same origin), and server text
reaches a message only through ``netguard.mask``.  The Hub's resolution runs under the
same timeout.  ``GGSCOPE_HTTP_TIMEOUT`` seconds (default 30) also bound connecting and
the wait between two chunks of an answer.
"""
from __future__ import annotations

import re
from urllib.parse import urljoin

from ggscope.core.errors import UnreadableFile
from ggscope.source import netguard
from ggscope.source.local import is_remote
from ggscope.source.netguard import timeout

__all__ = ["RemoteError", "HttpRangeFetcher", "is_remote", "open_reader", "timeout"]

_CONTENT_RANGE = re.compile(r"\s*bytes\s+(?:(\d{1,20})-(\d{1,20})|\*)/(\d{1,20}|\*)\s*")
_REDIRECTS = (301, 302, 303, 307, 308)
_CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")


class RemoteError(UnreadableFile):
    """A remote file could not be read (network, HTTP status, a server without Range)."""


def _http_fs():
    import aiohttp
    import fsspec
    t = timeout()
    return fsspec.filesystem("http", client_kwargs={
        "timeout": aiohttp.ClientTimeout(total=None, sock_connect=t, sock_read=t)})


class HttpRangeFetcher:
    """Ranged GETs of one URL under ``netguard``'s limits; counts requests and bytes so
    benchmarks and tests can see them."""

    def __init__(self, url: str, display: str, headers: dict[str, str] | None = None,
                 redirect_domains: tuple[str, ...] = ()) -> None:
        self.url = url
        self.display = display
        self.headers = dict(headers or {})
        self.policy = netguard.RedirectPolicy(url, redirect_domains)
        self.size: int | None = None
        self.identity: tuple[str | None, str | None] | None = None    # (ETag, Last-Modified) first seen
        self.requests = 0
        self.bytes_received = 0
        self._fs = _http_fs()
        self._secrets = tuple(v.split(" ", 1)[-1] for k, v in self.headers.items()
                              if k.lower() in _CREDENTIAL_HEADERS)
        self._got = 0                # bytes of the current request's body so far

    # ---- public -----------------------------------------------------------------------
    def fetch(self, start: int, end: int) -> bytes:
        """Exactly the bytes [start, end) (clipped to the file once its size is known)."""
        import asyncio

        from fsspec.asyn import sync
        if self.size is not None:
            end = min(end, self.size)
        if end <= start:
            return b""
        limit = netguard.deadline(end - start)
        self._got = 0
        try:
            return sync(self._fs.loop, self._bounded, start, end, limit, timeout=None)
        except RemoteError:
            raise
        except (asyncio.TimeoutError, TimeoutError):
            raise RemoteError(f"{self.display}: timed out: {self._got} of {end - start} bytes arrived within "
                              f"{limit:.3g} s ({netguard.TIMEOUT_ENV}={timeout():g} s, then at least "
                              f"{netguard.MIN_RATE >> 10} KiB/s)") from None
        except Exception as exc:  # noqa: BLE001 - aiohttp / OS errors become one line
            raise RemoteError(f"{self.display}: network error: {self._describe(exc)}") from None

    # ---- one request ------------------------------------------------------------------
    async def _bounded(self, start: int, end: int, limit: float) -> bytes:
        import asyncio
        return await asyncio.wait_for(self._get(start, end), limit)

    async def _get(self, start: int, end: int) -> bytes:
        """One ranged GET, its redirects followed here one hop at a time under the policy."""
        fs = self._fs
        session = await fs.set_session()
        url = self.url
        headers = {**self.headers, "Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}
        for _hop in range(netguard.MAX_REDIRECTS + 1):
            self.requests += 1
            async with session.get(fs.encode_url(url), headers=headers, allow_redirects=False) as r:
                if r.status not in _REDIRECTS:
                    return await self._answer(r, start, end)
                location = r.headers.get("Location", "")
            if not location:
                raise RemoteError(f"{self.display}: the server answered a redirect without a location")
            target = urljoin(url, location)
            try:
                await self.policy.check(url, target)
            except netguard.RedirectRefused as exc:
                raise RemoteError(f"{self.display}: not followed: {exc}") from None
            if not netguard.carries_credentials(url, target):
                headers = {k: v for k, v in headers.items() if k.lower() not in _CREDENTIAL_HEADERS}
            url = target
        raise RemoteError(f"{self.display}: more than {netguard.MAX_REDIRECTS} redirects (a redirect loop?)")

    async def _answer(self, r, start: int, end: int) -> bytes:
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
                              f"{self._mask(r.reason)}".rstrip())
        first, last, total = _parse_range(r.headers.get("Content-Range", ""))
        if first is None or last is None or total is None:
            raise RemoteError(f"{self.display}: the server's partial answer has no usable Content-Range "
                              f"header ({self._mask(r.headers.get('Content-Range', 'none'))})")
        self._check_size(total)
        self._check_identity(r.headers.get("ETag"), r.headers.get("Last-Modified"))
        want = min(end, total) - start
        if first != start or last - first + 1 != want:
            raise RemoteError(f"{self.display}: asked for bytes {start}-{start + want - 1}, the server sent "
                              f"{first}-{last}")
        data = bytearray()
        while len(data) < want:         # chunk by chunk, so a deadline message can say how far it got
            chunk = await r.content.read(min(want - len(data), 1 << 16))
            if not chunk:
                raise RemoteError(f"{self.display}: the connection closed after {len(data)} of "
                                  f"{want} bytes")
            data += chunk
            self._got = len(data)
        self.bytes_received += len(data)
        return bytes(data)

    def _check_size(self, total: int) -> None:
        refused = netguard.check_size(total)
        if refused:
            raise RemoteError(f"{self.display}: {refused}")
        if self.size is None:
            self.size = total
        elif total != self.size:
            raise RemoteError(f"{self.display}: the file changed size from {self.size} to {total} bytes "
                              "while being read")

    def _mask(self, text: object) -> str:
        return netguard.mask(text, self._secrets)

    def _describe(self, exc: BaseException) -> str:
        return _describe(exc, self._secrets)

    def _check_identity(self, etag: str | None, modified: str | None) -> None:
        """A file replaced by one of the same size shows a new ETag or Last-Modified: an
        error, not bytes of two different files mixed into one answer."""
        if self.identity is None:
            self.identity = (etag, modified)
        elif _changed(self.identity[0], etag) or _changed(self.identity[1], modified):
            raise RemoteError(f"{self.display}: the file changed while being read (its "
                              f"{'ETag' if _changed(self.identity[0], etag) else 'Last-Modified date'} changed)")


def _parse_range(value: str) -> tuple[int | None, int | None, int | None]:
    m = _CONTENT_RANGE.fullmatch(value or "")
    if not m:
        return None, None, None
    first = int(m.group(1)) if m.group(1) is not None else None
    last = int(m.group(2)) if m.group(2) is not None else None
    total = int(m.group(3)) if m.group(3) not in (None, "*") else None
    return first, last, total


def _describe(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    text = netguard.mask(exc, secrets)
    return text or type(exc).__name__


# ---- hf:// ----------------------------------------------------------------------------

def _hf_reader(path: str) -> HttpRangeFetcher:
    """``hf://OWNER/REPO/PATH[@REVISION]`` (or HfFileSystem's own ``OWNER/REPO@REVISION/PATH``)."""
    spec = path[len("hf://"):]
    revision = None
    head, _, last = spec.rpartition("/")
    if "@" in last and head.count("/") >= 1:
        last, _, revision = last.partition("@")
        spec = f"{head}/{last}"
    secrets: tuple[str, ...] = ()
    try:
        from huggingface_hub import HfFileSystem, hf_hub_url
        from huggingface_hub.utils import build_hf_headers
        headers = build_hf_headers()
        secrets = tuple(v.split(" ", 1)[-1] for k, v in headers.items() if k.lower() in _CREDENTIAL_HEADERS)
        fs = HfFileSystem()
        res = netguard.call_within(timeout(), lambda: fs.resolve_path(spec, revision=revision))
        url = hf_hub_url(res.repo_id, res.path_in_repo, repo_type=res.repo_type, revision=res.revision,
                         endpoint=fs.endpoint)
    except TimeoutError:
        raise RemoteError(f"{path}: timed out: the Hugging Face Hub did not resolve it within {timeout():g} s "
                          f"({netguard.TIMEOUT_ENV})") from None
    except FileNotFoundError as exc:
        raise RemoteError(f"{path}: not found on the Hugging Face Hub ({_describe(exc, secrets)})") from None
    except Exception as exc:  # noqa: BLE001 - resolution errors (network, HTTP, bad path) become one line
        raise RemoteError(f"{path}: cannot resolve on the Hugging Face Hub: {_describe(exc, secrets)}") from None
    if not res.path_in_repo:
        raise RemoteError(f"{path}: names a repository, not a file in it")
    return HttpRangeFetcher(url, path, headers, netguard.hub_policy_domains(fs.endpoint))


def open_reader(path: str) -> HttpRangeFetcher:
    if path.startswith("hf://"):
        return _hf_reader(path)
    return HttpRangeFetcher(path, path)


def _changed(old: str | None, new: str | None) -> bool:
    return old is not None and new is not None and old != new
