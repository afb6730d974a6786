"""How the browser divides the terminal between its panes.

Why: the hex view is readable only in whole rows (16, 8 or 4 bytes), so the left pane
gets what a row of the hex view leaves; one function, tested at every width
(tests/tui/test_layout.py), that the app calls on mount, on resize and on ``+``/``-``.
"""
from __future__ import annotations

__all__ = ["left_width", "HEX_16", "HEX_8"]

HEX_16 = 82             # a 16-byte hex row with a 10-digit offset, the scrollbar and the border
HEX_8 = 46              # the same with 8 bytes a row


def left_width(terminal: int, shift: int = 0) -> int:
    """The left pane's width.  Wide terminals (the left keeps 50 columns beside them)
    give the hex view 16-byte rows and the rest, up to 60 %, to the left; narrower ones
    8-byte rows; the left keeps at least 30 columns (half of a very narrow terminal).
    ``shift`` is what ``+``/``-`` added."""
    if terminal < 60:
        width = terminal // 2
    elif terminal - HEX_16 >= 50:
        width = min(terminal - HEX_16, terminal * 3 // 5)
    else:
        width = max(30, min(terminal - HEX_8, terminal * 3 // 5))
    return max(10, min(terminal - 10, width + shift))
