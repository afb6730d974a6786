"""Fixtures of the TUI tests live in ``tui_files``."""
from tui_files import q8, truncated  # noqa: F401 - pytest fixtures
