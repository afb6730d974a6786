"""The engine's run-time state: streams, contexts, parsed structures and the stop signal.

Why a module of its own: the field readers (``engine``) and the array readers
(``arrays``) both build and read these objects, and neither should import the other's
private parts.  Contract: a ``Stream`` is a window of the file with a relative cursor;
a ``KStruct`` is what expressions see of a parsed type (``attr``); ``Fail`` carries the
partial node to attach and the innermost error node, whose ``damage`` says why.
"""
from __future__ import annotations

from typing import Any

from ggscope.ksy.expr import ExprError
from ggscope.ksy.node import Node
from ggscope.ksy.spec_types import TypeSpec

__all__ = ["Stream", "Ctx", "Fail", "KStruct", "join", "why"]


class Stream:
    """A window [base, base+size) of the file with a cursor ``pos`` relative to base."""

    __slots__ = ("base", "size", "pos")

    def __init__(self, base: int, size: int, pos: int = 0) -> None:
        self.base = base
        self.size = size
        self.pos = pos

    def attr(self, name: str) -> Any:
        if name == "pos":
            return self.pos
        if name == "size":
            return self.size
        if name == "eof":
            return self.pos >= self.size
        raise ExprError(f"_io has no attribute {name}")

    @property
    def remaining(self) -> int:
        return self.size - self.pos


class Ctx:
    __slots__ = ("obj", "io", "index", "under")

    def __init__(self, obj: "KStruct", io: Stream, index: int | None = None, under: Any = None) -> None:
        self.obj = obj
        self.io = io
        self.index = index
        self.under = under


class Fail(Exception):
    """Parsing stopped: ``node`` is the partial node to attach, ``error`` the innermost."""

    def __init__(self, node: Node, error: Node) -> None:
        super().__init__(error.error or "")
        self.node = node
        self.error = error


class KStruct:
    """A parsed instance of a user type; expressions read it through ``attr``."""

    __slots__ = ("_spec", "_parent", "_root", "_io", "_is_le", "_fields", "_params", "_inst",
                 "_path", "_eng", "_start", "_busy")

    def __init__(self, spec: TypeSpec, parent: "KStruct | None", root: "KStruct | None", io: Stream,
                 eng: Any, path: str) -> None:
        self._spec = spec
        self._parent = parent
        self._root = root if root is not None else self
        self._io = io
        self._is_le: bool | None = parent._is_le if parent is not None else None
        self._fields: dict[str, Any] = {}
        self._params: dict[str, Any] = {}
        self._inst: dict[str, tuple[Any, Node]] = {}
        self._path = path
        self._eng = eng
        self._start = io.base + io.pos
        self._busy: set[str] = set()

    def attr(self, name: str) -> Any:
        f = self._fields
        if name in f:
            return f[name]
        if name in self._params:
            return self._params[name]
        if name in self._spec.instances:
            return self._eng.instance(self, name)[0]
        if name == "_io":
            return self._io
        if name == "_parent":
            return self._parent
        if name == "_root":
            return self._root
        if any(fs.id == name for fs in self._spec.seq):
            return None   # declared but not (yet) parsed: Kaitai's null
        raise ExprError(f"{self._spec.name} has no field {name!r}")

    def __getattr__(self, name: str) -> Any:   # convenience for Python callers
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.attr(name)
        except ExprError as exc:
            raise AttributeError(str(exc)) from None

    def __repr__(self) -> str:
        return f"<{self._spec.name} @{self._start:#x}>"


def join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def why(exc: BaseException) -> dict:
    """An expression's failure as ``Damage`` fields: the inner damage, or its words."""
    if isinstance(exc, Fail) and exc.error.damage is not None:
        return {"cause": exc.error.damage}
    return {"detail": str(exc) or type(exc).__name__}
