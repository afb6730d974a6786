"""``PromptScreen``: a one-line modal question (go to offset, search).

Dismisses with the entered text, or None on Escape.  The caller parses the answer.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

__all__ = ["PromptScreen"]


class PromptScreen(ModalScreen[str | None]):
    """Ask for one line of text."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical { width: 64; height: auto; border: round $accent; padding: 0 1; background: $panel; }
    PromptScreen Label { color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, hint: str, value: str = "") -> None:
        super().__init__()
        self.title_text, self.hint, self.value = title, hint, value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text)
            yield Input(value=self.value, placeholder=self.hint)
            yield Label(self.hint)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
