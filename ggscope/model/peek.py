"""A GGUF header peek: the browser's first-screen facts without numpy or the spec engine.

Why: the full parse (``model.open``) imports numpy and the spec engine, ~120 modules
that compete for the GIL with Textual's start; the first screen needs a dozen facts
that sit in the first bytes of a GGUF file.  ``peek(path)`` walks the header with
``struct`` alone - magic, version, byte order, every key/value entry and every tensor
info - and returns those facts, or None whenever it cannot vouch for them.

The contract: the facts of a ``Peek`` are the ones the full parse gives (format,
version, byte order, file size, distinct metadata keys, tensor count, architecture,
name, file type; tests/model/test_peek.py compares them on every fixture and on damaged
files).  So the peek answers only when the walk meets nothing the parse could read
otherwise: a file that is no GGUF v1-v3, a shard of a split model (``model.split``
joins its set), an unknown value type, a nested array, any length or count the file
cannot back, a path that is no regular file (a FIFO would block) or a header larger
than ``budget`` bytes gives None, and the caller takes
the full path.  Work is bounded by the bytes read (at most ``budget``, never more than
the file holds): each entry consumes at least one byte of them.  Keys and strings are
read as bytes and decoded as the parse does (UTF-8 with surrogateescape).
"""
from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass

__all__ = ["Peek", "peek", "PEEK_BUDGET"]

PEEK_BUDGET = 8 << 20        # the header bytes the peek reads at most (a 3.8 MiB vocabulary fits)

# gguf_type (the GGUF spec; gguf-py GGUFValueType): fixed sizes of the scalar types
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_INTS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 10: "Q", 11: "q"}
_WANTED = (b"general.architecture", b"general.name", b"general.file_type")


@dataclass(frozen=True)
class Peek:
    """What a GGUF file's header says, as the full parse reads it."""
    path: str
    version: int
    endian: str                 # "little" or "big"
    size: int                   # the file's size in bytes
    n_keys: int                 # distinct keys (the first of duplicates is what readers see)
    n_tensors: int
    architecture: str | None
    name: str | None
    file_type: int | None
    format: str = "gguf"


class _Short(Exception):
    """The walk cannot vouch for the header (see the module docstring)."""


def peek(path: str, budget: int = PEEK_BUDGET) -> Peek | None:
    """The header's facts, or None when only the full parse can tell (never raises)."""
    from ggscope.model.split import shard_paths  # light: a regular expression
    try:
        if shard_paths(path) is not None or not stat.S_ISREG(os.stat(path).st_mode):
            return None                           # a FIFO or device must not block the start
        with open(path, "rb") as f:               # read-only; never more than the budget
            size = os.fstat(f.fileno()).st_size
            buf = f.read(min(size, budget))
        return _walk(path, buf, size)
    except (OSError, ValueError, _Short, struct.error, RecursionError):
        return None


def _walk(path: str, buf: bytes, size: int) -> Peek:
    if len(buf) < 8 or buf[:4] != b"GGUF":
        raise _Short
    (le_version,) = struct.unpack_from("<I", buf, 4)
    bo = ">" if le_version & 0xFFFF == 0 else "<"          # the spec's byte-order rule
    (version,) = struct.unpack_from(bo + "I", buf, 4)
    if not 1 <= version <= 3:
        raise _Short
    count = bo + ("I" if version == 1 else "Q")
    csize = struct.calcsize(count)
    n_tensors, n_kv = struct.unpack_from(bo + ("II" if version == 1 else "QQ"), buf, 8)
    pos = 8 + 2 * csize
    end = len(buf)
    # every entry takes at least a length and a type: claims the bytes cannot hold stop here
    if n_kv * (csize + 4) > end - pos or n_tensors * (csize + 16) > end - pos:
        raise _Short

    def length(at: int) -> int:
        if at + csize > end:
            raise _Short
        (n,) = struct.unpack_from(count, buf, at)
        return n

    def string(at: int) -> tuple[bytes, int]:
        n = length(at)
        at += csize
        if n > end - at:
            raise _Short
        return buf[at:at + n], at + n

    keys: set[bytes] = set()
    found: dict[bytes, object] = {}
    for _ in range(n_kv):
        key, pos = string(pos)
        if pos + 4 > end:
            raise _Short
        (vtype,) = struct.unpack_from(bo + "I", buf, pos)
        pos += 4
        value_at = pos
        if vtype in _SCALAR:
            pos += _SCALAR[vtype]
        elif vtype == _STRING:
            _, pos = string(pos)
        elif vtype == _ARRAY:
            if pos + 4 > end:
                raise _Short
            (etype,) = struct.unpack_from(bo + "I", buf, pos)
            n = length(pos + 4)
            pos += 4 + csize
            if etype in _SCALAR:
                pos += n * _SCALAR[etype]
            elif etype == _STRING:
                if n * csize > end - pos:
                    raise _Short
                for _ in range(n):
                    (k,) = struct.unpack_from(count, buf, pos)
                    pos += csize + k
                    if pos > end:
                        raise _Short
            else:                       # nested arrays or unknown types: the parse decides
                raise _Short
        else:
            raise _Short
        if pos > end:
            raise _Short
        if key not in keys:
            keys.add(key)
            if key in _WANTED and key not in found:
                found[key] = _value(buf, bo, vtype, value_at, string)
    for _ in range(n_tensors):
        _, pos = string(pos)
        if pos + 4 > end:
            raise _Short
        (n_dims,) = struct.unpack_from(bo + "I", buf, pos)
        pos += 4 + n_dims * csize + 4 + 8          # dims, ggml type, offset
        if pos > end:
            raise _Short
    arch, name, ftype = (found.get(k) for k in _WANTED)
    return Peek(path=path, version=version, endian="big" if bo == ">" else "little", size=size,
                n_keys=len(keys), n_tensors=n_tensors,
                architecture=arch if isinstance(arch, str) else None,
                name=name if isinstance(name, str) else None,
                file_type=ftype if isinstance(ftype, int) and not isinstance(ftype, bool) else None)


def _value(buf: bytes, bo: str, vtype: int, at: int, string) -> object:
    """A wanted entry's value: a string decoded as the parse decodes it, an integer;
    anything else None (the overview shows what the parse makes of it later)."""
    if vtype == _STRING:
        return string(at)[0].decode("utf-8", "surrogateescape")
    if vtype in _INTS:
        return struct.unpack_from(bo + _INTS[vtype], buf, at)[0]
    return None
