"""Exceptions that cross module boundaries.

Damage inside a file is *not* an exception: the spec engine turns it into an error
node.  These exceptions are for what cannot produce a tree at all (a path that cannot
be read, a format nobody recognises) and for misuse of the API.
"""
from __future__ import annotations

from ggscope.core.escape import escape_text


class GGScopeError(Exception):
    """Base class: every error ggscope raises on purpose."""


class UnreadableFile(GGScopeError):
    """The path could not be opened or mapped (missing, a directory, no permission)."""


class UnknownFormat(GGScopeError):
    """No format ggscope knows matches the file's first bytes."""

    def __init__(self, path: str, head: bytes, known: list[str]) -> None:
        self.path = path
        self.head = head
        self.known = known
        names = ", ".join(dict.fromkeys(k.split(" (")[0] for k in known))
        if not head:
            msg = f"{path}: unknown format: the file is empty (0 bytes); ggscope reads {names} files"
        else:
            text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in head[:8])
            msg = (f"{path}: unknown format: the first bytes, {head[:16].hex(' ')} (\"{text}\" as text), "
                   f"match the magic of none of the formats ggscope reads ({names}); "
                   f"`ggscope --help` lists them")
        super().__init__(msg)


class DamagedFile(GGScopeError):
    """A file parsed only partly; raised by APIs that need the full structure."""

    def __init__(self, path: str, offset: int, field_path: str, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.field_path = field_path
        self.reason = reason
        super().__init__(f"{path}: damaged at offset {offset} ({offset:#x}), field {field_path}: {reason}")


class SpecError(GGScopeError):
    """A .ksy spec uses something the engine cannot interpret (a bug in ggscope)."""


class Cancelled(GGScopeError):
    """Long work stopped because its caller's ``cancel`` hook said so.

    The one cancel exception of the streaming engine (``ggscope.source.stream``) that
    statistics, diff and ``--deep`` share; ``ggscope.stats.StatsCancelled`` and
    ``ggscope.diff.DiffCancelled`` are this class under their old names."""


class FileChanged(GGScopeError):
    """A file shrank, grew or was replaced on disk while ggscope read it.

    Raised by the reads of ``ggscope.source`` (a short read, another inode behind the
    path, another size) instead of touching a mapped page that is gone (SIGBUS)."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"{escape_text(path)}: the file changed while ggscope read it ({detail}); "
                         "run the command again once nothing writes to it")
