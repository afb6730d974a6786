"""The list panes: metadata, tensors and findings, each a ``DataTable`` of domain rows.

Highlighting a row posts ``NodeSelected`` (metadata entry, tensor info) or
``RangeRequested`` (a finding's bytes); the app routes it to the hex view.  The tensor
table's statistics columns are filled in later by ``set_stats`` as the worker reports.
"""
from __future__ import annotations

from textual.widgets import DataTable

from ggscope.model.modelfile import ModelFile, TensorInfo
from ggscope.ksy.node import find
from ggscope.tui.format import file_text, human_bytes, short_value
from ggscope.tui.messages import NodeSelected, RangeRequested, TensorSelected
from ggscope.tui.widgets.plain_table import PlainTable

__all__ = ["MetadataTable", "TensorTable", "FindingsTable"]


class MetadataTable(PlainTable):
    """Key, type and value of every metadata entry; long arrays shown as count + head."""

    def __init__(self, mf: ModelFile, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.mf = mf

    def on_mount(self) -> None:
        from ggscope.model.summary import file_type_name  # lazy: 5 more modules only when used
        self.add_columns("key", "type", "value")
        for key, value in self.mf.metadata.items():
            text = short_value(value, 120)
            if key == "general.file_type" and file_type_name(value):
                text = f"{file_type_name(value)} ({text})"
            self.add_row(file_text(key), self.mf.metadata_types.get(key, ""), text, key=key)

    def announce(self) -> None:
        """Post the row under the cursor (a tab was just switched to)."""
        if self.row_count:
            self._post(self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if not self.has_focus:      # the initial highlight of a hidden tab selects nothing
            return
        self._post(event.row_key.value)

    def _post(self, key) -> None:
        path = self.mf.metadata_nodes.get(key)
        node = find(self.mf.root, path) if path else None
        if node is not None:
            self.post_message(NodeSelected(node, "metadata"))


STAT_COLUMNS = ("mean", "std", "min", "max")


class TensorTable(PlainTable):
    """Name, shape, type, offset, size, then statistics as the worker delivers them."""

    def __init__(self, mf: ModelFile, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.mf = mf
        self.stats: dict[str, object] = {}

    def on_mount(self) -> None:
        self.add_columns("name", "shape", "type", "offset", "size")
        for col in STAT_COLUMNS:
            self.add_column(col, key=col)
        for i, t in enumerate(self.mf.tensors):
            self.add_row(file_text(t.name), "×".join(map(str, t.shape)), t.type, f"{t.offset:#x}",
                         human_bytes(t.nbytes), *("…",) * len(STAT_COLUMNS), key=str(i))

    def tensor_at_cursor(self) -> TensorInfo | None:
        if not self.mf.tensors or self.cursor_row < 0:
            return None
        return self.mf.tensors[min(self.cursor_row, len(self.mf.tensors) - 1)]

    def set_stats(self, index: int, stats, error: str = "") -> None:
        for col in STAT_COLUMNS:
            if stats is None:
                text = "n/a"
            else:
                v = stats.get(col) if hasattr(stats, "get") else getattr(stats, col, None)
                text = "n/a" if v is None else f"{float(v):.4g}"
            self.update_cell(str(index), col, text, update_width=True)

    def announce(self) -> None:
        """Post the row under the cursor (a tab was just switched to)."""
        if self.row_count:
            self._post(self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if not self.has_focus or event.row_key.value is None:
            return
        self._post(event.row_key.value)

    def _post(self, key) -> None:
        t = self.mf.tensors[int(key)]
        if t.file is not None and t.file.path != self.mf.path:     # another shard's tensor: its own bytes
            self.post_message(TensorSelected(t))
            return
        node = find(self.mf.root, t.node_path) if t.node_path else None
        if node is not None:
            self.post_message(NodeSelected(node, "tensors"))
        else:
            self.post_message(RangeRequested(t.offset, t.offset + t.nbytes, t.name))


class FindingsTable(PlainTable):
    """The validator's findings; highlighting one jumps to its bytes and shows the whole
message in the detail pane."""

    def __init__(self, findings: list, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.findings = findings

    def on_mount(self) -> None:
        self.add_columns("code", "severity", "offset", "message")
        self.set_findings(self.findings, placeholder="validating…")

    def set_findings(self, findings: list, placeholder: str = "no findings") -> None:
        self.findings = findings
        self.clear()
        if not findings:
            self.add_row("", "", "", placeholder)
        for i, f in enumerate(self.findings):
            sev = getattr(f.severity, "value", str(f.severity))
            where = "" if f.start is None else f"{f.start:#x}"
            self.add_row(f.code, sev, where, file_text(f.message), key=str(i))

    def announce(self) -> None:
        """Post the row under the cursor (a tab was just switched to)."""
        if self.row_count and self.findings:
            self._post(self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if self.has_focus and event.row_key.value is not None and self.findings:
            self._post(event.row_key.value)

    def _post(self, key) -> None:
        if key is None:
            return
        f = self.findings[int(key)]
        if f.start is not None:
            self.post_message(RangeRequested(f.start, f.end, finding=f))
