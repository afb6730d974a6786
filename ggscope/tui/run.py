"""Open the browser on one path: the entry point ``commands/tui.py`` calls."""
from __future__ import annotations

from ..modelfile import ModelFile

__all__ = ["run_app"]


def run_app(mf: ModelFile) -> int:
    from .app import GGScopeApp
    GGScopeApp(mf).run()
    return 0
