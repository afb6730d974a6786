"""ggscope: inspect, validate and diff ggml-family model files.

``ggscope.open(path)`` detects the format, parses the file with its Kaitai spec and
returns a format-neutral ``ModelFile`` (see ``ggscope.modelfile``).  Opening reads the
header and index only; tensor data is read when asked for.
"""
from __future__ import annotations

import importlib
import os

from typing import TYPE_CHECKING

from .errors import DamagedFile, GGScopeError, UnknownFormat, UnreadableFile

if TYPE_CHECKING:
    from .modelfile import ModelFile, TensorInfo

__all__ = ["open", "open_bytes", "ModelFile", "TensorInfo", "GGScopeError", "UnknownFormat", "UnreadableFile",
           "DamagedFile", "__version__"]
__version__ = "0.1.0"

_HEAD = 4096


def __getattr__(name: str):
    # ModelFile and TensorInfo pull in numpy: `ggscope --version` must not pay for it
    if name in ("ModelFile", "TensorInfo"):
        from . import modelfile
        return getattr(modelfile, name)
    raise AttributeError(f"module 'ggscope' has no attribute {name!r}")


def open(path: str | os.PathLike) -> "ModelFile":  # noqa: A001 - the natural name
    """Parse the model file at ``path``.

    Raises ``UnreadableFile`` (cannot open) or ``UnknownFormat`` (no format matches).  A
    damaged file does not raise: the returned ModelFile has ``damage`` set to the error
    node (offset, field path, reason) and holds everything that parsed before it.
    """
    from .source import ByteSource

    path = os.fspath(path)
    return _open_source(ByteSource.open(path), path)


def open_bytes(data: bytes, name: str = "<memory>") -> "ModelFile":
    """Like ``open`` for bytes already in memory (tests, fuzzing, network buffers)."""
    from .source import ByteSource

    return _open_source(ByteSource(data, name), name)


def _open_source(source, path: str) -> "ModelFile":
    from .detect import detect, known_formats
    from .spec import parse

    head = source.read(0, _HEAD)
    fmt = detect(head, source.size)
    if fmt is None:
        raise UnknownFormat(path, head, known_formats())
    result = parse(fmt.spec, source)
    view = importlib.import_module(f"ggscope.views.{fmt.view}")
    return view.build(result.root, source, path, result.error)
