"""Parsing the go-to and search prompts, and finding the next hit.

``parse_offset("0x1c8")``, ``"456"``, ``"-16"`` (from the end), ``"end"``.  ``search``
looks, in order, for a metadata key, a tensor name and then bytes in the file after
``after``: ``x:47 47 55 46`` is hex bytes, anything else ASCII.  It returns
``(start, end, label)`` or None; byte search uses the mmap's find, never a copy.
"""
from __future__ import annotations

from ggscope.model.modelfile import ModelFile
from ggscope.ksy.node import find

__all__ = ["parse_offset", "search"]


def parse_offset(text: str, size: int) -> int | None:
    text = text.strip().lower().replace("_", "")
    if text in ("end", "$"):
        return max(size - 1, 0)
    try:
        value = int(text, 0)
    except ValueError:
        try:
            value = int(text, 16)
        except ValueError:
            return None
    if value < 0:
        value += size
    return value if 0 <= value < max(size, 1) else None


def search(mf: ModelFile, query: str, after: int = -1) -> tuple[int, int, str] | None:
    q = query.strip()
    if not q:
        return None
    if not q.lower().startswith("x:"):
        for key, path in mf.metadata_nodes.items():
            if q.lower() in key.lower():
                node = find(mf.root, path)
                if node is not None and node.start > after:
                    return node.start, node.end or node.start + 1, f"key {key}"
        for t in mf.tensors:
            if q.lower() in t.name.lower():
                node = find(mf.root, t.node_path) if t.node_path else None
                if node is not None and node.start > after:
                    return node.start, node.end or node.start + 1, f"tensor {t.name}"
        needle = q.encode("utf-8")
    else:
        try:
            needle = bytes.fromhex(q[2:].replace(" ", ""))
        except ValueError:
            return None
    if not needle:
        return None
    hit = mf.source.find(needle, after + 1, mf.source.size)
    if hit < 0 and after >= 0:
        hit = mf.source.find(needle, 0, mf.source.size)
    if hit < 0:
        return None
    return hit, hit + len(needle), f"bytes at {hit:#x}"
