"""Open the browser on one path: the entry point ``commands/tui.py`` calls.

The app is started with the path, not a parsed file, so its window is up before the
spec engine has finished.  A GGUF file's header is peeked first (``model.peek``: struct
alone, a few milliseconds); on a terminal its facts are painted at once, before Textual
is imported (``preframe``), and the app - run with ``driver.keeping_preframe`` so that
nothing blanks them - repaints them in its first frame and parses the file after it.
Any other file is parsed on a thread started before Textual is even imported
(``jobs.start_opening``), and the app shows it when it is ready.  If Textual never
takes the screen (an import fails, Ctrl+C during start-up) the pre-frame is withdrawn
before the error goes on.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ggscope.core.escape import escape_text

__all__ = ["run_app"]


def run_app(path: str) -> int:
    from ggscope.model.peek import peek  # start-up: struct alone, no numpy
    first = peek(path)                    # a GGUF header's facts, read in a few milliseconds
    opening = painted = None
    if first is None:                     # other formats, split models, damage: the full parse
        from ggscope.tui.jobs import start_opening  # start-up: the parse begins before textual is imported
        opening = start_opening(path)     # the parse runs while Textual is imported and paints
    else:
        from ggscope.tui import preframe  # start-up: no rich, no textual
        painted = preframe.show(first, Path(path).name) or None
    driver = None
    try:
        from ggscope.tui.app import GGScopeApp  # start-up: rich, textual, asyncio only when used
        if painted:
            from ggscope.tui.driver import keeping_preframe  # start-up: textual is loaded by now
            driver = keeping_preframe()
        app = GGScopeApp(path, opening=opening, peek=first, driver_class=driver)
        app.run()
    finally:
        if painted and not (driver is not None and driver.entered):
            preframe.withdraw()           # Textual never took the screen: give it back as it was
    if app.load_error:
        print(escape_text(app.load_error), file=sys.stderr)
    return int(app.return_code or 0)
