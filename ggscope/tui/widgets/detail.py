"""``DetailPane``: everything about the current selection.

For a node: path, type, byte range, the value in full and the spec's doc; a metadata
entry shows its key and its whole value (``show_node(node, key=, value=)``); long
strings and arrays are shown a page at a time (``[`` / ``]``).  A finding shows its
whole message above the node it points at.  For a tensor: its facts, statistics and a histogram
sparkline.  It only formats what it is given.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from ggscope.ksy.node import Node
from ggscope.tui.format import file_text, human_bytes, short_value, value_pages
from ggscope.tui.widgets.template_view import template_source, template_text

if TYPE_CHECKING:
    from ggscope.model.modelfile import TensorInfo

__all__ = ["DetailPane", "histogram_counts", "ARRAY_PAGE"]

_NO_VALUE = object()

ARRAY_PAGE = 64


def histogram_counts(hist: Any) -> list[float]:
    """The bin counts of a histogram in any of the shapes stats may give it."""
    if hist is None:
        return []
    if isinstance(hist, Mapping):
        hist = hist.get("counts", hist.get("count", []))
    elif isinstance(hist, tuple) and len(hist) == 2:
        hist = hist[0]
    try:
        import numpy as np
        return [float(x) for x in np.asarray(hist, dtype=np.float64).ravel()]
    except (TypeError, ValueError):
        return []


class DetailPane(VerticalScroll):
    """Shows one node or one tensor; see the module docstring."""

    DEFAULT_CSS = """
    DetailPane Sparkline { height: 4; margin: 1 0; }
    DetailPane Sparkline.-hidden { display: none; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.node: Node | None = None
        self.tensor: "TensorInfo | None" = None     # the tensor whose facts are shown, if any
        self.where = ""
        self.page = 0

    def compose(self):
        yield Static(id="detail-text")
        yield Sparkline([], id="detail-hist", classes="-hidden")

    def show_node(self, node: Node, page: int = 0, *, key: str | None = None, value: Any = _NO_VALUE,
                  vtype: str = "", finding: Any = None) -> None:
        self.node, self.page, self.tensor = node, max(0, page), None
        self._shown = (key, value, vtype, finding)
        t = Text()
        if finding is not None:
            sev = getattr(finding.severity, "value", str(finding.severity))
            t.append(f"{finding.code} {sev}", style="bold red" if sev == "error" else "bold yellow")
            where = f" at offset {finding.start:#x}" if finding.start is not None else ""
            t.append(f"{where}{' in ' + file_text(finding.path) if finding.path else ''}\n", style="bold")
            t.append(f"{file_text(finding.message)}\n\n")
        if key is not None:
            t.append(file_text(key), style="bold")
            t.append(f"  {vtype}\n" if vtype else "\n", style="cyan")
            t.append(f"{node.path}  ", style="dim")
        else:
            t.append(node.path or "/", style="bold")
            t.append(f"  {node.ktype}\n", style="cyan")
        if node.end is None:
            t.append(f"at {node.start} ({node.start:#x}): ", style="bold")
            t.append(f"ERROR {file_text(node.error or '')}\n", style="bold red")
        else:
            t.append(f"bytes [{node.start:#x}, {node.end:#x})  {human_bytes(node.nbytes)}\n",
                     style="dim" if key is not None else "")
        if node.enum:
            t.append(f"enum {node.enum}\n", style="cyan")
        shown = node.value if value is _NO_VALUE else value
        template = template_source(self.app, key, shown, finding)
        if template is not None:
            t.append(template_text(*template))
        elif shown is not None:
            t.append(self._value_text(shown))
        if node.doc and key is None:
            t.append(f"\n{node.doc.strip()}\n", style="italic")
        self.query_one("#detail-text", Static).update(t)
        self.query_one("#detail-hist", Sparkline).add_class("-hidden")

    def _value_text(self, value: Any) -> Text:
        pages = value_pages(value, ARRAY_PAGE)
        self.page = min(self.page, len(pages) - 1)
        out = Text()
        if len(pages) > 1:
            try:
                n = len(value)
            except TypeError:
                n = 0
            what = f"{n:,} characters" if isinstance(value, str) else f"{n:,} items"
            out.append(f"{what}, page {self.page + 1}/{len(pages)} ([ and ] to turn)\n", style="bold")
        out.append("\n".join(pages[self.page]) + "\n")
        return out

    def turn_page(self, delta: int) -> None:
        if self.node is not None:
            key, value, vtype, finding = getattr(self, "_shown", (None, _NO_VALUE, "", None))
            self.show_node(self.node, self.page + delta, key=key, value=value, vtype=vtype, finding=finding)

    def show_tensor(self, t: "TensorInfo", stats: Any, error: str = "", where: str = "") -> None:
        """A tensor's facts and statistics; ``where`` names its file when it is not the
        one the hex view shows (a later shard of a split model)."""
        self.node = None
        self.tensor, self.where = t, where
        text = Text()
        text.append(file_text(t.name), style="bold")
        text.append(f"  {t.type}  ne={list(t.shape)}\n", style="cyan")
        text.append(f"data [{t.offset:#x}, {t.offset + t.nbytes:#x})  {human_bytes(t.nbytes)}  "
                    f"{t.n_elements} elements\n")
        if where:
            text.append(f"in {file_text(where)}\n", style="italic")
        spark = self.query_one("#detail-hist", Sparkline)
        if stats is None:
            text.append(f"statistics: {error or 'not computed yet (press s)'}\n", style="italic")
            spark.add_class("-hidden")
        else:
            get = stats.get if hasattr(stats, "get") else (lambda k, d=None: getattr(stats, k, d))
            for k in ("count", "mean", "std", "min", "max", "abs_mean", "zeros", "nan", "inf"):
                v = get(k)
                if v is not None:
                    text.append(f"{k:>9}  ", style="bold")
                    text.append(f"{short_value(v)}\n")
            counts = histogram_counts(get("histogram"))
            if counts:
                text.append("histogram (min → max)\n", style="bold")
                spark.data = counts
                spark.remove_class("-hidden")
            else:
                spark.add_class("-hidden")
        self.query_one("#detail-text", Static).update(text)
