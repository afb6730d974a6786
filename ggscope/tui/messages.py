"""Every message the browser's widgets and workers post, in one place.

Widgets never reach into each other: they post one of these and the app routes it
(select a node -> the hex view highlights its bytes; move the hex cursor -> the app
finds the deepest node under it).  Bursty messages define ``can_replace`` so a burst
collapses to the newest one (toolong's pattern).  The diff screen's worker posts
``MetadataDiffed`` once, ``TensorDiffed`` per tensor and ``DiffFinished`` at the end;
its tables post ``DiffRowSelected``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:          # the browser must paint before numpy-heavy modules load
    from ggscope.diff.compare import HeaderChange, MetadataDiff, TensorDiff
    from ggscope.ksy.node import Node

__all__ = ["NodeSelected", "TensorSelected", "CursorMoved", "RangeRequested", "StatsProgressed",
           "StatsComputed", "StatsFinished", "FindingsReady", "FileLoaded",
           "MetadataDiffed", "TensorDiffed", "DiffFinished", "DiffRowSelected", "KldProgressed", "KldEvaluated"]


class NodeSelected(Message):
    """A pane selected a node of the tree: show and highlight its bytes; ``shard`` is the
    index of the file the node is in (a split model's shard, ``tui.shards``)."""

    def __init__(self, node: Node, source: str = "", shard: int = 0) -> None:
        super().__init__()
        self.node = node
        self.source = source
        self.shard = shard


class RangeRequested(Message):
    """A pane asked the hex view to show ``[start, end)`` (a finding, a search hit)."""

    def __init__(self, start: int, end: int | None, label: str = "", finding: Any = None) -> None:
        super().__init__()
        self.start = start
        self.end = end
        self.label = label
        self.finding = finding


class CursorMoved(Message):
    """The hex view's cursor moved to ``offset``."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.offset = offset

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CursorMoved)


class StatsProgressed(Message):
    """The statistics worker finished ``done`` of ``total`` tensors."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StatsProgressed)


class TensorSelected(Message):
    """A pane selected a tensor of a later shard of a split model: show its shard's
    bytes and its node in that shard's tree."""

    def __init__(self, tensor: Any) -> None:
        super().__init__()
        self.tensor = tensor


class StatsComputed(Message):
    """Statistics for one tensor: ``stats`` is the mapping of ``TensorInfo.stats()``,
    or None with ``error`` saying why there are none."""

    def __init__(self, name: str, stats: Any, error: str = "") -> None:
        super().__init__()
        self.name = name
        self.stats = stats
        self.error = error


class StatsFinished(Message):
    """The statistics worker stopped: ``cancelled`` tells whether it was cut short."""

    def __init__(self, cancelled: bool) -> None:
        super().__init__()
        self.cancelled = cancelled


class FileLoaded(Message):
    """The loader worker parsed the file: ``mf`` is the ModelFile, or None with
    ``error`` (one paragraph) when the file cannot be read or is no known format."""

    def __init__(self, mf: Any, error: str = "") -> None:
        super().__init__()
        self.mf = mf
        self.error = error


class FindingsReady(Message):
    """The validator worker finished: ``findings`` sorted by offset."""

    def __init__(self, findings: list) -> None:
        super().__init__()
        self.findings = findings


# --- the diff screen (``ggscope diff A B --tui``) ------------------------------

class MetadataDiffed(Message):
    """Header and metadata of the two files were compared."""

    def __init__(self, header: tuple[HeaderChange, ...], metadata: MetadataDiff) -> None:
        super().__init__()
        self.header = header
        self.metadata = metadata


class TensorDiffed(Message):
    """One tensor was compared: ``diff``; ``done`` of ``total`` tensors are finished."""

    def __init__(self, diff: TensorDiff, done: int, total: int) -> None:
        super().__init__()
        self.diff = diff
        self.done = done
        self.total = total


class DiffFinished(Message):
    """The diff worker stopped: ``cancelled`` when cut short, ``error`` when it failed."""

    def __init__(self, cancelled: bool, error: str = "") -> None:
        super().__init__()
        self.cancelled = cancelled
        self.error = error


class DiffRowSelected(Message):
    """A row was highlighted: ``kind`` is "tensor" or "metadata", ``entry`` the domain
    object (a ``TensorDiff``; a ``HeaderChange``, ``MetaEntry`` or ``MetaChange``),
    ``change`` the metadata marker ("+", "-", "~", "header") or ""."""

    def __init__(self, kind: str, entry: Any, change: str = "") -> None:
        super().__init__()
        self.kind = kind
        self.entry = entry
        self.change = change


class KldProgressed(Message):
    """The --corpus evaluation started chunk ``done`` of ``total``."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, KldProgressed)


class KldEvaluated(Message):
    """The --corpus evaluation ended: ``report`` (a ``forward.perplexity.KLDReport``),
    or None with ``error`` saying why there is none."""

    def __init__(self, report: Any, error: str = "") -> None:
        super().__init__()
        self.report = report
        self.error = error
