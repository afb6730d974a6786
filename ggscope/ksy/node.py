"""The annotated byte tree that every consumer of ggscope reads.

One parse of a file yields one tree of `Node`s.  A node is a field of the spec that
described it: its path (``metadata_kv[12]/value``), its Kaitai type, the absolute,
half-open byte range ``[start, end)`` it occupies, its decoded value and the doc text of
the spec.  The validator, the TUI's structure tree and hex view and the JSON output all
read these nodes; nobody re-reads header bytes by hand.

Contract
--------
* ``start``/``end`` are absolute file offsets, half-open.  A node that failed to parse
  (``damage`` is set, a ``ksy.damage.Damage``) has ``end is None``: it says where
  parsing stopped and why - as data in ``damage``, as a sentence for display in
  ``error``.
* ``children`` is a sequence.  For arrays it is lazy: a ``LazyChildren`` that builds a
  child node only when indexed, so a 128k-token vocabulary costs no objects until
  somebody looks at it.
* ``value`` is the decoded value for leaves (int, float, str, bytes-like range), a numpy
  array for arrays of fixed-size numbers, a ``StringArray`` for arrays of
  length-prefixed strings, and ``None`` for structures.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ggscope.ksy.damage import Damage

__all__ = ["Node", "LazyChildren", "walk", "deepest_at", "find"]


class Node:
    """One field of a parsed file.  See the module docstring for the contract."""

    __slots__ = ("name", "path", "ktype", "start", "end", "value", "doc", "spec_path",
                 "damage", "_children", "enum")

    def __init__(self, name: str, path: str, ktype: str, start: int, end: int | None,
                 value: Any = None, doc: str = "", spec_path: str = "",
                 children: Sequence[Node] | Callable[[], Sequence[Node]] = (),
                 damage: "Damage | None" = None, enum: str | None = None) -> None:
        self.name = name
        self.path = path
        self.ktype = ktype
        self.start = start
        self.end = end
        self.value = value
        self.doc = doc
        self.spec_path = spec_path
        self.damage = damage
        self.enum = enum
        self._children = children

    @property
    def children(self) -> Sequence[Node]:
        kids = self._children
        if callable(kids):
            kids = self._children = kids()
        return kids

    @property
    def nbytes(self) -> int:
        return 0 if self.end is None else self.end - self.start

    @property
    def error(self) -> str | None:
        """Why this field failed to parse, in words (display only: decide on ``damage``)."""
        d = self.damage
        return None if d is None else d.sentence

    @property
    def is_error(self) -> bool:
        return self.damage is not None

    def child(self, name: str) -> Node | None:
        for kid in self.children:
            if kid.name == name:
                return kid
        return None

    def __getitem__(self, name: str) -> Node:
        kid = self.child(name)
        if kid is None:
            raise KeyError(f"{self.path or '/'} has no child {name!r}")
        return kid

    def __repr__(self) -> str:
        where = f"[{self.start:#x}, {self.end:#x})" if self.end is not None else f"@{self.start:#x}"
        if self.error:
            return f"<Node {self.path} {where} ERROR {self.error}>"
        return f"<Node {self.path} {self.ktype} {where}>"


class LazyChildren(Sequence):
    """A sequence of array element nodes built on demand by ``make(i)``."""

    __slots__ = ("_n", "_make", "_cache")

    def __init__(self, n: int, make: Callable[[int], Node]) -> None:
        self._n = n
        self._make = make
        self._cache: dict[int, Node] = {}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        node = self._cache.get(i)
        if node is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            node = self._cache[i] = self._make(i)
        return node

    def __iter__(self) -> Iterator[Node]:
        for i in range(self._n):
            yield self[i]


def walk(node: Node, max_array: int | None = None) -> Iterator[Node]:
    """Depth-first pre-order walk; arrays longer than ``max_array`` are cut."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = n.children
        if max_array is not None and isinstance(kids, LazyChildren) and len(kids) > max_array:
            kids = kids[:max_array]
        stack.extend(reversed(kids))


def find(root: Node, path: str) -> Node | None:
    """The node at ``path`` (``a/b[3]/c``), or None."""
    node = root
    for part in filter(None, path.split("/")):
        name, _, idx = part.partition("[")
        nxt = node.child(name)
        if nxt is None:
            return None
        if idx:
            i = int(idx.rstrip("]"))
            kids = nxt.children
            if not 0 <= i < len(kids):
                return None
            nxt = kids[i]
        node = nxt
    return node


def deepest_at(root: Node, offset: int) -> Node:
    """The deepest node whose byte range contains ``offset`` (binary search in arrays)."""
    node = root
    while True:
        kids = node.children
        if not kids:
            return node
        lo, hi = 0, len(kids)
        # children are ordered by start for seq fields and array elements
        while lo < hi:
            mid = (lo + hi) // 2
            if kids[mid].start <= offset:
                lo = mid + 1
            else:
                hi = mid
        hit = None
        for j in (lo - 1,):
            if j >= 0:
                k = kids[j]
                end = k.end if k.end is not None else k.start + 1
                if k.start <= offset < end:
                    hit = k
        if hit is None:
            # instances may sit anywhere: scan the (few) non-array children
            if not isinstance(kids, LazyChildren):
                for k in kids:
                    end = k.end if k.end is not None else k.start + 1
                    if k.start <= offset < end and k.nbytes > 0:
                        hit = k
                        break
        if hit is None or hit is node:
            return node
        node = hit
