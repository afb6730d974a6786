"""``DetailPane``: everything about the current selection.

For a node: path, type, byte range, value and the spec's doc; long arrays are shown a
page at a time (``page``).  For a tensor: its facts, statistics and a histogram
sparkline.  It only formats what it is given.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from ...modelfile import TensorInfo
from ...node import Node
from ..format import human_bytes, short_value

__all__ = ["DetailPane", "histogram_counts", "ARRAY_PAGE"]

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
        self.page = 0

    def compose(self):
        yield Static(id="detail-text")
        yield Sparkline([], id="detail-hist", classes="-hidden")

    def show_node(self, node: Node, page: int = 0) -> None:
        self.node, self.page = node, max(0, page)
        t = Text()
        t.append(node.path or "/", style="bold")
        t.append(f"  {node.ktype}\n", style="cyan")
        if node.end is None:
            t.append(f"at {node.start} ({node.start:#x}): ", style="bold")
            t.append(f"ERROR {node.error}\n", style="bold red")
        else:
            t.append(f"bytes [{node.start:#x}, {node.end:#x})  {human_bytes(node.nbytes)}\n")
        if node.enum:
            t.append(f"enum {node.enum}\n", style="cyan")
        value = node.value
        if value is not None:
            t.append(self._value_text(value))
        if node.doc:
            t.append(f"\n{node.doc.strip()}\n", style="italic")
        self.query_one("#detail-text", Static).update(t)
        self.query_one("#detail-hist", Sparkline).add_class("-hidden")

    def _value_text(self, value: Any) -> str:
        if isinstance(value, (str, bytes, int, float, np.generic, bytearray, memoryview)):
            return f"value {short_value(value, 400)}\n"
        try:
            n = len(value)
        except TypeError:
            return f"value {short_value(value, 400)}\n"
        pages = max(1, -(-n // ARRAY_PAGE))
        self.page = min(self.page, pages - 1)
        lo = self.page * ARRAY_PAGE
        items = value[lo:lo + ARRAY_PAGE]
        lines = [f"{n} items, page {self.page + 1}/{pages} ([ and ] to page)"]
        lines += [f"{lo + i:>8}  {short_value(x, 70)}" for i, x in enumerate(list(items))]
        return "\n".join(lines) + "\n"

    def turn_page(self, delta: int) -> None:
        if self.node is not None:
            self.show_node(self.node, self.page + delta)

    def show_tensor(self, t: TensorInfo, stats: Any, error: str = "") -> None:
        self.node = None
        text = Text()
        text.append(t.name, style="bold")
        text.append(f"  {t.type}  ne={list(t.shape)}\n", style="cyan")
        text.append(f"data [{t.offset:#x}, {t.offset + t.nbytes:#x})  {human_bytes(t.nbytes)}  "
                    f"{t.n_elements} elements\n")
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
