"""``NodeTree``: the parsed structure, expanded lazily.

A node's children become tree nodes only when it is opened (Textual's
``DirectoryTree`` pattern), and arrays are added a page at a time with a "more" leaf,
so a 150k-token vocabulary costs nothing until someone scrolls into it.  Each label
shows the field name, then what a reader looks for -- a metadata entry's key and
value, a tensor's name (``names``: node path -> name, from the ModelFile), a leaf's
value -- and last, dimmed, its offset and size.  Error nodes show the error.  Highlighting a node posts ``NodeSelected``.
A split model's tree has one top-level entry per shard (``shards``: label, root, names),
each that shard's own structure; a highlighted node's ``NodeSelected.shard`` says
whose bytes it describes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ggscope.ksy.node import Node
from ggscope.tui.format import file_text, short_value
from ggscope.tui.messages import NodeSelected

__all__ = ["NodeTree", "PAGE"]

PAGE = 100


@dataclass(frozen=True)
class _More:
    """Placeholder leaf: the children of ``parent`` from ``index`` on are not added yet."""
    parent: Node
    index: int


def _entry_value(node: Node):
    for kid in node.children[:4]:
        if kid.name == "value" and kid.value is not None:
            return kid.value
    return None


def node_label(node: Node, names: dict[str, str] | None = None) -> Text:
    text = Text(f"{node.name or '/'} ", style="bold")
    if node.error:
        text.append(f"@{node.start:#x} ", style="dim")
        text.append(f"ERROR: {file_text(node.error)}", style="bold red")
        return text
    named = (names or {}).get(node.path)
    if named is not None:
        text.append(file_text(named), style="cyan")
        value = _entry_value(node) if node.children else None
        if value is not None:
            text.append(f" = {short_value(value, 40)}", style="green")
    elif node.enum:
        text.append(f"{node.enum}", style="cyan")
    elif node.value is not None and not node.children:
        text.append(f"{short_value(node.value, 40)}", style="green")
    text.append(f"  @{node.start:#x} +{node.nbytes}", style="dim")
    return text


class NodeTree(Tree):
    """The structure tree of one file; see the module docstring."""

    DEFAULT_CSS = "NodeTree { width: 1fr; height: 1fr; }"

    def __init__(self, root: Node, names: dict[str, str] | None = None, *, id: str | None = None,
                 classes: str | None = None, shards: Sequence[tuple[str, Node, dict[str, str]]] = ()) -> None:
        super().__init__(root.name or "file", data=root, id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self.shard_names = [names or {}] if len(shards) < 2 else [n for _, _, n in shards]
        if len(shards) < 2:
            self._add_children(self.root, root, 0)
        else:                      # one entry per shard file, the first one open
            for i, (label, shard_root, _) in enumerate(shards):
                top = self.root.add(Text(label, style="bold magenta"), data=shard_root)
                if i == 0:
                    self._add_children(top, shard_root, 0)
                    top.expand()
        self.root.expand()

    @property
    def names(self) -> dict[str, str]:
        return self.shard_names[0]

    def shard_at(self, tnode: TreeNode) -> int:
        """The index of the shard whose tree ``tnode`` is in (0 for a file not split)."""
        if len(self.shard_names) < 2:
            return 0
        while tnode.parent is not None and tnode.parent is not self.root:
            tnode = tnode.parent
        return self.root.children.index(tnode) if tnode in self.root.children else 0

    def _add_children(self, parent: TreeNode, node: Node, start: int) -> None:
        kids = node.children
        stop = min(len(kids), start + PAGE)
        names = self.shard_names[self.shard_at(parent)] if parent is not self.root else self.names
        for i in range(start, stop):
            kid = kids[i]
            leaf = not kid.children
            parent.add(node_label(kid, names), data=kid, allow_expand=not leaf)
        if stop < len(kids):
            parent.add_leaf(Text(f"… {len(kids) - stop} more (Enter)", style="italic"), data=_More(node, stop))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        tnode = event.node
        if isinstance(tnode.data, Node) and not tnode.children and tnode.data.children:
            self._add_children(tnode, tnode.data, 0)
        event.stop()

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        tnode = event.node
        if isinstance(tnode.data, _More):
            more, parent = tnode.data, tnode.parent
            tnode.remove()
            if parent is not None:
                self._add_children(parent, more.parent, more.index)
        event.stop()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        if isinstance(event.node.data, Node) and self.has_focus:
            self.post_message(NodeSelected(event.node.data, "tree", shard=self.shard_at(event.node)))
        event.stop()

    def reveal(self, target: Node, shard: int = 0) -> None:
        """Expand down to ``target`` (by path, in shard ``shard``'s tree) and move the tree
        cursor onto it."""
        tnode = self.root if len(self.shard_names) < 2 else self.root.children[shard]
        if not tnode.children:
            self._add_children(tnode, tnode.data, 0)
            tnode.expand()
        chain: list[Node] = []
        cur = tnode.data         # walk down from the root along the target's path
        while cur is not None and cur is not target:
            nxt = None
            for kid in _children_containing(cur, target):
                nxt = kid
                break
            if nxt is None:
                break
            chain.append(nxt)
            cur = nxt
        for node in chain:
            if not tnode.is_expanded:
                tnode.expand()
                if not tnode.children and isinstance(tnode.data, Node):
                    self._add_children(tnode, tnode.data, 0)
            found = None
            for child in tnode.children:
                if child.data is node:
                    found = child
                    break
            if found is None:
                break
            tnode = found
        if tnode is not self.root:      # line numbers exist only after the next refresh
            self.call_after_refresh(self.move_cursor, tnode)


def _children_containing(parent: Node, target: Node):
    prefix = target.path
    for kid in parent.children[:PAGE]:
        if kid is target or (prefix.startswith(kid.path) and prefix[len(kid.path):len(kid.path) + 1] in ("/", "[")):
            yield kid
