"""The browser's tensor statistics: a cancellable thread worker, one row at a time.

A mixin of ``GGScopeApp`` (as ``hashes.HashesOnDemand``): ``s`` starts the worker, ``x``
cancels it; it posts ``StatsComputed`` per tensor and ``StatsProgressed`` with the
count, and the handlers fill the tensor table's columns, the progress line and the
detail pane when it shows that tensor.  A tensor whose data cannot be read gets its
reason, not a crash.  The app holds ``stats`` (name -> statistics) and ``mf``.
"""
from __future__ import annotations

from textual import work
from textual.widgets import Static
from textual.worker import get_current_worker

from ggscope.tui.messages import StatsComputed, StatsFinished, StatsProgressed
from ggscope.tui.widgets.detail import DetailPane

__all__ = ["StatsOnDemand"]


class StatsOnDemand:
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
            except Exception as exc:  # noqa: BLE001 - damaged data must not kill the app
                stats, err = None, f"no statistics: {exc}"
            self.post_message(StatsComputed(t.name, stats, err))
            self.post_message(StatsProgressed(i + 1, len(tensors)))
        self.post_message(StatsFinished(cancelled))

    def on_stats_computed(self, message: StatsComputed) -> None:
        if message.stats is not None:
            self.stats[message.name] = message.stats
        else:
            self.__dict__.setdefault("_stats_errors", {})[message.name] = message.error
        from ggscope.tui.widgets.tables import TensorTable  # start-up: numpy, textual only when used
        table = self.query_one(TensorTable)
        for i, t in enumerate(self.mf.tensors):
            if t.name == message.name:
                table.set_stats(i, message.stats, message.error)
        detail = self.query_one(DetailPane)
        if detail.tensor is not None and detail.tensor.name == message.name:   # the pane follows its row
            detail.show_tensor(detail.tensor, message.stats, message.error, where=detail.where)

    def on_stats_progressed(self, message: StatsProgressed) -> None:
        self.query_one("#stats-progress ProgressBar").update(total=message.total, progress=message.done)
        self.query_one("#stats-count", Static).update(f"statistics {message.done:,}/{message.total:,}")

    def on_stats_finished(self, message: StatsFinished) -> None:
        self.remove_class("-stats-running")
        if message.cancelled:
            self.notify("statistics cancelled", timeout=2)
