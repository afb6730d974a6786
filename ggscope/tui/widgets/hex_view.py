"""``HexView``: offset, hex and ASCII columns over a file of any size.

A ``ScrollView`` on Textual's Line API: the virtual height is ``ceil(size / 16)`` and
``render_line`` slices only the 16 bytes of the row it draws from the ``ByteSource``
(an mmap), so a 20 GB file costs what a 20 KB one does, and jumping to the last byte is
one scroll.  A row holds 16 bytes when the pane is wide enough, else 8 or 4
(``bytes_per_row`` follows the width on every resize), so a narrow terminal shows
whole rows instead of a horizontal scroll.  Rendered rows are cached in an ``LRUCache`` keyed by everything that
changes their look (row, selection, cursor).  Bytes are coloured by region kind
(``hexview--<kind>`` component classes), the selected node's range by
``hexview--selection`` and the cursor byte by ``hexview--cursor``.  Moving the cursor
posts ``CursorMoved``; the app maps the offset to the deepest node.  ``show_source``
switches the view to another file (a later shard of a split model), its label then the
view's border subtitle.
"""
from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ggscope.core.errors import FileChanged
from ggscope.source.mapped import ByteSource
from ggscope.tui.messages import CursorMoved
from ggscope.tui.regions import KINDS, Regions

__all__ = ["HexView", "BYTES_PER_ROW", "row_width"]

BYTES_PER_ROW = 16          # the widest row; narrower panes use 8 or 4
_ASCII = [chr(b) if 0x20 <= b < 0x7F else "." for b in range(256)]


def row_width(offset_digits: int, per_row: int) -> int:
    """Columns one row takes: offset, three spaces, "xx " per byte, a space, the ASCII."""
    return offset_digits + 3 + 3 * per_row + 1 + per_row


class HexView(ScrollView, can_focus=True):
    """Hex dump of a ``ByteSource``; see the module docstring for the contract."""

    COMPONENT_CLASSES = {"hexview--offset", "hexview--selection", "hexview--cursor",
                         *(f"hexview--{k}" for k in KINDS)}
    DEFAULT_CSS = """
    HexView { width: 1fr; height: 1fr; }
    HexView > .hexview--offset { color: $text-muted; }
    HexView > .hexview--header { color: ansi_bright_white; text-style: bold; }
    HexView > .hexview--key { color: ansi_bright_cyan; }
    HexView > .hexview--value { color: ansi_bright_green; }
    HexView > .hexview--tinfo { color: ansi_bright_yellow; }
    HexView > .hexview--padding { color: ansi_bright_black; }
    HexView > .hexview--data { color: ansi_white; }
    HexView > .hexview--error { color: ansi_bright_white; background: ansi_red; }
    HexView > .hexview--other { color: ansi_white; }
    HexView > .hexview--selection { background: ansi_blue; color: ansi_bright_white; }
    HexView > .hexview--cursor { background: ansi_bright_white; color: ansi_black; text-style: bold; }
    """
    BINDINGS = [
        Binding("up", "move_rows(-1)", "Up", show=False),
        Binding("down", "move_rows(1)", "Down", show=False),
        Binding("left", "move(-1)", "Left", show=False),
        Binding("right", "move(1)", "Right", show=False),
        Binding("pageup", "page(-1)", "PgUp", show=False),
        Binding("pagedown", "page(1)", "PgDn", show=False),
        Binding("home", "jump_start", "Start"),
        Binding("end", "jump_end", "End"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    def __init__(self, source: ByteSource, regions: Regions | None = None, *,
                 name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source = source
        self.regions = regions or Regions(())
        self.selection: tuple[int, int] = (0, 0)
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self.bytes_per_row = BYTES_PER_ROW
        self._offset_digits = max(8, len(f"{max(source.size - 1, 0):x}"))
        self._set_rows(BYTES_PER_ROW)

    def show_source(self, source: ByteSource, regions: Regions, label: str = "") -> None:
        """Show another file's bytes from its start; ``label`` names it on the bottom border."""
        self.source, self.regions = source, regions
        self.selection = (0, 0)
        self._offset_digits = max(8, len(f"{max(source.size - 1, 0):x}"))
        self._set_rows(self.bytes_per_row)
        self.border_subtitle = label or None
        self.set_cursor(0, post=False)
        self.refresh()

    def _set_rows(self, per_row: int) -> None:
        self.bytes_per_row = per_row
        self.n_rows = max(1, -(-self.source.size // per_row))
        self._cache.clear()
        self.virtual_size = Size(row_width(self._offset_digits, per_row), self.n_rows)

    def on_resize(self, event) -> None:
        width = self.scrollable_content_region.width
        per_row = next((n for n in (16, 8, 4) if row_width(self._offset_digits, n) <= width), 4)
        if per_row != self.bytes_per_row:
            self._set_rows(per_row)
            self._scroll_to_row(self.cursor // per_row)
            self.refresh()

    # --- public API -------------------------------------------------------------------
    def select_range(self, start: int, end: int | None, *, move_cursor: bool = True) -> None:
        """Highlight ``[start, end)`` and (by default) put the cursor on ``start``."""
        start = max(0, min(start, max(self.source.size - 1, 0)))
        end = start + 1 if end is None or end <= start else min(end, self.source.size)
        self.selection = (start, end)
        self._cache.clear()
        if move_cursor:
            self.set_cursor(start, post=False)
        self.refresh()

    def set_cursor(self, offset: int, *, post: bool = True) -> None:
        offset = max(0, min(offset, max(self.source.size - 1, 0)))
        self._post_cursor = post
        self.cursor = offset

    # --- reactive / actions -----------------------------------------------------------
    def watch_cursor(self, offset: int) -> None:
        self._cache.clear()
        self._scroll_to_row(offset // self.bytes_per_row)
        self.refresh()
        if getattr(self, "_post_cursor", True):
            self.post_message(CursorMoved(offset))
        self._post_cursor = True

    def _scroll_to_row(self, row: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        self.set_cursor(self.cursor + delta)

    def action_move_rows(self, rows: int) -> None:
        self.set_cursor(self.cursor + rows * self.bytes_per_row)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        self.set_cursor(self.cursor + direction * height * self.bytes_per_row)

    def action_jump_start(self) -> None:
        self.set_cursor(0)

    def action_jump_end(self) -> None:
        self.set_cursor(self.source.size - 1)

    def on_click(self, event) -> None:
        row = int(self.scroll_offset.y) + event.y
        x = event.x + int(self.scroll_offset.x)
        hex_start = self._offset_digits + 3
        ascii_start = hex_start + 3 * self.bytes_per_row + 1
        if hex_start <= x < hex_start + 3 * self.bytes_per_row:
            col = (x - hex_start) // 3
        elif ascii_start <= x < ascii_start + self.bytes_per_row:
            col = x - ascii_start
        else:
            return
        self.focus()
        self.set_cursor(row * self.bytes_per_row + col)

    # --- Line API -----------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = int(scroll_y) + y
        width = self.scrollable_content_region.width
        if row >= self.n_rows or self.source.size == 0:
            return Strip.blank(width, self.rich_style)
        key = (row, self.selection, self.cursor)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._cache[key] = self._render_row(row)
        return strip.crop_extend(int(scroll_x), int(scroll_x) + width, self.rich_style)

    def _render_row(self, row: int) -> Strip:
        start = row * self.bytes_per_row
        try:                    # read, not through the map: a file that shrank must not kill us (SIGBUS)
            data = self.source.pread(start, start + self.bytes_per_row)
        except FileChanged as exc:
            self.app.load_error = f"ggscope: {exc}"         # one line on stderr after the screen closes
            self.app.exit(return_code=2)
            data = b""
        styles = {k: self.get_component_rich_style(f"hexview--{k}") for k in KINDS}
        sel = self.get_component_rich_style("hexview--selection")
        cur = self.get_component_rich_style("hexview--cursor")
        s0, s1 = self.selection
        segs = [Segment(f"{start:0{self._offset_digits}x}", self.get_component_rich_style("hexview--offset")),
                Segment("   ")]
        byte_styles: list[Style] = []
        for i in range(len(data)):
            off = start + i
            st = styles[self.regions.kind_at(off)]
            if off == self.cursor:
                st = st + cur
            elif s0 <= off < s1:
                st = st + sel
            byte_styles.append(st)
        for i in range(self.bytes_per_row):
            if i < len(data):
                segs.append(Segment(f"{data[i]:02x}", byte_styles[i]))
                joined = i + 1 < len(data) and s0 <= start + i < s1 and s0 <= start + i + 1 < s1
                segs.append(Segment(" ", sel if joined else Style()))
            else:
                segs.append(Segment("   "))
        segs.append(Segment(" "))
        for i in range(len(data)):
            segs.append(Segment(_ASCII[data[i]], byte_styles[i]))
        return Strip(segs)

    def notify_style_update(self) -> None:
        self._cache.clear()
        super().notify_style_update()
