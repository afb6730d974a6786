"""The diff screen's two lists: tensors with their error columns, and metadata changes.

``DiffTensorTable`` has one row per tensor name of either file, in ``diff_files``'s
order (A's tensors, then B's new ones).  A row starts *pending* with what both indexes
already tell (types, shapes) and is replaced when the worker delivers its
``TensorDiff`` (``set_diff``).  ``cycle_sort`` steps through ``SORTS`` (error columns
sort worst first, values not computed yet last); ``toggle_filter`` hides tensors whose
values did not change ("identical", "equal").  ``DiffMetadataTable`` lists header
changes and added / removed / changed keys with A's and B's values side by side.
Highlighting a row posts ``DiffRowSelected``; neither table computes anything.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from ggscope.diff.compare import HeaderChange, MetadataDiff, MetaChange, TensorDiff, tensor_names, tensors_by_name
from ggscope.model.modelfile import ModelFile
from ggscope.report.diff import STATUS_STYLE, display_status, number, shape_text, value_text
from ggscope.tui.format import file_text
from ggscope.tui.messages import DiffRowSelected
from ggscope.tui.widgets.plain_table import PlainTable

__all__ = ["DiffTensorTable", "DiffMetadataTable", "SORTS", "COLUMNS", "PENDING", "UNCHANGED",
           "pending_diffs", "pair_text", "meta_rows"]

PENDING = "pending"                    # a row whose TensorDiff has not arrived yet
UNCHANGED = ("identical", "equal")     # what the "changed only" filter hides

# (column key, label, TensorDiff attribute of a metric or None, fixed width or None).
# Columns whose text only arrives with the worker get a width that fits any value
# ("shape-changed", "-1.234e+00"); the others are sized from the pending rows.
COLUMNS = (("name", "name", None, None), ("status", "status", None, 13), ("type", "type A→B", None, None),
           ("rel_rmse", "rel RMSE", "rel_rmse", 10), ("cosine", "cosine", "cosine", 9),
           ("shape", "shape A→B", None, None), ("max_abs", "max|Δ|", "max_abs", 10),
           ("rmse", "RMSE", "rmse", 10), ("snr_db", "SNR dB", "snr_db", 7))   # most telling first

_STATUS_ORDER = {s: i for i, s in enumerate(("error", "shape-changed", "changed", "added", "removed",
                                             "equal", "identical", PENDING))}


def _worst_first(attr: str, high_is_worse: bool) -> Callable[[TensorDiff], tuple]:
    def key(td: TensorDiff) -> tuple:
        v = getattr(td, attr)
        if v is None or math.isnan(v):
            return (1, 0.0)
        return (0, -v if high_is_worse else v)
    return key


# the `o` key cycles through these: (label, key of a TensorDiff or None for file order)
SORTS: tuple[tuple[str, Callable[[TensorDiff], Any] | None], ...] = (
    ("file order", None),
    ("name", lambda td: td.name),
    ("status", lambda td: _STATUS_ORDER.get(td.status, len(_STATUS_ORDER))),
    ("rel RMSE, worst first", _worst_first("rel_rmse", True)),
    ("cosine, worst first", _worst_first("cosine", False)),
    ("SNR dB, worst first", _worst_first("snr_db", False)),
    ("max|Δ|, worst first", _worst_first("max_abs", True)),
)


def pending_diffs(a: ModelFile, b: ModelFile) -> dict[str, TensorDiff]:
    """A placeholder per tensor name in ``diff_files``'s order, from the indexes alone."""
    by_a, by_b = tensors_by_name(a, b), tensors_by_name(b, a)
    out: dict[str, TensorDiff] = {}
    for name in tensor_names(a, b):
        ta, tb = by_a.get(name), by_b.get(name)
        out[name] = TensorDiff(
            name=name, status=PENDING,
            shape_a=tuple(ta.shape) if ta else None, shape_b=tuple(tb.shape) if tb else None,
            type_a=ta.type if ta else None, type_b=tb.type if tb else None,
            offset_a=ta.offset if ta else None, offset_b=tb.offset if tb else None)
    return out


def pair_text(a: str | None, b: str | None) -> str:
    """``a``, or ``a → b`` when they differ; a side that is missing shows as "∅"."""
    if a == b:
        return str(a)
    return f"{'∅' if a is None else a} → {'∅' if b is None else b}"


def _cells(td: TensorDiff) -> list[Text]:
    shown = display_status(td)
    style = STATUS_STYLE.get(shown, "dim")
    name_style = style if td.status in ("added", "removed", "error", "shape-changed") else ""
    shape_a = None if td.shape_a is None else shape_text(td.shape_a)
    shape_b = None if td.shape_b is None else shape_text(td.shape_b)
    cells = {"name": Text(file_text(td.name), style=name_style), "status": Text(shown, style=style),
             "type": Text(pair_text(td.type_a, td.type_b)), "shape": Text(pair_text(shape_a, shape_b))}
    for key, _, attr, _ in COLUMNS:
        if attr is None:
            continue
        v = getattr(td, attr)
        text = "…" if td.status == PENDING else number(v, attr)
        cells[key] = Text(text, justify="right", style="dim" if td.status == PENDING else "")
    return [cells[key] for key, *_ in COLUMNS]


class DiffTensorTable(PlainTable):
    """One row per tensor; see the module docstring."""

    def __init__(self, diffs: dict[str, TensorDiff], **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.diffs = diffs            # name -> TensorDiff (or its pending placeholder), file order
        self.sort_index = 0
        self.changed_only = False

    @property
    def sort_label(self) -> str:
        return SORTS[self.sort_index][0]

    def on_mount(self) -> None:
        for key, label, attr, width in COLUMNS:
            self.add_column(Text(label, justify="right") if attr else label, key=key, width=width)
        self.refill()

    def visible(self, td: TensorDiff) -> bool:
        return not (self.changed_only and td.status in UNCHANGED)

    def names_in_order(self) -> list[str]:
        """The names the table shows, in the current sort and filter."""
        rows = [td for td in self.diffs.values() if self.visible(td)]
        key = SORTS[self.sort_index][1]
        if key is not None:
            rows.sort(key=key)
        return [td.name for td in rows]

    def refill(self) -> None:
        """Lay the rows out again, keeping the cursor on the same tensor when it stays."""
        current = self.current_name()
        self.clear()
        for name in self.names_in_order():
            self.add_row(*_cells(self.diffs[name]), key=name)
        if current is not None and current in self.rows:
            self.move_cursor(row=self.get_row_index(current))

    def current_name(self) -> str | None:
        if not self.row_count or self.cursor_row < 0:
            return None
        return self.coordinate_to_cell_key((min(self.cursor_row, self.row_count - 1), 0)).row_key.value

    def set_diff(self, td: TensorDiff) -> None:
        """Show a computed tensor; rows keep their place until the next ``refill``."""
        self.diffs[td.name] = td
        if td.name not in self.rows:
            if self.visible(td):
                self.add_row(*_cells(td), key=td.name)
            return
        if not self.visible(td):
            self.remove_row(td.name)
            return
        for (key, *_), cell in zip(COLUMNS, _cells(td)):
            self.update_cell(td.name, key, cell)
        if td.name == self.current_name():
            self.post_message(DiffRowSelected("tensor", td))

    def cycle_sort(self) -> str:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.refill()
        if self.row_count:
            self.move_cursor(row=0)       # a new order is read from its top (the worst)
        return self.sort_label

    def toggle_filter(self) -> bool:
        self.changed_only = not self.changed_only
        self.refill()
        return self.changed_only

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        name = event.row_key.value
        if name in self.diffs:
            self.post_message(DiffRowSelected("tensor", self.diffs[name]))


def _array_side(c: MetaChange, side: str) -> str:
    n = c.len_a if side == "a" else c.len_b
    items = ", ".join(f"[{d.index}] {value_text(c.key, getattr(d, side), 20)}" for d in c.first)
    return f"{n} items" + (f": {items}" if items else "") + ("…" if (c.n_differing or 0) > len(c.first) else "")


def meta_rows(header: tuple[HeaderChange, ...], meta: MetadataDiff) -> list[tuple[str, Any, list[str]]]:
    """(marker, domain entry, [key, type, A, B]) for every header and metadata change."""
    rows: list[tuple[str, Any, list[str]]] = []
    for h in header:
        rows.append(("header", h, [h.field, "", "not set" if h.a is None else file_text(h.a),
                                   "not set" if h.b is None else file_text(h.b)]))
    for e in meta.removed:
        rows.append(("-", e, [file_text(e.key), e.type, value_text(e.key, e.value, 60), "∅"]))
    for e in meta.added:
        rows.append(("+", e, [file_text(e.key), e.type, "∅", value_text(e.key, e.value, 60)]))
    for c in meta.changed:
        types = pair_text(c.type_a, c.type_b)
        if c.is_array:
            a, b = _array_side(c, "a"), _array_side(c, "b") + f"  ({c.n_differing} differ)"
        else:
            a, b = value_text(c.key, c.a, 60), value_text(c.key, c.b, 60)
        rows.append(("~", c, [file_text(c.key), types, a, b]))
    return rows


_MARK_STYLE = {"+": "cyan", "-": "magenta", "~": "yellow", "header": "yellow"}


class DiffMetadataTable(PlainTable):
    """Header fields and metadata keys that differ, A's and B's values side by side."""

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.entries: list[tuple[str, Any]] = []

    def on_mount(self) -> None:
        self.add_columns("", "key", "type", "A", "B")
        self.add_row("", "comparing…", "", "", "")

    def set_changes(self, header: tuple[HeaderChange, ...], meta: MetadataDiff) -> None:
        self.clear()
        rows = meta_rows(header, meta)
        self.entries = [(mark, entry) for mark, entry, _ in rows]
        if not rows:
            self.add_row("", Text("header and metadata are identical", style="green"), "", "", "")
        for i, (mark, _, cells) in enumerate(rows):
            style = _MARK_STYLE[mark]
            self.add_row(Text(mark, style=style), Text(cells[0], style=style), *cells[1:], key=str(i))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if not self.has_focus or event.row_key.value is None or not self.entries:
            return
        mark, entry = self.entries[int(event.row_key.value)]
        self.post_message(DiffRowSelected("metadata", entry, mark))

