"""Which kind of region (header, key, value, tensor info, padding, data) each byte is.

The hex view colours bytes by kind.  Kinds come from the top-level nodes of the tree
(and, inside ``metadata_kv``, each entry's key vs. type+value), so any format the spec
engine parses gets colours without format-specific code here.  ``Regions.kind_at`` is a
bisect over the sorted starts: O(log n) per byte, cheap enough for 16 bytes a line.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from ggscope.ksy.node import LazyChildren, Node

__all__ = ["Regions", "KINDS"]

# kind -> component class suffix of HexView; "other" is left uncoloured
KINDS = ("header", "key", "value", "tinfo", "padding", "data", "error", "other")

_TOP = {"magic": "header", "header": "header", "padding": "padding", "data": "data",
        "tensor_infos": "tinfo", "tensors": "data"}


def _kind_of(name: str) -> str:
    if name in _TOP:
        return _TOP[name]
    if "tensor_info" in name or name.startswith("tensor_hdr"):
        return "tinfo"
    if "pad" in name:
        return "padding"
    if "data" in name:
        return "data"
    if "header" in name or name in ("magic", "version"):
        return "header"
    return "other"


class Regions:
    """Sorted, non-overlapping ``[start, end) -> kind`` spans of one file."""

    def __init__(self, spans: Iterable[tuple[int, int, str]]) -> None:
        spans = sorted((s, e, k) for s, e, k in spans if e > s)
        self.starts = [s for s, _, _ in spans]
        self.spans = spans

    def kind_at(self, offset: int) -> str:
        i = bisect_right(self.starts, offset) - 1
        if i >= 0:
            s, e, k = self.spans[i]
            if s <= offset < e:
                return k
        return "other"

    @classmethod
    def from_tree(cls, root: Node, max_entries: int = 100_000) -> "Regions":
        spans: list[tuple[int, int, str]] = []
        for top in root.children:
            if top.end is None:
                spans.append((top.start, top.start + 1, "error"))
                continue
            if top.nbytes == 0:
                continue
            if top.name in ("metadata_kv", "kv", "metadata") and not (
                    isinstance(top.children, LazyChildren) and len(top.children) > max_entries):
                for kv in top.children:
                    for part in kv.children:
                        if part.end is None:
                            spans.append((part.start, part.start + 1, "error"))
                        elif part.nbytes:
                            spans.append((part.start, part.end, "key" if part.name == "key" else "value"))
                continue
            spans.append((top.start, top.end, _kind_of(top.name)))
        return cls(spans)
