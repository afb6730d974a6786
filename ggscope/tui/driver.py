"""The Textual driver the browser runs with after the launcher's pre-frame.

Why: ``tui.preframe`` has already entered the alternate screen and painted the first
screen's facts there.  Textual's ``LinuxDriver`` starts by writing ``ESC[?1049h``
again; a terminal already on its alternate screen ignores that (tmux, xterm), but
others may clear the screen or save the cursor a second time, which would blank the
facts until Textual's first frame, or move the cursor on exit.  This driver drops that
first switch - the screen is already the alternate one - and writes everything else as
Textual does, so the terminal sees Textual's own sequence with the pre-frame inside
it, and Textual's exit (``ESC[?1049l``, cursor shown) restores it as always.  A later
start (after Ctrl+Z) switches as usual.

``keeping_preframe()`` returns a fresh subclass; its ``entered`` says whether Textual
took the screen over (from then on Textual's exit restores it, otherwise the launcher
withdraws the pre-frame itself).
"""
from __future__ import annotations

from textual.drivers.linux_driver import LinuxDriver

__all__ = ["keeping_preframe", "ALT_SCREEN"]

ALT_SCREEN = "\x1b[?1049h"      # what LinuxDriver.start_application_mode writes to switch


def keeping_preframe() -> type[LinuxDriver]:
    class PreFramedDriver(LinuxDriver):
        entered = False         # Textual has reached its switch to the alternate screen

        def write(self, data: str) -> None:
            if data == ALT_SCREEN and not type(self).entered:
                type(self).entered = True       # already there: the pre-frame is on it
                return
            super().write(data)

    return PreFramedDriver
