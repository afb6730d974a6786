"""``DiffApp``: the diff screen of ``ggscope diff A B --tui``.

Why: the text diff of two quantizations is a long table; here the worst tensors can be
sorted to the top, the unchanged ones hidden, and any row opened to see both files'
fields side by side.  A is the reference, as in ``ggscope.diff.compare``.

Layout: both files' headers side by side, a summary line (tensor counts per status,
metadata counts), tabs "1 Tensors" (name, status, type A→B, shape A→B, max|Δ|, RMSE,
rel RMSE, cosine, SNR dB) and "2 Metadata" (header fields and added / removed /
changed keys, A and B values side by side), and a detail pane for the highlighted
row.  Keys: ``o`` cycles the sort (``widgets.diff_tables.SORTS``), ``f`` hides
identical/equal tensors, ``x`` stops the comparison (rows computed so far stay), ``q``
quits.  Asked with a text (``diff --corpus T [--attribute] --tui``), a tab "3
Attribution" shows the KL-divergence report's headline, each layer's hidden-state
error and cosine against A and the tensors ranked by the KLD their A weights recover
(``widgets.attribution``); the evaluation runs in a worker of its own (``kld``: a
callable taking a progress callback and returning ``forward.perplexity.KLDReport``).

The screen paints at once: every tensor has a *pending* row built from the two
indexes.  A thread worker compares header and metadata first, then each tensor with
``ggscope.diff.compare.diff_tensor`` (bounded memory, cancellation polled per window), and
posts each result as it finishes; the row fills in and the progress bar advances.
State is the CSS class ``-diff-running`` while the worker runs.

Contract: ``run(a, b) -> int`` shows the screen until the user quits and returns the
diff(1)-style status of what was compared, as ``ggscope diff`` does without ``--tui``:
2 when any tensor's data could not be read (or a worker failed), else 1 when a
difference was found (also when the comparison was stopped early; with a text, also
when the report's KL divergence is not 0, as ``diff --corpus`` answers), else 0 when the
comparison finished and found none, and 2 when it was stopped before finishing and
found none (the answer is unknown).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, ProgressBar, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from ggscope.core.errors import GGScopeError
from ggscope.diff import compare as diffmod
from ggscope.diff.compare import DiffCancelled, HeaderChange, MetadataDiff, TensorDiff
from ggscope.model.modelfile import ModelFile
from ggscope.report.diff import STATUS_STYLE, display_status
from ggscope.tui.messages import DiffFinished, DiffRowSelected, KldEvaluated, KldProgressed, MetadataDiffed, TensorDiffed
from ggscope.tui.widgets.attribution import AttributionPane
from ggscope.tui.format import file_text, human_bytes
from ggscope.tui.widgets.diff_detail import DiffDetail
from ggscope.tui.widgets.diff_tables import PENDING, DiffMetadataTable, DiffTensorTable, pending_diffs
from ggscope.model.summary import summarize

__all__ = ["DiffApp", "run"]


class _Stopped(Exception):
    """The --corpus evaluation was cancelled between two chunks."""

TABS = ("tensors", "metadata", "attribution")


def _side(label: str, mf: ModelFile) -> Text:
    s = summarize(mf)
    t = Text()
    t.append(f"{label}  ", style="bold")
    t.append(file_text(Path(mf.path).name), style="bold")
    bpw = f" · {s.bpw:.2f} bpw" if s.bpw is not None else ""
    t.append(f"\n{mf.format} v{mf.version} · {s.file_type or 'file type not stated'} · "
             f"{human_bytes(mf.source.size)}{bpw} · {len(mf.tensors)} tensors")
    if mf.damage is not None:
        t.append(f" · DAMAGED at {mf.damage.start:#x}", style="bold red")
    return t


class DiffApp(App):
    """The diff screen; ``DiffApp(a, b).run()`` then ``exit_status()``."""

    CSS_PATH = "diff.tcss"
    TITLE = "ggscope diff"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("x", "cancel_diff", "Stop"),
        Binding("f", "filter", "Changed only"),
        Binding("o", "sort", "Sort"),
        Binding("1", "tab('tensors')", "Tensors"),
        Binding("2", "tab('metadata')", "Metadata"),
        Binding("3", "tab('attribution')", "Attribution"),
        Binding("z", "toggle_maximize", "Zoom"),
    ]

    def __init__(self, a: ModelFile, b: ModelFile, *, kld: Callable[[Callable[[int, int], None]], Any] | None = None,
                 attribute: bool = False) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.kld, self.attribute = kld, attribute
        self.kld_report: Any = None    # the --corpus report once evaluated
        self.kld_error = ""
        self.diffs: dict[str, TensorDiff] = pending_diffs(a, b)
        self.by_a = diffmod.tensors_by_name(a, b)
        self.by_b = diffmod.tensors_by_name(b, a)
        self.header: tuple[HeaderChange, ...] | None = None
        self.metadata: MetadataDiff | None = None
        self.n_done = 0
        self.finished = False          # the worker compared every tensor
        self.cancelled = False
        self.failed = ""               # the worker's unexpected error, if any
        self.sub_title = f"{file_text(Path(a.path).name)} → {file_text(Path(b.path).name)}"

    # --- layout -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="diff-files"):
            yield Static(_side("A", self.a), id="side-a")
            yield Static(_side("B", self.b), id="side-b")
        yield Static(id="diff-summary")
        with TabbedContent(id="diff-tabs", initial="tensors"):
            with TabPane("1 Tensors", id="tensors"):
                with Vertical():
                    yield Static(id="diff-view")
                    yield DiffTensorTable(self.diffs, id="diff-tensors")
                    yield ProgressBar(total=max(1, len(self.diffs)), id="diff-progress", show_eta=False)
            with TabPane("2 Metadata", id="metadata"):
                yield DiffMetadataTable(id="diff-metadata")
            if self.kld is not None:
                with TabPane("3 Attribution", id="attribution"):
                    yield AttributionPane(self.attribute, id="kld")
        yield DiffDetail(id="diff-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DiffTensorTable).focus()
        self._update_labels()
        self.compare()
        if self.kld is not None:
            self.evaluate_kld()

    # --- the worker ------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="diff", exit_on_error=False)
    def compare(self) -> None:
        worker = get_current_worker()
        self.call_from_thread(self.add_class, "-diff-running")
        cancel = lambda: worker.is_cancelled  # noqa: E731 - polled by ggscope.diff per window
        total = len(self.diffs)
        try:
            self.post_message(MetadataDiffed(diffmod.diff_header(self.a, self.b),
                                             diffmod.diff_metadata(self.a, self.b)))
            for i, td in enumerate(diffmod.iter_tensor_diffs(self.a, self.b, cancel=cancel)):
                self.post_message(TensorDiffed(td, i + 1, total))
        except DiffCancelled:
            self.post_message(DiffFinished(True))
            return
        except Exception as exc:  # noqa: BLE001 - the screen must stay up and say what broke
            self.post_message(DiffFinished(False, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(DiffFinished(worker.is_cancelled))

    @work(thread=True, exclusive=True, group="kld", exit_on_error=False)
    def evaluate_kld(self) -> None:
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:           # the app is closing: stop at the next chunk
                raise _Stopped
            self.post_message(KldProgressed(done, total))
        try:
            self.post_message(KldEvaluated(self.kld(progress)))
        except _Stopped:
            return
        except MemoryError:
            self.post_message(KldEvaluated(None, "not enough memory to hold both files' weights"))
        except Exception as exc:  # noqa: BLE001 - the screen stays up and says why (GGScopeError: its message)
            self.post_message(KldEvaluated(None, str(exc) if isinstance(exc, GGScopeError)
                                           else f"{type(exc).__name__}: {exc}"))

    def on_kld_progressed(self, message: KldProgressed) -> None:
        self.query_one(AttributionPane).show_progress(message.done, message.total)

    def on_kld_evaluated(self, message: KldEvaluated) -> None:
        self.kld_report, self.kld_error = message.report, message.error
        pane = self.query_one(AttributionPane)
        if message.report is not None:
            pane.show_report(message.report)
        else:
            pane.show_error(message.error)

    def on_metadata_diffed(self, message: MetadataDiffed) -> None:
        self.header, self.metadata = message.header, message.metadata
        self.query_one(DiffMetadataTable).set_changes(message.header, message.metadata)
        self._update_labels()

    def on_tensor_diffed(self, message: TensorDiffed) -> None:
        self.diffs[message.diff.name] = message.diff
        self.n_done = message.done
        self.query_one(DiffTensorTable).set_diff(message.diff)
        self.query_one("#diff-progress", ProgressBar).update(total=message.total, progress=message.done)
        self._update_labels()

    def on_diff_finished(self, message: DiffFinished) -> None:
        self.remove_class("-diff-running")
        self.cancelled = message.cancelled
        self.failed = message.error
        self.finished = not message.cancelled and not message.error
        table = self.query_one(DiffTensorTable)
        if table.sort_index:            # rows arrived in file order: sort them now
            table.refill()
        if message.cancelled:
            self.notify("comparison stopped", timeout=2)
        elif message.error:
            self.notify(f"comparison failed: {file_text(message.error)}", severity="error", markup=False)
        self._update_labels()

    # --- routing ----------------------------------------------------------------------
    def on_diff_row_selected(self, message: DiffRowSelected) -> None:
        detail = self.query_one(DiffDetail)
        if message.kind == "tensor":
            td = message.entry
            detail.show_tensor(td, self.by_a.get(td.name), self.by_b.get(td.name))
        else:
            detail.show_metadata(message.change, message.entry)

    # --- actions ----------------------------------------------------------------------
    def action_cancel_diff(self) -> None:
        self.workers.cancel_group(self, "diff")

    def action_filter(self) -> None:
        self.query_one(DiffTensorTable).toggle_filter()
        self._update_labels()

    def action_sort(self) -> None:
        self.query_one(DiffTensorTable).cycle_sort()
        self._update_labels()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return self.kld is not None or parameters != ("attribution",)   # the tab exists with a text

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab == "attribution":
            self.query_one("#kld-tensors").focus()
            return
        table = self.query_one(DiffTensorTable if tab == "tensors" else DiffMetadataTable)
        table.focus()
        if table.row_count:         # show what the cursor is on in the detail pane
            self._announce(table)

    def _announce(self, table: Any) -> None:
        if isinstance(table, DiffTensorTable):
            name = table.current_name()
            if name is not None:
                self.post_message(DiffRowSelected("tensor", self.diffs[name]))
        elif table.entries:
            mark, entry = table.entries[min(table.cursor_row, len(table.entries) - 1)]
            self.post_message(DiffRowSelected("metadata", entry, mark))

    def action_toggle_maximize(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.focused is not None:
            self.screen.maximize(self.focused)

    # --- state --------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Tensors per status among those compared so far, in ``ggscope.diff.compare.STATUSES`` order."""
        out = {s: 0 for s in diffmod.STATUSES}
        for td in self.diffs.values():
            if td.status != PENDING:
                out[td.status] += 1
        return out

    def shown_counts(self) -> dict[str, int]:
        """The same as shown: "moved" apart from "identical", statuses with none left out."""
        out: dict[str, int] = {}
        for td in self.diffs.values():
            if td.status != PENDING:
                shown = display_status(td)
                out[shown] = out.get(shown, 0) + 1
        order = ("changed", "shape-changed", "added", "removed", "error", "moved", "equal", "identical")
        return {s: out[s] for s in order if out.get(s)}

    def _update_labels(self) -> None:
        total = len(self.diffs)
        line = Text()
        state = ("comparing" if self.has_class("-diff-running") else
                 "failed" if self.failed else "stopped" if self.cancelled else
                 "done" if self.finished else "starting")
        line.append(f" tensors {self.n_done}/{total} {state}: ", style="bold")
        for i, (status, n) in enumerate(self.shown_counts().items()):
            line.append(" · " if i else "")
            line.append(f"{n} {status}", style=STATUS_STYLE.get(status, ""))
        if self.metadata is not None:
            m = self.metadata
            line.append("   metadata: ", style="bold")
            line.append(f"+{len(m.added)} -{len(m.removed)} ~{len(m.changed)}")
            if self.header:
                line.append(f"  header: {', '.join(h.field for h in self.header)}", style="yellow")
        self.query_one("#diff-summary", Static).update(line)
        table = self.query_one(DiffTensorTable)
        shown = "identical/equal hidden (f shows them)" if table.changed_only else "all tensors (f hides identical/equal)"
        self.query_one("#diff-view", Static).update(
            Text(f" {table.row_count} rows · {shown} · sort: {table.sort_label} (o)", style="dim"))
        tabs = self.query_one(TabbedContent)
        if self.metadata is not None:
            n = len(self.metadata.added) + len(self.metadata.removed) + len(self.metadata.changed)
            tabs.get_tab("metadata").label = f"2 Metadata ({n + len(self.header or ())})"

    def exit_status(self) -> int:
        """diff(1)'s answer for what was compared; see the module contract."""
        computed = [td for td in self.diffs.values() if td.status != PENDING]
        if self.failed or self.kld_error or any(td.status == "error" for td in computed):
            return 2
        if self.header or (self.metadata is not None and not self.metadata.empty) \
                or any(not td.same for td in computed) \
                or (self.kld_report is not None and not self.kld_report.identical):
            return 1
        return 0 if self.finished else 2


def run(a: ModelFile, b: ModelFile, *, kld: Callable[[Callable[[int, int], None]], Any] | None = None,
        attribute: bool = False) -> int:
    """Show the diff screen until the user quits; the exit status of the module contract."""
    app = DiffApp(a, b, kld=kld, attribute=attribute)
    app.run()
    return app.exit_status()
