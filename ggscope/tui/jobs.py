"""What the browser's thread workers run: open the file, validate it.

Why apart from ``app.py``: this is the work, not the window - no Textual here, each a
plain function returning what the app posts (``FileLoaded``, ``FindingsReady``), and
neither raises: a file that cannot be opened is one paragraph, a validator that breaks
is a GG000 finding, so the browser opens whatever the file or the rules do.
``start_opening`` runs ``open_path`` on a thread of its own from the moment it is
called, so ``run_app`` has the file parsed while Textual is still being imported.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["file_findings", "open_path", "start_opening"]


def file_findings(mf: ModelFile) -> list:
    """The validator's findings, plus the damage itself if no rule reported it."""
    from ggscope.model.split import shard_paths  # lazy: loaded only on the path that needs it
    from ggscope.validate.runner import validate, validate_file  # lazy: loaded only on the path that needs it
    from ggscope.rules import Finding, Severity  # lazy: loaded only on the path that needs it
    try:                     # a split model's findings are its whole set's, as `validate` gives them
        split = mf.format == "gguf" and len(shard_paths(mf.path) or ()) > 1
        found = list(validate_file(mf.path) if split else validate(mf))
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
    """(ModelFile, "") or (None, one paragraph saying why the file cannot be shown).

    A shard opens its whole split model (``model.split``), as every command does; when
    another shard of the set is missing or unreadable, the shard given opens alone and
    the findings name the missing one (GG803)."""
    from ggscope.model.open import open as open_file  # lazy: loaded only on the path that needs it
    from ggscope.model.split import open_model  # lazy: loaded only on the path that needs it
    from ggscope.core.errors import GGScopeError, UnreadableFile  # lazy: loaded only on the path that needs it
    try:
        return open_model(path), ""
    except UnreadableFile as exc:
        try:
            return open_file(path), ""
        except GGScopeError:
            return None, f"ggscope: cannot read {exc}"
    except GGScopeError as exc:
        return None, f"ggscope: {exc}"


def start_opening(path: str) -> Future:
    """``open_path(path)`` started now on a daemon thread; the future's result is its
    pair.  The first screen's facts wait on the parse, not on Textual's start-up: the
    parse (numpy, the spec engine) runs while the interpreter imports Textual and the
    window paints."""
    future: Future = Future()

    def opening() -> None:
        try:
            future.set_result(open_path(path))
        except BaseException as exc:  # noqa: BLE001 - handed to the app, which shows one line
            future.set_exception(exc)
    threading.Thread(target=opening, name="ggscope-open", daemon=True).start()
    return future
