"""Where a damaged parse stopped, found from the Node tree alone.

Why: view builders receive only the tree, yet ``ModelFile.damage`` must point at the
first error node.  The engine stops at the first field it cannot read and keeps
everything before it, so that node ends the tree.
"""
from __future__ import annotations

from ggscope.ksy.node import LazyChildren, Node

__all__ = ["first_error", "parsed"]


def first_error(root: Node) -> Node | None:
    """The error node of a damaged parse, or None for a complete one.

    At each level follow a child that failed (error set or no end), else the last child;
    lazy arrays are entered at their last element only, so no array is materialised.
    """
    node = root
    while node.error is None:
        kids = node.children
        if not kids:
            return None
        if isinstance(kids, LazyChildren):
            node = kids[-1]
            continue
        failed = [k for k in kids if k.error is not None or k.end is None]
        node = failed[0] if failed else kids[-1]
    return node


def parsed(node: Node | None) -> bool:
    """Whether ``node`` exists and was read without error (it has an end, no error)."""
    return node is not None and node.error is None and node.end is not None
