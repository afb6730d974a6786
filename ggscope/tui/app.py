"""``GGScopeApp``: browse one parsed model file.

Left, switchable tabs (1-4): the structure tree, metadata, tensors and findings.
Right: the hex view over the whole file and a detail pane for the selection.  Panes
post the messages of ``messages.py``; this app routes them (a node selected anywhere
-> its bytes highlighted in the hex view; the hex cursor moved -> the deepest node
under it shown in the detail pane).  Tensor statistics run in a cancellable thread
worker that reports progress by message.  State shows as CSS classes on the app:
``-damaged`` when the file did not parse to the end, ``-stats-running`` while the
worker runs.
"""
from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, ProgressBar, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from ..modelfile import ModelFile
from ..node import Node, deepest_at
from .format import human_bytes, short_value
from .messages import (CursorMoved, FindingsReady, NodeSelected, RangeRequested, StatsComputed,
                       StatsFinished, StatsProgressed)
from .regions import Regions
from .screens.prompt import PromptScreen
from .search import parse_offset, search
from .widgets.detail import DetailPane
from .widgets.hex_view import HexView
from .widgets.node_tree import NodeTree
from .widgets.tables import FindingsTable, MetadataTable, TensorTable

__all__ = ["GGScopeApp", "AUTO_STATS_BYTES"]

# statistics start by themselves when all tensor data together is at most this big;
# above it (a 20 GB model) the user starts them with `s`.
AUTO_STATS_BYTES = 64 << 20

TABS = ("structure", "metadata", "tensors", "findings")


def _findings(mf: ModelFile) -> list:
    """The validator's findings, plus the damage itself if no rule reported it."""
    from ..validate import validate
    from ..rules import Finding, Severity
    try:
        found = list(validate(mf))
    except Exception as exc:  # noqa: BLE001 - the browser must open whatever the rules do
        found = [Finding("GG000", Severity.ERROR, mf.path, f"validator failed: {type(exc).__name__}: {exc}")]
    d = mf.damage
    if d is not None and not any(f.start == d.start for f in found):
        found.insert(0, Finding("GG001", Severity.ERROR, mf.path, f"parsing stopped: {d.error}",
                                path=d.path, start=d.start, end=d.start + 1))
    return found


class GGScopeApp(App):
    """The browser; ``GGScopeApp(mf).run()``."""

    CSS_PATH = "ggscope.tcss"
    TITLE = "ggscope"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("g", "goto", "Goto"),
        Binding("slash", "search", "Find"),
        Binding("n", "search_next", "Next"),
        Binding("c", "copy", "Copy"),
        Binding("s", "stats", "Stats"),
        Binding("x", "cancel_stats", "Stop"),
        Binding("left_square_bracket", "page(-1)", "Page-"),
        Binding("right_square_bracket", "page(1)", "Page+"),
        Binding("plus", "resize(4)", "Wide"),
        Binding("minus", "resize(-4)", "Narrow"),
        Binding("z", "toggle_maximize", "Zoom"),
        *(Binding(str(i + 1), f"tab('{t}')", t.title(), show=False) for i, t in enumerate(TABS)),
    ]

    def __init__(self, mf: ModelFile, *, auto_stats: bool | None = None) -> None:
        super().__init__()
        self.mf = mf
        self.findings: list = []        # filled by the validator worker
        total = sum(t.nbytes for t in mf.tensors)
        self.auto_stats = total <= AUTO_STATS_BYTES if auto_stats is None else auto_stats
        self.stats: dict[str, object] = {}
        self.selected: Node | None = None
        self.last_query = ""
        self.left_width = 60
        self.sub_title = Path(mf.path).name

    # --- layout -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        mf = self.mf
        summary = (f" {Path(mf.path).name}  ·  {mf.format} v{mf.version}  ·  {mf.endian}-endian  ·  "
                   f"{human_bytes(mf.source.size)}  ·  {len(mf.metadata)} keys  ·  {len(mf.tensors)} tensors"
                   )
        if mf.damage is not None:
            summary += f"  ·  DAMAGED at {mf.damage.start:#x}"
        yield Static(summary, id="summary")
        with Horizontal(id="main"):
            with TabbedContent(id="left", initial="structure"):
                with TabPane("1 Structure", id="structure"):
                    yield NodeTree(mf.root, id="tree")
                with TabPane("2 Metadata", id="metadata"):
                    yield MetadataTable(mf, id="metadata-table")
                with TabPane("3 Tensors", id="tensors"):
                    with Vertical():
                        yield TensorTable(mf, id="tensor-table")
                        yield ProgressBar(total=max(1, len(mf.tensors)), id="stats-progress",
                                          show_eta=False)
                with TabPane("4 Findings …", id="findings"):
                    yield FindingsTable(self.findings, id="findings-table")
            with Vertical(id="right"):
                yield HexView(mf.source, Regions.from_tree(mf.root), id="hex")
                yield DetailPane(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.set_class(self.mf.damage is not None, "-damaged")
        self.query_one("#left").styles.width = self.left_width
        self.query_one("#tree").focus()
        if self.mf.damage is not None:
            self.show_node(self.mf.damage)
            self.call_after_refresh(self.query_one(NodeTree).reveal, self.mf.damage)
        self.run_validator()
        if self.auto_stats and self.mf.tensors:
            self.compute_stats()

    # --- routing ------------------------------------------------------------------------
    def show_node(self, node: Node, *, move_cursor: bool = True) -> None:
        self.selected = node
        self.query_one(HexView).select_range(node.start, node.end, move_cursor=move_cursor)
        self.query_one(DetailPane).show_node(node)

    def on_node_selected(self, message: NodeSelected) -> None:
        node = message.node
        if message.source == "tensors":
            t = next((t for t in self.mf.tensors if t.node_path == node.path), None)
            self.show_node(node)
            if t is not None:
                self.query_one(DetailPane).show_tensor(t, self.stats.get(t.name), self._stats_note(t))
            return
        self.show_node(node)

    def on_range_requested(self, message: RangeRequested) -> None:
        start = message.start
        node = deepest_at(self.mf.root, start) if start < self.mf.source.size else None
        self.query_one(HexView).select_range(start, message.end)
        if node is not None:
            self.selected = node
            self.query_one(DetailPane).show_node(node)
        if message.label:
            self.notify(message.label, timeout=2)

    def on_cursor_moved(self, message: CursorMoved) -> None:
        node = deepest_at(self.mf.root, message.offset)
        hexview = self.query_one(HexView)
        self.selected = node
        hexview.select_range(node.start, node.end, move_cursor=False)
        self.query_one(DetailPane).show_node(node)

    # --- actions --------------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        focus = {"structure": "#tree", "metadata": "#metadata-table", "tensors": "#tensor-table",
                 "findings": "#findings-table"}[tab]
        self.query_one(focus).focus()

    def action_resize(self, delta: int) -> None:
        self.left_width = max(20, min(self.size.width - 20, self.left_width + delta))
        self.query_one("#left").styles.width = self.left_width
        self.query_one("#tree").focus()

    def action_toggle_maximize(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.focused is not None:
            self.screen.maximize(self.focused)

    def action_page(self, delta: int) -> None:
        self.query_one(DetailPane).turn_page(delta)

    def action_goto(self) -> None:
        def done(answer: str | None) -> None:
            if answer is None:
                return
            off = parse_offset(answer, self.mf.source.size)
            if off is None:
                self.notify(f"not an offset in this file: {answer!r}", severity="warning")
                return
            hexview = self.query_one(HexView)
            hexview.focus()
            hexview.set_cursor(off)
        self.push_screen(PromptScreen("Go to offset", "0x1c8, 456, -16 (from the end), end"), done)

    def action_search(self) -> None:
        def done(answer: str | None) -> None:
            if answer:
                self.last_query = answer
                self._search(-1)
        self.push_screen(PromptScreen("Search", "key or tensor name, ASCII text, or x:47 47 55 46",
                                      self.last_query), done)

    def action_search_next(self) -> None:
        if self.last_query:
            self._search(self.selected.start if self.selected is not None else -1)

    def _search(self, after: int) -> None:
        hit = search(self.mf, self.last_query, after)
        if hit is None:
            self.notify(f"not found: {self.last_query!r}", severity="warning")
            return
        start, end, label = hit
        self.post_message(RangeRequested(start, end, label))

    def action_copy(self) -> None:
        node = self.selected
        if node is None:
            return
        text = short_value(node.value, 1 << 20) if node.value is not None else f"{node.start:#x}"
        self.copy_to_clipboard(text)
        self.notify(f"copied {node.path or '/'}", timeout=2)

    # --- workers -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="validate", exit_on_error=False)
    def run_validator(self) -> None:
        self.post_message(FindingsReady(_findings(self.mf)))

    def on_findings_ready(self, message: FindingsReady) -> None:
        self.findings = message.findings
        self.query_one(FindingsTable).set_findings(message.findings)
        self.query_one(TabbedContent).get_tab("findings").label = f"4 Findings ({len(message.findings)})"

    # --- statistics worker ---------------------------------------------------------------
    def _stats_note(self, t) -> str:
        return getattr(self, "_stats_errors", {}).get(t.name, "")

    def action_stats(self) -> None:
        self.compute_stats()

    def action_cancel_stats(self) -> None:
        self.workers.cancel_group(self, "stats")

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def compute_stats(self) -> None:
        worker = get_current_worker()
        tensors = list(self.mf.tensors)
        self.call_from_thread(self.add_class, "-stats-running")
        cancelled = False
        for i, t in enumerate(tensors):
            if worker.is_cancelled:
                cancelled = True
                break
            if t.name in self.stats:
                continue
            try:
                stats, err = t.stats(), ""
            except ImportError:   # TEMPORARY guard until ggscope/stats.py lands
                stats, err = None, "statistics unavailable"
            except Exception as exc:  # noqa: BLE001 - damaged data must not kill the app
                stats, err = None, f"statistics unavailable: {exc}"
            self.post_message(StatsComputed(t.name, stats, err))
            self.post_message(StatsProgressed(i + 1, len(tensors)))
        self.post_message(StatsFinished(cancelled))

    def on_stats_computed(self, message: StatsComputed) -> None:
        if message.stats is not None:
            self.stats[message.name] = message.stats
        else:
            self.__dict__.setdefault("_stats_errors", {})[message.name] = message.error
        table = self.query_one(TensorTable)
        for i, t in enumerate(self.mf.tensors):
            if t.name == message.name:
                table.set_stats(i, message.stats, message.error)

    def on_stats_progressed(self, message: StatsProgressed) -> None:
        self.query_one("#stats-progress", ProgressBar).update(total=message.total, progress=message.done)

    def on_stats_finished(self, message: StatsFinished) -> None:
        self.remove_class("-stats-running")
        if message.cancelled:
            self.notify("statistics cancelled", timeout=2)
