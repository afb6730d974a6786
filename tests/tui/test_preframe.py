"""The launcher's pre-frame (``tui.preframe``): the browser's first screen before Textual.

The oracle is the browser itself: its first frame with the header peek, rendered by
Textual at the same size, must show the same characters where the pre-frame paints
them - the summary line, the tab labels, the overview's facts folded as the overview
folds them, the pane border - for the bundled example, a name long enough to fold, and
at several terminal sizes.  Then the gating (a real pseudo-terminal gets it, a pipe,
``TEXTUAL_DRIVER`` and ``TERM=dumb`` do not), colours under ``NO_COLOR``, the bound on
a huge name, the driver that keeps the pre-frame on the screen, and ``run_app`` giving
the screen back when Textual never took it.  (Real-terminal behaviour - no gap, the
terminal restored on exit and on Ctrl+C - is measured by benchmarks/first_paint.py.)
"""
from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ggscope.model.peek import peek
from ggscope.tui import preframe
from ggscope.tui.app import GGScopeApp

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
CUP = re.compile(r"\x1b\[(\d+);(\d+)H")
# every sequence the pre-frame writes itself; anything else with ESC would be file text
OWN = re.compile(r"\x1b\[\?1049h|\x1b\[\?25l|\x1b\[\?7l|\x1b\[H|\x1b\[2J|\x1b\[\d+;\d+H|\x1b\[(?:[0-9;]*)m")


WIDE = "\0"            # the second cell of a wide character


def by_cell(line: str) -> str:
    """A rendered line with a ``WIDE`` mark after each wide character: index = column."""
    return "".join(ch + WIDE * (preframe.cells(ch) == 2) for ch in line)


def screen_of(frame: str, cols: int, rows: int) -> list[str]:
    """The screen a terminal shows after ``frame`` (cursor moves and text; SGR ignored),
    one cell a character (``WIDE`` after a wide one)."""
    grid = [[" "] * cols for _ in range(rows)]
    pos = 0
    row = col = 0

    def text(chars: str) -> None:
        nonlocal col
        for ch in chars:                    # a wide character takes two cells, as in Textual's strips
            grid[row][col] = ch
            if preframe.cells(ch) == 2:
                grid[row][col + 1] = WIDE
            col += preframe.cells(ch)
    for m in OWN.finditer(frame):
        text(frame[pos:m.start()])
        if (cup := CUP.fullmatch(m.group())):
            row, col = int(cup.group(1)) - 1, int(cup.group(2)) - 1
        pos = m.end()
    text(frame[pos:])
    return ["".join(r) for r in grid]


def browser_first_frame(path: Path, cols: int, rows: int, monkeypatch) -> list[str]:
    """The browser's first frame given the peek, the parse held back (it would repaint)."""
    monkeypatch.setattr(GGScopeApp, "load_file", lambda self: None)

    async def flow():
        app = GGScopeApp(str(path), auto_stats=False, peek=peek(str(path)))
        async with app.run_test(size=(cols, rows)) as pilot:
            await pilot.pause()
            return [by_cell(s.text) for s in app.screen._compositor.render_strips()]
    return asyncio.run(flow())


def long_name_gguf(tmp_path: Path, name: str) -> Path:
    import gguf
    import numpy as np
    p = tmp_path / "long.gguf"
    w = gguf.GGUFWriter(p, "llama")
    w.add_name(name)
    w.add_tensor("a", np.zeros(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return p


def assert_same_where_painted(pre: list[str], browser: list[str], cols: int) -> None:
    from ggscope.tui.layout import left_width
    left = left_width(cols)
    assert pre[0] == browser[0]                                   # the summary line, whole
    for r in range(1, len(pre) - 1):        # the left pane to the footer (not the scrollbar's 2 columns)
        assert pre[r][:left - 3].rstrip() == browser[r][:left - 3].rstrip(), (r, pre[r][:left], browser[r][:left])
        assert pre[r][left - 1] == browser[r][left - 1] == "▕"
    assert pre[-1].strip() == ""                                  # the footer's row: no keys yet


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (200, 50), (60, 16)])
def test_the_preframe_is_the_browsers_first_frame(size, monkeypatch):
    cols, rows = size
    pre = screen_of(preframe.frame(peek(str(EXAMPLE)), EXAMPLE.name, cols, rows, colour=True), cols, rows)
    assert_same_where_painted(pre, browser_first_frame(EXAMPLE, cols, rows, monkeypatch), cols)
    assert any(line.startswith(" contents") for line in pre)


def test_a_long_name_folds_as_the_overview_folds_it(tmp_path, monkeypatch):
    name = "A long model name that cannot fit " * 4 + "x" * 90 + " and a tail, wide 漢字 too"
    path = long_name_gguf(tmp_path, name)
    cols, rows = 100, 30
    pre = screen_of(preframe.frame(peek(str(path)), path.name, cols, rows, colour=False), cols, rows)
    assert_same_where_painted(pre, browser_first_frame(path, cols, rows, monkeypatch), cols)


def test_a_huge_name_costs_a_screenful(tmp_path):
    """A 6 MiB name (2 Mi characters): the frame is clipped to the screen, and only a screenful of the
    name is escaped (the peek reads it; the pre-frame does not walk it)."""
    path = long_name_gguf(tmp_path, "\u202e" * (2 << 20))
    frame = preframe.frame(peek(str(path)), path.name, 80, 24, colour=True)
    assert len(frame) < 80 * 24 * 12
    assert "\u202e" not in frame and "\\u202e" in frame


def test_no_colour_under_no_color():
    p = peek(str(EXAMPLE))
    coloured = preframe.frame(p, EXAMPLE.name, 120, 40, colour=True)
    plain = preframe.frame(p, EXAMPLE.name, 120, 40, colour=False)
    sgr = lambda f: {code for m in re.finditer(r"\x1b\[([0-9;]*)m", f) for code in m.group(1).split(";")}  # noqa: E731
    assert sgr(coloured) & {"36", "44", "97", "34"}
    assert not sgr(plain) & {str(c) for c in [*range(30, 50), *range(90, 108)]}
    assert screen_of(coloured, 120, 40) == screen_of(plain, 120, 40)


SHOW = f"""
import os
from ggscope.model.peek import peek
from ggscope.tui import preframe
shown = preframe.show(peek({str(EXAMPLE)!r}), "x.gguf")
if shown:
    preframe.withdraw()
os.write(int(os.environ["SIDE"]), repr(shown).encode())
"""


def _show(env=None, stdin_tty=True) -> tuple[str, str]:
    """``SHOW`` with stdout and stderr on a pseudo-terminal (stdin too, unless told):
    what the terminal received, and what ``show`` answered (on a side pipe)."""
    import pty
    import fcntl
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))    # 80x24
    r, w = os.pipe()
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TEXTUAL_DRIVER")}
    full_env.update({"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "TERM": "xterm-256color",
                     "SIDE": str(w), **(env or {})})
    proc = subprocess.Popen([sys.executable, "-c", SHOW], stdin=slave if stdin_tty else subprocess.DEVNULL,
                            stdout=slave, stderr=slave, pass_fds=(w,), env=full_env)
    os.close(slave)
    os.close(w)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:                     # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    os.close(master)
    with os.fdopen(r) as side:
        return b"".join(chunks).decode("utf-8", "replace"), side.read()
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
def test_painted_on_a_terminal_and_given_back():
    out, shown = _show()
    assert shown == "True"
    assert out.startswith(preframe.ENTER) and out.endswith(preframe.LEAVE)
    assert "21 tensors" in out


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("env,stdin_tty", [
    ({}, False),
    ({"TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver"}, True),
    ({"TERM": "dumb"}, True)])
def test_nothing_painted_without_a_terminal_to_paint_on(env, stdin_tty):
    out, shown = _show(env, stdin_tty)
    assert shown == "False" and "\x1b" not in out


def test_the_driver_drops_only_its_first_switch_to_the_alternate_screen(monkeypatch):
    from textual.drivers.linux_driver import LinuxDriver
    from ggscope.tui.driver import ALT_SCREEN, keeping_preframe
    written = []
    monkeypatch.setattr(LinuxDriver, "write", lambda self, data: written.append(data))
    cls = keeping_preframe()
    drv = cls.__new__(cls)              # write() needs no started driver
    assert not cls.entered
    for data in ("\x1b[?1000h", ALT_SCREEN, "\x1b[?25l", ALT_SCREEN):
        drv.write(data)
    assert cls.entered and written == ["\x1b[?1000h", "\x1b[?25l", ALT_SCREEN]   # a resume switches again
    assert not keeping_preframe().entered                                       # a fresh class each time


@pytest.mark.parametrize("outcome", ["textual took over", "interrupted", "failed"])
def test_run_app_gives_the_screen_back_when_textual_never_took_it(outcome, monkeypatch):
    from ggscope.tui import run as tui_run
    calls = []
    monkeypatch.setattr(preframe, "show", lambda p, name: calls.append("show") or True)
    monkeypatch.setattr(preframe, "withdraw", lambda: calls.append("withdraw"))

    def fake_run(self):
        if outcome == "textual took over":
            assert self.driver_class.__name__ == "PreFramedDriver"
            self.driver_class.entered = True         # as its first switch does
        elif outcome == "interrupted":
            raise KeyboardInterrupt
        else:
            raise RuntimeError("no")
    monkeypatch.setattr(GGScopeApp, "run", fake_run)
    if outcome == "textual took over":
        assert tui_run.run_app(str(EXAMPLE)) == 0
        assert calls == ["show"]
    else:
        with pytest.raises((KeyboardInterrupt, RuntimeError)):
            tui_run.run_app(str(EXAMPLE))
        assert calls == ["show", "withdraw"]


def test_no_preframe_for_a_file_the_peek_cannot_read(tmp_path, monkeypatch):
    """Not a GGUF the peek vouches for (here a split model's shard name): no pre-frame,
    the parse starts before Textual, as before."""
    from ggscope.tui import run as tui_run
    shard = tmp_path / "m-00001-of-00002.gguf"
    shard.write_bytes(EXAMPLE.read_bytes())
    calls = []
    monkeypatch.setattr(preframe, "show", lambda p, name: calls.append("show") or True)
    monkeypatch.setattr(GGScopeApp, "run", lambda self: calls.append(self.driver_class.__name__))
    tui_run.run_app(str(shard))
    assert calls == ["LinuxDriver"]


def test_the_preframe_loads_neither_rich_nor_textual():
    code = ("import sys; import ggscope.tui.preframe, ggscope.model.peek; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'textual', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}).stdout
    assert out.strip() == "[]"
