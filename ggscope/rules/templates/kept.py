"""A template's study and renders kept across processes: no Jinja2 for a template seen before.

Why: the chat templates of published files are few - thousands of files carry the same
dozen - yet every ``validate`` process that meets one paid for importing Jinja2 (about
30 ms), parsing, compiling and rendering it: more than the rest of a small file's checks.
What the template family derives from a template is a pure function of its text (the
analysis' issues and literal text) and of its text and special tokens (the renders), of
ggscope's template modules and of Jinja2's version; so it is kept (``core.stamped``, the
``templates`` area) under a stamp of those files and read back under the same stamp.

Contract: ``get(kind, key)`` returns what ``put(kind, key, value)`` stored under the
current stamp and that very key, or None; keys are checksummed into file names (a
collision is a miss, never another key's record), records are JSON data that ``sources``
validates before use.  ``GGSCOPE_CACHE=0`` (every cache) or ``GGSCOPE_CACHE_OFF=templates`` turns it off.
"""
from __future__ import annotations

import os
import sys
import zlib
from functools import lru_cache
from typing import Any

from ggscope.core import stamped

__all__ = ["get", "put"]


@lru_cache(maxsize=1)
def _stamp() -> str | None:
    """This package's modules and Jinja2's (found without importing it), and Python's version."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        spec = importlib.util.find_spec("jinja2")
        jinja = list(spec.submodule_search_locations or []) if spec else []
        mine = sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith(".py"))
    except (ImportError, ValueError, OSError):
        return None
    if not jinja:
        return None
    st = stamped.stamp([*mine, os.path.join(jinja[0], "__init__.py"), os.path.join(jinja[0], "sandbox.py")])
    return None if st is None else f"{sys.version}\n{st}"


def _path(kind: str, key: str) -> str:
    """The record's file: named by two 32-bit checksums of the key (zlib's, no hashlib -
    OpenSSL's library is 5-10 ms of a process's start); the key itself is part of the
    record's stamp (``_stamp_of``), so two keys sharing a name only evict each other."""
    raw = key.encode("utf-8", "surrogatepass")
    return os.path.join(stamped.area("templates"), f"{kind}-{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}.json")


def _stamp_of(key: str) -> str | None:
    st = _stamp()
    return None if st is None else f"{st}\n{key}"


def get(kind: str, key: str) -> Any:
    if not stamped.enabled("templates"):
        return None
    st = _stamp_of(key)
    return None if st is None else stamped.read(_path(kind, key), st)


def put(kind: str, key: str, value: Any) -> None:
    if not stamped.enabled("templates"):
        return
    st = _stamp_of(key)
    if st is not None:
        stamped.write(_path(kind, key), st, value)
