"""What a remote read may do: the limits every request is held to, where a redirect may
lead, and how server text is shown.

Why: a model URL is input like a model file - the server behind it can lie about sizes,
answer slowly for ever, redirect anywhere, or echo a credential back in an error.  The
reader (``remote``) asks this module before it acts on anything a server said:

* ``check_size(total)``: a claimed file size above ``MAX_REMOTE_SIZE`` (1 TiB; the
  Hugging Face Hub stores files of at most 50 GB) is refused before anything the size
  drives (the sparse map, the block table) is allocated.
* ``deadline(nbytes)``: every request - connecting, redirects, headers and body - ends
  within ``timeout() + nbytes / MIN_RATE`` seconds: ``GGSCOPE_HTTP_TIMEOUT`` (default
  30) to get going, then at least ``MIN_RATE`` (64 KiB/s) on average.  A server
  trickling a byte just inside the per-read timeout no longer keeps a command alive.
* ``RedirectPolicy.check(from_url, to_url)``: a redirect stays on the URL's host unless
  ``GGSCOPE_ALLOW_REDIRECTS`` names the target host (comma-separated host names,
  ``*.example.com`` for a domain, ``*`` for any host); an ``hf://`` read also allows
  the Hub's own download domains (``*.hf.co``, ``*.huggingface.co``) when the endpoint
  is the Hub itself.  Whatever is allowed, a redirect never goes to a link-local
  address (169.254.169.254 is the cloud metadata service), never from a public address
  to a loopback, private or otherwise non-global one, never from https to http, and
  never names credentials (``user:pass@``).  ``carries_credentials`` tells the reader
  whether a hop keeps the Authorization header: only to the same scheme, host and port,
  as ``requests`` does.  Limitation: a host name is checked by resolving it here; a DNS
  answer that changes between that check and aiohttp's own lookup is not caught.
* ``call_within(seconds, call)``: a blocking call of a library that keeps its own
  per-read timeouts (huggingface_hub's Hub resolution, Dask's client handshake) run in a
  daemon thread and given up after ``seconds`` with ``TimeoutError``.
* ``mask(text, secrets)``: server-provided text (a status reason, a header, a Hub error)
  with every token-shaped run - the secrets in use, ``hf_...`` tokens, ``Bearer ...``,
  ``key=value`` credentials, long letter-and-digit runs - replaced by ``***``, made one
  printable line.
"""
from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["MAX_REMOTE_SIZE", "MIN_RATE", "MAX_REDIRECTS", "ALLOW_ENV", "timeout", "deadline", "check_size",
           "RedirectPolicy", "RedirectRefused", "mask", "hub_policy_domains", "call_within"]

MAX_REMOTE_SIZE = 1 << 40          # bytes a server may claim for one file
MIN_RATE = 64 << 10                # bytes per second a request must average after its first timeout()
MAX_REDIRECTS = 5
ALLOW_ENV = "GGSCOPE_ALLOW_REDIRECTS"
TIMEOUT_ENV = "GGSCOPE_HTTP_TIMEOUT"
_HUB_HOSTS = ("huggingface.co", "hf.co")


def timeout() -> float:
    """``GGSCOPE_HTTP_TIMEOUT`` seconds (default 30, at least 0.1): the one knob for every network wait."""
    try:
        t = float(os.environ.get(TIMEOUT_ENV, "30"))
    except ValueError:
        return 30.0
    return max(0.1, t) if t == t and t != float("inf") else 30.0


def deadline(nbytes: int) -> float:
    """Seconds a request for ``nbytes`` may take in all."""
    return timeout() + max(0, nbytes) / MIN_RATE


def call_within(seconds: float, call):
    """``call()`` in a daemon thread; ``TimeoutError`` after ``seconds`` (the thread is
    abandoned - it ends with the process), else its result or its exception."""
    import threading
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc
    worker = threading.Thread(target=run, name="ggscope-bounded-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def check_size(total: int) -> str | None:
    """Why a claimed file size is refused, or None."""
    if total > MAX_REMOTE_SIZE:
        return (f"the server claims a size of {total} bytes, more than the {MAX_REMOTE_SIZE >> 40} TiB "
                "ggscope reads from a server")
    return None


# ---- redirects --------------------------------------------------------------------------

class RedirectRefused(Exception):
    """A redirect the policy does not follow; the text says why (one line)."""


def _origin(url: str) -> tuple[str, str, int]:
    u = urlsplit(url)
    scheme = u.scheme.lower()
    return scheme, (u.hostname or "").lower(), u.port or (443 if scheme == "https" else 80)


def hub_policy_domains(endpoint: str) -> tuple[str, ...]:
    """Host patterns an ``hf://`` read may be redirected to (the Hub's download CDN)."""
    host = _origin(endpoint)[1]
    if host in _HUB_HOSTS:
        return tuple(p for h in _HUB_HOSTS for p in (h, f"*.{h}"))
    return ()


def _allowed_patterns(extra: Iterable[str]) -> tuple[str, ...]:
    env = os.environ.get(ALLOW_ENV, "")
    return tuple(p.strip().lower() for p in env.split(",") if p.strip()) + tuple(extra)


def _plain(ip):
    """An IPv4-mapped IPv6 address (``::ffff:169.254.169.254``) as the IPv4 address it reaches."""
    return ip.ipv4_mapped if ip.version == 6 and ip.ipv4_mapped is not None else ip


def _literal(host: str):
    try:
        return _plain(ipaddress.ip_address(host.strip("[]").split("%")[0]))
    except ValueError:
        return None


async def _addresses(host: str, port: int) -> list:
    ip = _literal(host)
    if ip is not None:
        return [ip]
    import asyncio      # here, not at the top: a local file's open asks only is_remote()
    import socket
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise RedirectRefused(f"cannot resolve the redirect's host {host} ({exc.strerror or exc})") from None
    return [_plain(ipaddress.ip_address(info[4][0].split("%")[0])) for info in infos]


def _refuse_unroutable(host: str, addrs: list) -> None:
    bad = next((a for a in addrs if a.is_link_local or a.is_unspecified or a.is_multicast), None)
    if bad is not None:
        raise RedirectRefused(f"a redirect to {host}, a link-local or unroutable address ({bad})")


def _public(addrs: list) -> bool:
    return bool(addrs) and all(a.is_global for a in addrs)


@dataclass(frozen=True)
class RedirectPolicy:
    """Where the redirects of one remote file may go (see the module docstring)."""

    url: str                                  # the URL the user gave (or the Hub resolved)
    domains: tuple[str, ...] = ()             # host patterns allowed besides the URL's host

    async def check(self, current: str, target: str) -> None:
        cur, tgt = urlsplit(current), urlsplit(target)
        scheme, host, port = _origin(target)
        if scheme not in ("http", "https") or not host:
            raise RedirectRefused(f"a redirect to a non-HTTP location ({mask(target)})")
        if cur.scheme.lower() == "https" and scheme == "http":
            raise RedirectRefused(f"a redirect from https to plain http ({host})")
        if tgt.username is not None or tgt.password is not None:
            raise RedirectRefused(f"a redirect to {host} that carries credentials in its URL")
        home = _origin(self.url)[1]
        if host == home:
            return
        literal = _literal(host)
        if literal is not None:
            _refuse_unroutable(host, [literal])       # before the allow list: no leave makes it right
        allowed = _allowed_patterns(self.domains)
        if not any(p == "*" or fnmatch.fnmatchcase(host, p) for p in allowed):
            raise RedirectRefused(f"a redirect to another host, {host} (set {ALLOW_ENV}={host} to follow it)")
        addrs = await _addresses(host, port)
        _refuse_unroutable(host, addrs)
        if _public(await _addresses(home, _origin(self.url)[2])) and not _public(addrs):
            bad = next(a for a in addrs if not a.is_global)
            raise RedirectRefused(f"a redirect from a public address to {host}, a loopback or private "
                                  f"address ({bad})")


def carries_credentials(current: str, target: str) -> bool:
    """Whether a hop keeps the Authorization header: the same scheme, host and port only."""
    return _origin(current) == _origin(target)


# ---- server text ------------------------------------------------------------------------

_TOKEN_SHAPES = [
    re.compile(r"(?i)\b(bearer|basic|token|digest)(\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)\b(authorization|x-api-key|api[_-]?key|access[_-]?token|token|secret|password|passwd|"
               r"signature|sig|credential|x-amz-security-token|key)([\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;]+"),
    re.compile(r"\bhf_[A-Za-z0-9]{8,}"),
    re.compile(r"(?<![A-Za-z0-9+/_-])(?=[A-Za-z0-9+/_-]*[0-9])(?=[A-Za-z0-9+/_-]*[A-Za-z])"
               r"[A-Za-z0-9+/_-]{32,}={0,2}"),
]


def _mask_match(m: re.Match) -> str:
    return f"{m.group(1)}{m.group(2)}***" if m.re.groups >= 2 else "***"


def mask(text: object, secrets: Iterable[str] = (), limit: int = 200) -> str:
    """Server-provided ``text`` as one printable line with anything token-shaped masked."""
    s = str(text) if text is not None else ""
    for secret in secrets:
        if secret and len(secret) >= 4:
            s = s.replace(secret, "***")
    for shape in _TOKEN_SHAPES:
        s = shape.sub(_mask_match, s)
    s = " ".join(s.split())
    s = "".join(ch if ch.isprintable() else " " for ch in s)
    return s if len(s) <= limit else s[:limit - 3] + "..."
