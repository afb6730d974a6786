"""Open the browser on one path: the entry point ``commands/tui.py`` calls.

The app is started with the path, not a parsed file, so its window is up before the
spec engine has finished.  A GGUF file's header is peeked first (``model.peek``: struct
alone, a few milliseconds) and the app parses it after its first frame; any other file
is parsed on a thread started before Textual is even imported (``jobs.start_opening``),
and the app shows it when it is ready.
"""
from __future__ import annotations

import sys
from ggscope.core.escape import escape_text

__all__ = ["run_app"]


def run_app(path: str) -> int:
    from ggscope.model.peek import peek  # start-up: struct alone, no numpy
    first = peek(path)                    # a GGUF header's facts, read in a few milliseconds
    opening = None
    if first is None:                     # other formats, split models, damage: the full parse
        from ggscope.tui.jobs import start_opening  # start-up: the parse begins before textual is imported
        opening = start_opening(path)     # the parse runs while Textual is imported and paints
    from ggscope.tui.app import GGScopeApp  # start-up: rich, textual, asyncio only when used
    app = GGScopeApp(path, opening=opening, peek=first)
    app.run()
    if app.load_error:
        print(escape_text(app.load_error), file=sys.stderr)
    return int(app.return_code or 0)
