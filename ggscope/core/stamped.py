"""Results kept across processes in the user cache directory, valid while their sources are.

Why: some answers cost a process more than the work it was asked for - reading gguf-py's
writer for key types (tens of milliseconds, ``facts.upstream``), importing Jinja2 to
study a chat template that thousands of files share (``rules.templates``).  Each is a pure
function of files on disk (gguf-py's, ggscope's own, Jinja2's) and of its input, so it is
kept once computed, under the user cache directory (``platformdirs``, ``ggscope/<area>``).

Contract: ``stamp(paths)`` names the sources (each path with its size and modification
time); a record holds the stamp it was made under and is read back only under the same
stamp - another gguf-py, Jinja2 or ggscope computes anew.  Reading and writing never
raise: a cache that cannot be read, parsed or written is computed past.  Records are JSON
(never pickle: a record is data, not code), written whole or not at all (a temporary file
renamed over, so a parallel process reads the old record or the new one).  Records over
``MAX_BYTES`` are not kept.  ``GGSCOPE_CACHE=0`` turns every cache off (the test suite
does, to see first looks), ``GGSCOPE_CACHE_OFF=templates`` one area.
Start-up: every ``validate`` process reads a record, few write one, so ``tempfile`` (and
the ``random`` it imports) is imported by ``write``, and ``user_cache_dir`` asks
platformdirs only off Linux.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterable

__all__ = ["enabled", "area", "user_cache_dir", "stamp", "read", "write", "MAX_BYTES"]

MAX_BYTES = 1 << 20


def enabled(name: str | None = None) -> bool:
    """Whether caches are on (``GGSCOPE_CACHE=0`` turns all off) and area ``name`` is not
    turned off alone (``GGSCOPE_CACHE_OFF=templates,facts``)."""
    if os.environ.get("GGSCOPE_CACHE", "1") in ("0", "off", "no", "false"):
        return False
    return name is None or name not in os.environ.get("GGSCOPE_CACHE_OFF", "").split(",")


def user_cache_dir() -> str:
    """ggscope's folder in the user's cache directory: platformdirs' answer for "ggscope".

    On Linux that answer is the XDG Base Directory rule - ``$XDG_CACHE_HOME`` when it is an
    absolute path, else ``$HOME/.cache`` - taken here from the environment: importing
    platformdirs (its Unix module imports tempfile, which imports random) cost every
    ``validate`` process 4-5 ms of its ~150 to read one cached record.  Elsewhere, and for
    a home only the password database knows, platformdirs answers."""
    if sys.platform == "linux":
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if os.path.isabs(xdg):
            return os.path.join(xdg, "ggscope")
        home = os.environ.get("HOME", "")
        if os.path.isabs(home):
            return os.path.join(home, ".cache", "ggscope")
    from platformdirs import user_cache_dir
    return user_cache_dir("ggscope")


def area(name: str) -> str:
    """The folder of one cache area (``facts``, ``templates``)."""
    return os.path.join(user_cache_dir(), name)


def stamp(paths: Iterable[str]) -> str | None:
    """The sources' identity: each path with its size and modification time; None when
    one cannot be examined (then nothing is cached)."""
    parts = []
    try:
        for p in paths:
            st = os.stat(p)
            parts.append(f"{p}:{st.st_size}:{st.st_mtime_ns}")
    except (OSError, TypeError, ValueError):
        return None
    return "\n".join(parts)


def read(path: str, stamp_: str) -> Any:
    """The value recorded at ``path`` under ``stamp_``, or None."""
    if not enabled(os.path.basename(os.path.dirname(path))):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            got = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    return got.get("value") if isinstance(got, dict) and got.get("stamp") == stamp_ else None


def write(path: str, stamp_: str, value: Any) -> None:
    """Record ``value`` at ``path`` under ``stamp_`` (whole or not at all; errors ignored)."""
    if not enabled(os.path.basename(os.path.dirname(path))):
        return
    try:
        text = json.dumps({"stamp": stamp_, "value": value})
        if len(text) > MAX_BYTES:
            return
        import tempfile   # start-up: only a process that writes a record pays for it (and random)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, ValueError, TypeError):
        pass
