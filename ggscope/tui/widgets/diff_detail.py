"""``DiffDetail``: the selected tensor or metadata change, A and B side by side.

For a tensor: every index field of both files (type, ggml shape, elements, offset,
byte size, block layout) in two columns, then the error metrics of B against A and
what else changed.  For a metadata key or header field: both types and values in
full (long arrays as their differing items).  It only formats what it is given.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ggscope.diff.compare import HeaderChange, MetaChange, MetaEntry, TensorDiff
from ggscope.model.modelfile import TensorInfo
from ggscope.report.diff import METRICS, STATUS_STYLE, display_status, number, value_text
from ggscope.tui.format import file_text, human_bytes

__all__ = ["DiffDetail"]

METRIC_LABELS = {"max_abs": "max|B-A|", "rmse": "RMSE", "rel_rmse": "rel RMSE ||B-A||/||A||",
                 "cosine": "cosine", "snr_db": "SNR dB"}


def _side_by_side(rows: list[tuple[str, str, str]]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=False)
    table.add_column("")
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")
    for field, a, b in rows:
        table.add_row(Text(field, style="bold"), Text(a), Text(b, style="yellow" if a != b else ""))
    return table


def _facts(t: TensorInfo | None) -> list[str]:
    if t is None:
        return ["∅"] * 6
    return [t.type, "×".join(map(str, t.shape)), str(t.n_elements), f"{t.offset:#x}",
            f"{t.nbytes} ({human_bytes(t.nbytes)})", str(t.layout)]


class DiffDetail(VerticalScroll):
    """Shows one tensor's or one metadata entry's two sides; see the module docstring."""

    def compose(self):
        yield Static(Text("select a tensor or a metadata key"), id="diff-detail-text")

    def _show(self, *parts: Any) -> None:
        self.query_one("#diff-detail-text", Static).update(Group(*parts))

    def show_tensor(self, td: TensorDiff, ta: TensorInfo | None, tb: TensorInfo | None) -> None:
        head = Text()
        head.append(file_text(td.name), style="bold")
        head.append(f"  {display_status(td)}", style=STATUS_STYLE.get(display_status(td), "dim"))
        if td.changes:
            head.append(f"  ({', '.join(td.changes)} changed)", style="yellow")
        fa, fb = _facts(ta), _facts(tb)
        fields = ("type", "shape (ggml ne)", "elements", "offset", "nbytes", "layout")
        facts = _side_by_side([(f, x, y) for f, x, y in zip(fields, fa, fb)])
        metrics = Text("\n")      # level with the first row under the A/B heading
        if td.status == "pending":
            metrics.append("not compared yet", style="italic")
        elif td.status in ("added", "removed", "shape-changed"):
            metrics.append("not compared numerically: "
                           + {"added": "only in B", "removed": "only in A",
                              "shape-changed": "element counts differ"}[td.status], style="italic")
        else:
            for m in METRICS:
                metrics.append(f"{METRIC_LABELS[m]:<22}  ", style="bold")
                metrics.append(f"{number(getattr(td, m), m)}\n")
            if td.n_nonfinite:
                metrics.append(f"{'non-finite positions':<22}  {td.n_nonfinite}\n")
        both = Table.grid(padding=(0, 4))
        both.add_row(facts, metrics)
        parts: list[Any] = [head, both]
        if td.error:
            parts.append(Text(file_text(td.error), style="bold red"))
        self._show(*parts)

    def show_metadata(self, change: str, entry: Any) -> None:
        if isinstance(entry, HeaderChange):
            self._show(Text(f"header field {entry.field}", style="bold"),
                       _side_by_side([("value", "not set" if entry.a is None else file_text(entry.a),
                                       "not set" if entry.b is None else file_text(entry.b))]))
            return
        if isinstance(entry, MetaEntry):
            where = "only in B (added)" if change == "+" else "only in A (removed)"
            value = value_text(entry.key, entry.value, 2000)
            a, b = ("∅", value) if change == "+" else (value, "∅")
            self._show(Text(f"{file_text(entry.key)}  {where}", style="bold"),
                       _side_by_side([("type", entry.type if change == "-" else "∅",
                                       entry.type if change == "+" else "∅"), ("value", a, b)]))
            return
        assert isinstance(entry, MetaChange)
        if not entry.is_array:
            self._show(Text(f"{file_text(entry.key)}  changed", style="bold"),
                       _side_by_side([("type", entry.type_a, entry.type_b),
                                      ("value", value_text(entry.key, entry.a, 2000), value_text(entry.key, entry.b, 2000))]))
            return
        rows = [("type", entry.type_a, entry.type_b), ("items", str(entry.len_a), str(entry.len_b))]
        rows += [(f"[{d.index}]", value_text(entry.key, d.a, 200), value_text(entry.key, d.b, 200)) for d in entry.first]
        note = Text(f"{entry.n_differing} of the {min(entry.len_a or 0, entry.len_b or 0)} common items differ"
                    + (f"; the first {len(entry.first)} are shown" if entry.n_differing and
                       entry.n_differing > len(entry.first) else ""), style="italic")
        self._show(Text(f"{file_text(entry.key)}  changed", style="bold"), _side_by_side(rows), note)

    def show_text(self, text: str) -> None:
        self._show(Text(text, style="italic"))
