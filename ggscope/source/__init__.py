"""Bytes in: a local file's read-only map, a remote file's range reads, bounded windows.

Layer 1 (above ``core`` and ``facts``).  ``mapped`` is the ``ByteSource`` every parse
reads; ``local`` refuses what is not a regular file; ``remote`` fetches HTTP and Hub
ranges; ``ranges`` reads byte windows without keeping pages mapped; ``stream`` is the
one engine that runs work over such windows (stats, diff, --deep); ``changes`` notices
files that change under a command and guards mapped pages that vanish.  The package
re-exports ``mapped``'s public names, as the old ``ggscope.source`` module did.
"""
from __future__ import annotations

import importlib

__all__ = ['ByteSource', 'RemoteByteSource', 'open_source', 'check_regular_file']

_HOME = "ggscope.source.mapped"


def __getattr__(name: str):
    # re-exported lazily: importing the package (or one of its siblings) costs nothing
    # until a name is used, which keeps one-shot commands' start-up as before
    if name in __all__:
        return getattr(importlib.import_module(_HOME), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
