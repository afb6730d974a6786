"""What the browser's thread workers run: open the file, validate it.

Why apart from ``app.py``: this is the work, not the window - no Textual here, each a
plain function returning what the app posts (``FileLoaded``, ``FindingsReady``), and
neither raises: a file that cannot be opened is one paragraph, a validator that breaks
is a GG000 finding, so the browser opens whatever the file or the rules do.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["file_findings", "open_path"]


def file_findings(mf: ModelFile) -> list:
    """The validator's findings, plus the damage itself if no rule reported it."""
    from ggscope.validate.runner import validate  # start-up: numpy, asyncio only when used
    from ggscope.rules import Finding, Severity  # start-up: numpy, asyncio only when used
    try:
        found = list(validate(mf))
    except Exception as exc:  # noqa: BLE001 - the browser must open whatever the rules do
        found = [Finding("GG000", Severity.ERROR, mf.path,
                         f"the validator stopped with an internal error ({type(exc).__name__}): {exc}")]
    d = mf.damage
    if d is not None and not any(f.start == d.start for f in found):
        found.insert(0, Finding("GG001", Severity.ERROR, mf.path,
                                f"parsing stopped at offset {d.start:#x} in {d.path or '/'}: {d.error}",
                                path=d.path, start=d.start, end=d.start + 1))
    return found


def open_path(path: str) -> tuple[Any, str]:
    """(ModelFile, "") or (None, one paragraph saying why the file cannot be shown)."""
    from ggscope.model.open import open as open_file  # start-up: numpy only when used
    from ggscope.core.errors import GGScopeError, UnreadableFile  # to hoist: already loaded with this module (issue 22)
    try:
        return open_file(path), ""
    except UnreadableFile as exc:
        return None, f"ggscope: cannot read {exc}"
    except GGScopeError as exc:
        return None, f"ggscope: {exc}"
