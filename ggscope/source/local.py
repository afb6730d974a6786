"""Refuse what is not a regular file before opening it.

Why: opening a FIFO blocks until a writer appears, /dev/zero never ends and a directory
cannot be mapped; a CI gate or a browser must say so in one line instead.  A stat call
answers without opening, and this module imports nothing heavy, so the browser's
command can ask before its window is up.
"""
from __future__ import annotations

import os
import stat

from ggscope.core.errors import UnreadableFile

__all__ = ["check_regular_file", "is_remote", "REMOTE_PREFIXES"]

# the paths ggscope reads over the network (ggscope.source.remote), the rest are files
REMOTE_PREFIXES = ("http://", "https://", "hf://")


def is_remote(path: object) -> bool:
    """Whether ``path`` is a URL ggscope reads remotely; decided without loading the
    network stack (asyncio, aiohttp), so opening a local file stays light."""
    return isinstance(path, str) and path.startswith(REMOTE_PREFIXES)

_KINDS = ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
          (stat.S_ISCHR, "is a character device, not a regular file"),
          (stat.S_ISBLK, "is a block device, not a regular file"),
          (stat.S_ISSOCK, "is a socket, not a regular file"))


def check_regular_file(path: str) -> None:
    """Raise ``UnreadableFile`` (one line) unless ``path`` is a regular file; never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: no such file") from None
    except OSError as exc:
        raise UnreadableFile(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        why = next((w for test, w in _KINDS if test(st.st_mode)), "is not a regular file")
        raise UnreadableFile(f"{path}: {why}")
