"""Open a model file: detect its format, parse it with its spec, build its view.

``open(path)`` is ``ggscope.open``.  Opening reads the header and index only; tensor
data is read when asked for.  ``path`` may be an ``http(s)://`` or
``hf://OWNER/REPO/PATH[@REVISION]`` URL: the header then arrives by range requests that
grow geometrically until the parse no longer stops for lack of bytes (``_parse_remote``).
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from ggscope.core.errors import UnknownFormat
from ggscope.ksy import parse
from ggscope.model.detect import detect, known_formats
from ggscope.source.mapped import ByteSource, open_source

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["open", "open_bytes"]

_HEAD = 4096
_STEP_MAX = (2 << 20) - (64 << 10)   # GGUF read-ahead past what the parse needs, so that with
                                      # block rounding at most header + 2 MiB is transferred


def open(path: str | os.PathLike) -> "ModelFile":  # noqa: A001 - the natural name
    """Parse the model file at ``path``.

    Raises ``UnreadableFile`` (cannot open) or ``UnknownFormat`` (no format matches).  A
    damaged file does not raise: the returned ModelFile has ``damage`` set to the error
    node (offset, field path, reason) and holds everything that parsed before it.
    """
    path = os.fspath(path)
    return _open_source(open_source(path), path)


def open_bytes(data: bytes, name: str = "<memory>") -> "ModelFile":
    """Like ``open`` for bytes already in memory (tests, fuzzing, network buffers)."""
    return _open_source(ByteSource(data, name), name)


def _open_source(source, path: str) -> "ModelFile":
    head = source.read(0, _HEAD)
    fmt = detect(head, source.size)
    if fmt is None:
        raise UnknownFormat(path, head, known_formats())
    result = _parse_remote(fmt, source) if source.remote else parse(fmt.spec, source)
    view = importlib.import_module(f"ggscope.model.views.{fmt.view}")
    return view.build(result.root, source, path, result.error)


def _parse_remote(fmt, source):
    """Fetch the header of a remote file, then parse it as if it were local.

    The spec engine reads the buffer directly, so the header must be present before the
    final parse.  Each round parses the fetched prefix as a file of that size; when it
    stops for lack of bytes (an error at the prefix's end, or a size or count that the
    rest of the file could satisfy), the prefix grows by a step that doubles from 256
    KiB - for GGUF up to 2 MiB, so at most header + 2 MiB is transferred; legacy formats
    interleave records and data, so their steps keep doubling.  A genuine error (inside
    the fetched bytes, or a claim larger than the whole file) ends the rounds at once.
    """
    size = source.size
    n = min(size, max(source.fetched(), 1))
    step = 128 << 10
    cap = _STEP_MAX if fmt.spec == "gguf" else 1 << 30
    while n < size:
        err = parse(fmt.spec, source.prefix(n)).error
        need = _bytes_needed(err, n, size)
        if need is None:
            break
        step = min(step * 2, cap)
        n = min(size, max(n + step, need))
        source.ensure(0, n)
    return parse(fmt.spec, source)


def _bytes_needed(err, n: int, size: int) -> int | None:
    """The prefix size a parse that stopped at ``err`` wants, or None if more bytes cannot help."""
    if err is None:
        return None
    if err.start >= n - 64:
        return n + 1
    for d in (err.damage.chain() if err.damage is not None else ()):
        if d.bytes_needed is not None:      # a field, count or size the rest of the file may hold
            need = d.offset + d.bytes_needed
            return need if n < need <= size else None
    return None
