"""``GGScopeApp``: browse one model file.

The first screen's facts come first (issue 26.9): ``GGScopeApp(path)`` composes only
the window - the summary line, the tabs with the overview, the footer - while the file
is parsed on a thread (``jobs.start_opening``, started by ``run_app`` before Textual is
imported, or the loader worker).  A GGUF file's header facts come sooner still: given
``peek`` (``model.peek``, read by ``run_app`` with ``struct`` alone) the first frame
shows them and the parse - numpy, the spec engine - starts only once that frame is
drawn, so it does not compete with Textual's start.  On a terminal the launcher has
painted those facts before Textual was even imported (``preframe``, in the words of
``first_screen``); the app then runs with ``driver.keeping_preframe`` (``driver_class``)
so that its first frame replaces them without a blank screen between.  ``FileLoaded``
fills the summary and the overview, and only once the footer is drawn
(``_after_window``) are the hex view, the detail pane and the other tabs' tables and
tree mounted and the validator started, so none of that work or its imports delay the
first frames.  ``GGScopeApp(modelfile)`` composes an
already parsed file whole (tests, the API).

Left, switchable tabs (1-5): the overview (what the file is), metadata, tensors,
findings and the structure tree.  Right: the hex view over the whole file and a detail
pane for the selection.  The left pane's width follows the terminal's (``+``/``-``
shift it); ``z`` gives the focused pane the whole screen.  Panes post the messages of
``messages.py``; this app routes them (a node selected anywhere -> its bytes
highlighted in the hex view; the hex cursor moved -> the deepest node under it shown
in the detail pane).  Tensor statistics run in a cancellable thread worker that
reports each tensor as it finishes.  State shows as CSS classes on the app:
``-damaged`` when the file did not parse to the end, ``-stats-running`` while the
worker runs.
"""
from __future__ import annotations

import os
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static, TabbedContent, TabPane

from ggscope.tui.first_screen import TAB_LABELS, TABS
from ggscope.tui.format import file_text, plain, short_value, summary_line
from ggscope.tui.hashes import HashesOnDemand
from ggscope.tui.stats_worker import StatsOnDemand
from ggscope.tui.jobs import file_findings, open_path
from ggscope.tui.layout import left_width
from ggscope.tui.messages import CursorMoved, FileLoaded, FindingsReady, NodeSelected, RangeRequested, TensorSelected
from ggscope.tui.shards import ShardView, shard_of, shard_views
from ggscope.tui.widgets.detail import DetailPane
from ggscope.tui.widgets.overview import OverviewPane
from ggscope.ksy.node import deepest_at

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile
    from ggscope.ksy.node import Node

__all__ = ["GGScopeApp", "AUTO_STATS_BYTES", "TABS", "left_width"]

# statistics start by themselves when all tensor data together is at most this big;
# above it (a 20 GB model) the user starts them with `s`.
AUTO_STATS_BYTES = 64 << 20

FOCUS = {"overview": "#overview", "structure": "#tree", "metadata": "#metadata-table",
         "tensors": "#tensor-table", "findings": "#findings-table"}


class GGScopeApp(HashesOnDemand, StatsOnDemand, App):
    """The browser; ``GGScopeApp(path_or_modelfile).run()``."""

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
        Binding("h", "hashes", "Hashes", show=False),     # not in the footer: snapshots stay as they are
        Binding("left_square_bracket", "page(-1)", "Page-"),
        Binding("right_square_bracket", "page(1)", "Page+"),
        Binding("plus", "resize(4)", "Wide"),
        Binding("minus", "resize(-4)", "Narrow"),
        Binding("z", "toggle_maximize", "Zoom"),
        *(Binding(str(i + 1), f"tab('{t}')", t.title(), show=False) for i, t in enumerate(TABS)),
    ]

    def __init__(self, mf: "ModelFile | str | os.PathLike", *, auto_stats: bool | None = None,
                 opening: Future | None = None, peek: Any = None, driver_class: type | None = None) -> None:
        super().__init__(driver_class=driver_class)     # tui.driver after the launcher's pre-frame
        if isinstance(mf, (str, os.PathLike)):
            self.path, self.mf = os.fspath(mf), None
        else:
            self.path, self.mf = mf.path, mf
        self.findings: list = []        # filled by the validator worker
        self._auto_stats = auto_stats
        self.auto_stats = False
        self.stats: dict[str, object] = {}
        self.selected: Node | None = None
        self.last_query = ""
        self.shift = 0                  # +/- moves the pane border by this much
        self.load_error = ""            # why the loader could not open the file
        self.panes_ready = False        # the panes of a parsed file are composed or mounted
        self.shards: tuple[ShardView, ...] = ()     # tui.shards: one view per file shown
        self.shown = 0                  # the index of the shard whose bytes the hex view shows
        self.sub_title = file_text(Path(self.path).name)
        self._opening = opening         # the parse already under way (jobs.start_opening), if any
        self.peek = peek                # the header's facts (model.peek), shown until the parse is done

    # --- layout -----------------------------------------------------------------------
    def _summary(self) -> str:
        return summary_line(self.mf if self.mf is not None else self.peek, Path(self.path).name)

    def compose(self) -> ComposeResult:
        """The window: the summary line, the tabs with the overview, the footer.  The other
        panes need a parsed file; given one (tests, the API) they are composed here,
        otherwise ``_mount_panes`` adds them once the facts are on the screen."""
        yield Static(plain(self._summary()), id="summary")
        panes = self._panes(self.mf) if self.mf is not None else {}
        with Horizontal(id="main"):
            with TabbedContent(id="left", initial="overview"):
                for tab in TABS:
                    with TabPane(TAB_LABELS[tab], id=tab):
                        if tab == "overview":
                            yield OverviewPane(self.path, id="overview")
                        else:
                            yield from panes.get(tab, ())
            with Vertical(id="right"):
                yield from panes.get("hex", ())
        yield Footer()

    def _panes(self, mf: ModelFile) -> dict[str, list]:
        from ggscope.tui.regions import Regions  # lazy: 1 more module only when used
        from ggscope.tui.widgets.hex_view import HexView  # start-up: numpy only when used
        from ggscope.tui.widgets.node_tree import NodeTree  # start-up: textual only when used
        from ggscope.tui.widgets.tables import FindingsTable, MetadataTable, TensorTable  # start-up: numpy, textual only when used
        from textual.widgets import ProgressBar
        self.panes_ready = True         # set before mounting: the actions' widgets exist from here on
        self.shards = shard_views(mf)   # the files whose bytes the hex view and the tree show
        trees = [(v.label, v.mf.root, {**v.meta_by_path, **{p: t.name for p, t in v.tensor_by_path.items()}})
                 for v in self.shards]
        return {
            "metadata": [MetadataTable(mf, id="metadata-table")],
            "tensors": [Vertical(TensorTable(mf, id="tensor-table"),
                                 Horizontal(Static(f"statistics 0/{len(mf.tensors):,}", id="stats-count"),
                                            ProgressBar(total=max(1, len(mf.tensors)), show_eta=False),
                                            id="stats-progress"),
                                 id="tensors-box")],
            "findings": [FindingsTable(self.findings, id="findings-table")],
            "structure": [NodeTree(mf.root, trees[0][2], id="tree", shards=trees)],
            "hex": [HexView(mf.source, Regions.from_tree(mf.root), id="hex"), DetailPane(id="detail")],
        }

    def on_mount(self) -> None:
        self.query_one("#left").styles.width = left_width(self.size.width, self.shift)
        self.query_one("#overview").focus()
        if self.mf is not None:
            self.query_one(OverviewPane).show_file(self.mf)
            self._file_ready()
        elif self.peek is not None:     # the facts are in this frame: parse once it is drawn
            self.query_one(OverviewPane).show_peek(self.peek)
            self._after_window(self.load_file)
        else:
            self.load_file()

    def on_resize(self, event) -> None:
        self.query_one("#left").styles.width = left_width(event.size.width, self.shift)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_file(self) -> None:
        mf, error = self._opening.result() if self._opening is not None else open_path(self.path)
        self.post_message(FileLoaded(mf, error))

    def on_file_loaded(self, message: FileLoaded) -> None:
        if message.mf is None:
            self.load_error = message.error      # printed by run_app once the screen is restored
            self.exit(return_code=2)
            return
        self.mf = message.mf
        self.query_one("#summary", Static).update(plain(self._summary()))   # the first screen's facts,
        self.query_one(OverviewPane).show_file(self.mf)
        self._after_window(self._mount_panes)                            # painted before any other pane

    def _after_window(self, callback, refreshes: int = 20) -> None:
        """Run ``callback`` once the window is complete on the screen - the footer has
        drawn its keys - or after ``refreshes`` screen refreshes, whichever comes first:
        a parse that beat Textual's start-up must not hold the first frames up."""
        keys = self.query_one(Footer).children
        if refreshes <= 0 or (keys and keys[0].region.width):          # laid out: in this frame
            self.call_after_refresh(callback)
        else:
            self.call_after_refresh(self._after_window, callback, refreshes - 1)

    async def _mount_panes(self) -> None:
        """The panes a parsed file fills, mounted once the window and the facts are on the
        screen: the hex view and the detail pane first (they are visible), then the other
        tabs' tables and tree."""
        panes = self._panes(self.mf)
        await self.query_one("#right").mount_all(panes["hex"])
        for tab in ("metadata", "tensors", "findings", "structure"):
            await self.query_one(f"#{tab}", TabPane).mount_all(panes[tab])
        self._file_ready()

    def _file_ready(self) -> None:
        mf = self.mf
        total = sum(t.nbytes for t in mf.tensors)
        self.auto_stats = total <= AUTO_STATS_BYTES if self._auto_stats is None else self._auto_stats
        self.set_class(mf.damage is not None, "-damaged")
        self.refresh_bindings()                 # the file's keys in the footer (check_action)
        given = mf.extra.get("shard_given")
        if isinstance(given, int) and 1 < given <= len(self.shards):
            self._show_shard(given - 1)         # a split model opened through shard N shows shard N's bytes
        if mf.damage is not None:       # after the hex view's first cursor report
            from ggscope.tui.widgets.node_tree import NodeTree  # start-up: textual only when used
            self.call_after_refresh(self.show_node, mf.damage)
            self.call_after_refresh(self.query_one(NodeTree).reveal, mf.damage)
        self.run_validator()
        if self.auto_stats and mf.tensors:
            self.compute_stats()

    # --- routing ------------------------------------------------------------------------
    def _hex(self):
        from ggscope.tui.widgets.hex_view import HexView  # start-up: numpy only when used
        return self.query_one(HexView)

    def _show_shard(self, shard: int) -> Any:
        """The hex view, showing shard ``shard``'s bytes (switched to them if need be)."""
        hexview = self._hex()
        if shard != self.shown and 0 <= shard < len(self.shards):
            from ggscope.tui.regions import Regions  # lazy: 1 more module only when used
            view = self.shards[shard]
            hexview.show_source(view.mf.source, Regions.from_tree(view.mf.root), view.label)
            self.shown = shard
        return hexview

    def show_node(self, node: Node, *, move_cursor: bool = True, finding: Any = None, shard: int = 0) -> None:
        """Highlight ``node``'s bytes (in shard ``shard``'s file) and describe it: a metadata
        entry by its key and whole value, a tensor by its facts and statistics."""
        self.selected = node
        self._show_shard(shard).select_range(node.start, node.end, move_cursor=move_cursor)
        self._describe(node, finding)

    def _describe(self, node: Node, finding: Any = None) -> None:
        detail, view = self.query_one(DetailPane), self.shards[self.shown]
        key = view.meta_by_path.get(node.path)
        t = view.tensor_by_path.get(node.path)
        if key is not None and finding is None:
            detail.show_node(node, key=key, value=view.mf.metadata.get(key),
                             vtype=view.mf.metadata_types.get(key, ""))
        elif t is not None and finding is None:
            detail.show_tensor(t, self.stats.get(t.name), self._stats_note(t), where=view.label)
        else:
            detail.show_node(node, finding=finding)

    def on_node_selected(self, message: NodeSelected) -> None:
        self.show_node(message.node, shard=message.shard)

    def on_tensor_selected(self, message: TensorSelected) -> None:
        from ggscope.ksy.node import find  # lazy: loaded with the tree already
        t = message.tensor
        shard = shard_of(self.shards, t.file.path if t.file is not None else None)
        node = find(self.shards[shard].mf.root, t.node_path) if t.node_path else None
        if node is not None:
            self.show_node(node, shard=shard)
        else:
            self._show_shard(shard).select_range(t.offset, t.offset + t.nbytes)
            self.query_one(DetailPane).show_tensor(t, self.stats.get(t.name), self._stats_note(t),
                                                   where=self.shards[shard].label)

    def on_range_requested(self, message: RangeRequested) -> None:
        if self.mf is None:
            return
        finding = message.finding
        shard = shard_of(self.shards, getattr(finding, "path", None))
        root, start = self.shards[shard].mf.root, message.start
        node = deepest_at(root, start) if start < self.shards[shard].mf.source.size else None
        self._show_shard(shard).select_range(start, message.end)
        if node is not None:
            self.selected = node
            self.query_one(DetailPane).show_node(node, finding=finding)
        if message.label:
            self.notify(file_text(message.label), timeout=2, markup=False)

    def on_cursor_moved(self, message: CursorMoved) -> None:
        node = deepest_at(self.shards[self.shown].mf.root, message.offset)
        self.selected = node
        self._hex().select_range(node.start, node.end, move_cursor=False)
        self._describe(node)

    # --- actions --------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # before the file's panes are up only quitting, tabs, zoom and resizing make sense
        if not self.panes_ready and action not in ("quit", "tab", "resize", "toggle_maximize", "command_palette"):
            return False
        return True

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        widgets = self.query(FOCUS[tab])
        if widgets:
            widget = widgets.first()
            widget.focus()
            if hasattr(widget, "announce"):      # the detail pane follows the tab's cursor
                widget.announce()

    def action_resize(self, delta: int) -> None:
        """Move the border between the panes; the current tab and focus stay."""
        width = self.size.width
        self.shift = max(-width, min(width, self.shift + delta))
        self.query_one("#left").styles.width = left_width(width, self.shift)

    def action_toggle_maximize(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.focused is not None:
            self.screen.maximize(self.focused, container=False)

    def action_page(self, delta: int) -> None:
        self.query_one(DetailPane).turn_page(delta)

    def action_goto(self) -> None:
        from ggscope.tui.search import parse_offset  # start-up: numpy only when used
        from ggscope.tui.screens.prompt import PromptScreen  # start-up: textual's Input only when used

        def done(answer: str | None) -> None:
            if answer is None:
                return
            off = parse_offset(answer, self.shards[self.shown].mf.source.size)   # in the file shown
            if off is None:
                self.notify(f"not an offset in this file: {file_text(answer)}", severity="warning", markup=False)
                return
            hexview = self._hex()
            hexview.focus()
            hexview.set_cursor(off)
        self.push_screen(PromptScreen("Go to offset", "0x1c8, 456, -16 (from the end), end"), done)

    def action_search(self) -> None:
        from ggscope.tui.screens.prompt import PromptScreen  # start-up: textual's Input only when used

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
        from ggscope.tui.search import search  # start-up: numpy only when used
        hit = search(self.mf, self.last_query, after)
        if hit is None:
            self.notify(f"not found: {file_text(self.last_query)}", severity="warning", markup=False)
            return
        start, end, label = hit
        self.post_message(RangeRequested(start, end, label))

    def action_copy(self) -> None:
        node = self.selected
        if node is None:
            return
        view = self.shards[self.shown]
        key = view.meta_by_path.get(node.path)
        value = view.mf.metadata.get(key) if key is not None else node.value
        if isinstance(value, str):
            text = value                       # the text itself, for pasting elsewhere
        else:
            text = short_value(value, 1 << 20) if value is not None else f"{node.start:#x}"
        self.copy_to_clipboard(text)
        self.notify(f"copied {file_text(key) if key is not None else node.path or '/'}", timeout=2, markup=False)

    # --- workers -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="validate", exit_on_error=False)
    def run_validator(self) -> None:
        self.post_message(FindingsReady(file_findings(self.mf)))

    def on_findings_ready(self, message: FindingsReady) -> None:
        from ggscope.tui.widgets.tables import FindingsTable  # start-up: numpy, textual only when used
        rank = {"error": 0, "warning": 1, "info": 2}        # worst first, then by offset
        self.findings = sorted(message.findings, key=lambda f: (
            rank.get(getattr(f.severity, "value", str(f.severity)), 3), f.start is None, f.start or 0))
        self.query_one(FindingsTable).set_findings(self.findings)
        self.query_one(OverviewPane).set_findings(self.findings)
        self.query_one(TabbedContent).get_tab("findings").label = f"4 Findings ({len(message.findings)})"
