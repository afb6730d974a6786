"""The hash algorithms of ``llama-gguf-hash``, as one table.

Source: llama.cpp as vendored in llama-cpp-python 0.3.36, examples/gguf-hash/gguf-hash.cpp.
It hashes every tensor's bytes (``ggml_nbytes``) with xxh64 (seed 0), sha1 or sha256,
and one running hash of each kind over all tensor data in index order; ``--uuid`` is a
UUIDv5 (RFC 9562 section 5.5) of that data under the namespace
``uuid5(NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp')`` =
ef001206-dadc-5f6d-a15f-3359e577d4e5: sha1(namespace bytes + data), first 16 bytes,
version and variant bits set.  Digests print as lowercase hex, xxh64 big-endian (its
canonical form, which is how the tool's ``hash >> shift`` loop prints it).

``xxh3`` (XXH3_64bits, seed 0) is ggscope's addition: the pinned tool has no such
option.  It follows the same line format; the tool's ``--check`` ignores its lines.

Contract: ``ALGOS`` lists the algorithms in the order the tool prints them (per tensor:
xxh64, sha1, sha256, then ggscope's xxh3; for the whole data the same, then uuid).
``Algo.new()`` returns an object with ``update(buffer)``; ``Algo.hexdigest(h)`` its text.
The C implementations (the ``xxhash`` package, ``hashlib``) do the work.
"""
from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import xxhash

__all__ = ["Algo", "ALGOS", "PER_TENSOR", "UUID_NAMESPACE", "by_name", "TOOL_NAMES"]

UUID_NAMESPACE = uuid.UUID("ef001206-dadc-5f6d-a15f-3359e577d4e5")


def _uuid_new() -> Any:
    h = hashlib.sha1()
    h.update(UUID_NAMESPACE.bytes)
    return h


def _uuid_hex(h: Any) -> str:
    return str(uuid.UUID(bytes=h.digest()[:16], version=5))


@dataclass(frozen=True)
class Algo:
    name: str                                   # as the tool prints it in the first column
    new: Callable[[], Any]
    hexdigest: Callable[[Any], str]
    per_tensor: bool = True                     # uuid exists only for the whole data
    in_tool: bool = True                        # False: ggscope's addition (xxh3)


def _hex(h: Any) -> str:
    return h.hexdigest()


ALGOS: tuple[Algo, ...] = (
    Algo("xxh64", lambda: xxhash.xxh64(seed=0), _hex),
    Algo("sha1", hashlib.sha1, _hex),
    Algo("sha256", hashlib.sha256, _hex),
    Algo("xxh3", lambda: xxhash.xxh3_64(seed=0), _hex, in_tool=False),
    Algo("uuid", _uuid_new, _uuid_hex, per_tensor=False),
)
PER_TENSOR = tuple(a for a in ALGOS if a.per_tensor)
TOOL_NAMES = tuple(a.name for a in ALGOS if a.in_tool)     # what the tool's --check recognises


def by_name(name: str) -> Algo:
    for a in ALGOS:
        if a.name == name:
            return a
    raise KeyError(name)
