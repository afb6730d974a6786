"""Constant folding over a Jinja2 syntax tree: the strings a template builds at render time.

Why: a sandbox escape needs an attribute name such as ``__globals__``; a template that
hides it builds it while rendering - ``'__gl' ~ 'obals__'``, ``['__','globals','__'] |
join``, ``'%s%s%s' | format(...)``, ``'__GLOBALS__' | lower``, ``'__slabolg__'[::-1]``,
``dict(__globals__=1) | first``, ``'\\x5f\\x5f...'`` (escapes: Jinja2's parser already
decodes them into the constant) - often through ``{% set %}`` chains.  Folding those
expressions with Jinja2's semantics recovers the name without rendering anything.

Contract: ``Folder.value(node)`` returns the value an expression would have when it is
determined by the template text alone (str, int, float, bool, None, list, tuple, dict),
else ``UNKNOWN``.  ``Folder.bind`` records ``{% set %}`` targets (names and namespace
attributes ``ns.attr``).  Folding is bounded: no string longer than ``MAX_FOLD`` chars,
no number with more than ``MAX_DIGITS`` digits, no format width past ``MAX_FOLD`` - a
hostile expression is left UNKNOWN (the unbounded-work checks report it), never computed.
"""
from __future__ import annotations

import re

import jinja2.nodes as n

__all__ = ["UNKNOWN", "Folder", "MAX_FOLD"]

UNKNOWN = object()
MAX_FOLD = 4096          # longest string folded
MAX_DIGITS = 64          # largest integer folded (digits)
_WIDTH = re.compile(r"%[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")

_STR_FILTERS = {
    "lower": str.lower, "upper": str.upper, "title": str.title, "capitalize": str.capitalize,
    "trim": str.strip, "string": str, "reverse": lambda s: s[::-1],
}
_STR_METHODS = {"lower", "upper", "title", "capitalize", "strip", "lstrip", "rstrip", "swapcase",
                "replace", "join", "removeprefix", "removesuffix", "format"}


def _small(v):
    if isinstance(v, str) and len(v) > MAX_FOLD:
        return UNKNOWN
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10 ** MAX_DIGITS:
        return UNKNOWN
    if isinstance(v, (list, tuple)) and len(v) > MAX_FOLD:
        return UNKNOWN
    return v


def _percent(fmt: str, args):
    """Python's ``%`` formatting (Jinja2's ``format`` filter) when no width is large."""
    for m in _WIDTH.finditer(fmt):
        for w in m.groups():
            if w is not None and (w == "*" or int(w) > MAX_FOLD):
                return UNKNOWN
    try:
        return _small(fmt % args)
    except (TypeError, ValueError, KeyError, OverflowError):
        return UNKNOWN


class Folder:
    def __init__(self) -> None:
        self.scope: dict[str, object] = {}

    def bind(self, target: n.Node, value) -> None:
        """``{% set target = value %}``: a name, ``ns.attr`` or a tuple of them."""
        if isinstance(target, n.Name):
            self._set(target.name, value)
        elif isinstance(target, n.NSRef):
            self._set(f"{target.name}.{target.attr}", value)
        elif isinstance(target, n.Tuple):
            vals = value if isinstance(value, (list, tuple)) and len(value) == len(target.items) else None
            for i, t in enumerate(target.items):
                self.bind(t, vals[i] if vals is not None else UNKNOWN)

    def _set(self, key: str, value) -> None:
        # a name assigned twice with different values is not one constant
        if key in self.scope and self.scope[key] is not value and self.scope[key] != value:
            self.scope[key] = UNKNOWN
        else:
            self.scope[key] = value

    def bind_namespace(self, name: str, call: n.Call) -> None:
        for kw in call.kwargs:
            self._set(f"{name}.{kw.key}", self.value(kw.value))

    def value(self, node: n.Node):   # noqa: C901 - one dispatch over Jinja2's expression nodes
        try:
            return self._value(node)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError, RecursionError):
            return UNKNOWN

    def _value(self, node):
        v = self.value
        if isinstance(node, n.Const):
            return _small(node.value)
        if isinstance(node, n.Name):
            return self.scope.get(node.name, UNKNOWN)
        if isinstance(node, n.Getattr) and isinstance(node.node, n.Name):
            return self.scope.get(f"{node.node.name}.{node.attr}", UNKNOWN)
        if isinstance(node, (n.List, n.Tuple)):
            items = [v(i) for i in node.items]
            return UNKNOWN if any(i is UNKNOWN for i in items) else _small(items)
        if isinstance(node, n.Dict):
            out = {}
            for pair in node.items:
                k, val = v(pair.key), v(pair.value)
                if k is UNKNOWN:
                    return UNKNOWN
                out[k] = val
            return out
        if isinstance(node, n.Concat):
            parts = [v(i) for i in node.nodes]
            return UNKNOWN if any(p is UNKNOWN for p in parts) else _small("".join(map(str, parts)))
        if isinstance(node, n.CondExpr):
            a, b = v(node.expr1), v(node.expr2) if node.expr2 is not None else UNKNOWN
            return a if a is not UNKNOWN and a == b else UNKNOWN
        if isinstance(node, n.BinExpr):
            return self._binary(node)
        if isinstance(node, (n.Neg, n.Pos)):
            x = v(node.node)
            return UNKNOWN if not isinstance(x, (int, float)) else (-x if isinstance(node, n.Neg) else x)
        if isinstance(node, n.Getitem):
            return self._item(node)
        if isinstance(node, n.Filter):
            return self._filter(node)
        if isinstance(node, n.Call):
            return self._call(node)
        return UNKNOWN

    def _binary(self, node):
        a, b = self.value(node.left), self.value(node.right)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        if isinstance(node, n.Add):
            return _small(a + b)
        if isinstance(node, n.Mod) and isinstance(a, str):
            return _percent(a, tuple(b) if isinstance(b, list) else b)
        if isinstance(node, n.Mul):
            count = b if isinstance(a, (str, list)) else a if isinstance(b, (str, list)) else None
            if count is not None and isinstance(count, int) and count > MAX_FOLD:
                return UNKNOWN
            return _small(a * b)
        if isinstance(node, n.Sub):
            return _small(a - b)
        if isinstance(node, n.Pow) and isinstance(a, (int, float)) and isinstance(b, int) and 0 <= b:
            if abs(a) > 1 and b * len(str(int(abs(a)))) > MAX_DIGITS:
                return UNKNOWN
            return _small(a ** b)
        if isinstance(node, (n.Div, n.FloorDiv)) and b:
            return _small(a / b if isinstance(node, n.Div) else a // b)
        return UNKNOWN

    def _item(self, node):
        obj = self.value(node.node)
        if obj is UNKNOWN:
            return UNKNOWN
        if isinstance(node.arg, n.Slice):
            parts = [self.value(p) if p is not None else None
                     for p in (node.arg.start, node.arg.stop, node.arg.step)]
            if any(p is UNKNOWN for p in parts):
                return UNKNOWN
            return obj[slice(*parts)]
        key = self.value(node.arg)
        return UNKNOWN if key is UNKNOWN else obj[key]

    def _filter(self, node):
        name = node.name
        base = self.value(node.node) if node.node is not None else UNKNOWN
        args = [self.value(a) for a in node.args]
        if base is UNKNOWN or any(a is UNKNOWN for a in args) or node.dyn_args or node.dyn_kwargs:
            return UNKNOWN
        if name in _STR_FILTERS and isinstance(base, str):
            return _STR_FILTERS[name](base)
        if name == "join":
            sep = args[0] if args else ""
            items = list(base.keys()) if isinstance(base, dict) else base
            return _small(str(sep).join(map(str, items)))
        if name == "format" and isinstance(base, str):
            return _percent(base, tuple(args))
        if name == "replace" and isinstance(base, str) and len(args) >= 2:
            return _small(base.replace(str(args[0]), str(args[1])))
        if name in ("list", "first", "last", "reverse", "sort", "unique"):
            seq = list(base.keys()) if isinstance(base, dict) else list(base)
            return {"list": seq, "first": seq[0] if seq else UNKNOWN, "last": seq[-1] if seq else UNKNOWN,
                    "reverse": seq[::-1], "sort": sorted(seq), "unique": list(dict.fromkeys(seq))}[name]
        return UNKNOWN

    def _call(self, node):
        if isinstance(node.node, n.Name) and node.node.name == "dict" and not node.args:
            return {kw.key: self.value(kw.value) for kw in node.kwargs}
        if isinstance(node.node, n.Getattr) and node.node.attr in _STR_METHODS:
            base = self.value(node.node.node)
            args = [self.value(a) for a in node.args]
            if isinstance(base, str) and not any(a is UNKNOWN for a in args) and not node.kwargs:
                if node.node.attr == "join":
                    return _small(base.join(map(str, args[0]))) if args else UNKNOWN
                if node.node.attr == "format":
                    if re.search(r"\d{5,}|\{[^}]*[.\[]", base) or not all(isinstance(a, (str, int)) for a in args):
                        return UNKNOWN       # a huge width, or an attribute field: not folded
                    return _small(base.format(*args))
                return _small(getattr(base, node.node.attr)(*args))
        return UNKNOWN
