"""Bytes in: a local file's read-only map, a remote file's range reads, bounded windows.

Layer 1 (above ``core`` and ``facts``).  ``mapped`` is the ``ByteSource`` every parse
reads; ``local`` refuses what is not a regular file; ``remote`` fetches HTTP and Hub
ranges; ``ranges`` reads byte windows without keeping pages mapped; ``stream`` is the
one engine that runs work over such windows (stats, diff, --deep); ``changes`` notices
files that change under a command and guards mapped pages that vanish.  The package
re-exports ``mapped``'s public names, as the old ``ggscope.source`` module did.
"""
from __future__ import annotations

from ggscope.core.lazy import exports

__all__ = ['ByteSource', 'RemoteByteSource', 'open_source', 'check_regular_file']

__getattr__, __dir__ = exports(__name__, dict.fromkeys(__all__, "ggscope.source.mapped"))
