"""Open the browser on one path: the entry point ``commands/tui.py`` calls.

The app is started with the path, not a parsed file, so its window is up before the
spec engine runs; the file is parsed in the app's loader worker.
"""
from __future__ import annotations

import sys
from ggscope.core.escape import escape_text

__all__ = ["run_app"]


def run_app(path: str) -> int:
    from ggscope.tui.app import GGScopeApp  # start-up: rich, textual, asyncio only when used
    app = GGScopeApp(path)
    app.run()
    if app.load_error:
        print(escape_text(app.load_error), file=sys.stderr)
    return int(app.return_code or 0)
