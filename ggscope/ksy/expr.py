"""Kaitai Struct's expression language, compiled once to Python closures.

Specs say things like ``(_root.version_probe & 0xffff) == 0`` or
``n_dims > 1 ? dims[1] : 1``.  Each expression string is tokenized and parsed once,
at spec load, into a tree of closures ``f(ctx) -> value``; evaluating it at parse time
is then a few Python calls, not a re-parse.

Supported: integer (dec, 0x, 0o, 0b, ``_`` separators), float, string and boolean
literals, array literals, ``+ - * / % << >> & | ^ ~``, comparisons, ``and or not``,
the ternary ``c ? a : b``, member access, indexing, method calls, enum references
``enum::member`` (resolved to their integer at compile time) and the special names
``_root _parent _io _index _``.  ``/`` on integers truncates toward negative infinity
and ``%`` is non-negative for a positive divisor, as Kaitai defines them.

The context ``ctx`` passed to a compiled expression has ``obj`` (the current struct),
``index`` (``_index``), ``under`` (``_`` in repeat-until) and ``io`` (the current
stream).  Names resolve through ``ctx.obj.attr(name)``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ggscope.core.errors import SpecError

__all__ = ["compile_expr", "ExprError"]

Fn = Callable[[Any], Any]


class ExprError(Exception):
    """An expression could not be evaluated on this file's values (not a spec bug)."""


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<float>\d[\d_]*\.\d[\d_]*(?:[eE][+-]?\d+)?|\d[\d_]*[eE][+-]?\d+)
  | (?P<int>0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*)
  | (?P<str>'[^']*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>::|<<|>>|<=|>=|==|!=|[-+*/%&|^~<>?:.,()\[\]])
""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _tokenize(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SpecError(f"bad character {text[pos]!r} in expression {text!r}")
        pos = m.end()
        kind = m.lastgroup
        tok = m.group()
        if kind == "ws":
            continue
        if kind == "int":
            out.append(("num", int(tok.replace("_", ""), 0)))
        elif kind == "float":
            out.append(("num", float(tok.replace("_", ""))))
        elif kind == "str":
            body = tok[1:-1]
            if tok[0] == '"':
                body = re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(1)), body)
            out.append(("str", body))
        elif kind == "name":
            if tok in ("and", "or", "not"):
                out.append(("op", tok))
            elif tok in ("true", "false"):
                out.append(("bool", tok == "true"))
            else:
                out.append(("name", tok))
        else:
            out.append(("op", tok))
    out.append(("end", None))
    return out


def _int_div(a, b):
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        a, b = int(a), int(b)
        if b == 0:
            raise ExprError("division by zero")
        return a // b
    return a / b


def _mod(a, b):
    if b == 0:
        raise ExprError("modulo by zero")
    return a % b


def _shl(a, b):
    if b > 4096:
        raise ExprError(f"shift by {b}")
    return a << b


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": _int_div, "%": _mod, "<<": _shl, ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "==": lambda a, b: _eq(a, b), "!=": lambda a, b: not _eq(a, b),
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}

# precedence: higher binds tighter (Python's order)
_PREC = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4,
         "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


def _eq(a, b) -> bool:
    if isinstance(a, (bytes, bytearray, memoryview)) or isinstance(b, (bytes, bytearray, memoryview)):
        return bytes(a) == bytes(b)
    r = a == b
    return bool(r) if not hasattr(r, "all") else bool(r.all()) and len(a) == len(b)


def _method(value: Any, name: str, args: list[Any]) -> Any:
    if name in ("size", "length"):
        if hasattr(value, "_io") and not isinstance(value, (str, bytes, list)) and hasattr(value, "attr"):
            raise ExprError(f".{name} of a structure")
        return len(value)
    if name == "to_i":
        if isinstance(value, str):
            return int(value, args[0] if args else 10)
        return int(value)
    if name == "to_s":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).decode(args[0] if args else "utf-8", "surrogateescape")
        return str(value)
    if name == "first":
        return _index(value, 0)
    if name == "last":
        return _index(value, len(value) - 1)
    if name == "min":
        return min(value)
    if name == "max":
        return max(value)
    if name == "reverse":
        return value[::-1]
    if name == "substring":
        return value[args[0]:args[1]]
    if name == "as":
        return value
    raise ExprError(f"unknown method .{name}")


class _Parser:
    def __init__(self, text: str, enum_lookup: Callable[[list[str]], int]) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.enum_lookup = enum_lookup
        self.uses_index = False

    def peek(self) -> tuple[str, Any]:
        return self.toks[self.i]

    def take(self, op: str | None = None) -> tuple[str, Any]:
        tok = self.toks[self.i]
        if op is not None and tok != ("op", op):
            raise SpecError(f"expected {op!r} at token {self.i} in expression {self.text!r}")
        self.i += 1
        return tok

    def parse(self) -> Fn:
        fn = self.ternary()
        if self.peek()[0] != "end":
            raise SpecError(f"trailing tokens in expression {self.text!r}")
        return fn

    def ternary(self) -> Fn:
        cond = self.binary(1)
        if self.peek() == ("op", "?"):
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            chain = _lookup_chain(cond, a, b)
            if chain is not None:
                return chain
            return lambda ctx: a(ctx) if cond(ctx) else b(ctx)
        return cond

    def binary(self, min_prec: int) -> Fn:
        left = self.unary()
        while True:
            kind, op = self.peek()
            prec = _PREC.get(op) if kind == "op" else None
            if prec is None or prec < min_prec:
                return left
            self.take()
            right = self.binary(prec + 1)
            if op == "and":
                left = (lambda l, r: lambda ctx: bool(l(ctx)) and bool(r(ctx)))(left, right)
            elif op == "or":
                left = (lambda l, r: lambda ctx: bool(l(ctx)) or bool(r(ctx)))(left, right)
            else:
                f = _BINARY[op]
                fn = (lambda f, l, r: lambda ctx: f(l(ctx), r(ctx)))(f, left, right)
                if op == "==" and hasattr(left, "_name") and hasattr(right, "_const"):
                    fn = _tag(fn, eq=(left, right._const))
                left = fn

    def unary(self) -> Fn:
        kind, op = self.peek()
        if kind == "op" and op in ("-", "~", "not"):
            self.take()
            inner = self.unary() if op != "not" else self.binary(3)
            if op == "-":
                return lambda ctx: -inner(ctx)
            if op == "~":
                return lambda ctx: ~inner(ctx)
            return lambda ctx: not inner(ctx)
        return self.postfix(self.atom())

    def atom(self) -> Fn:
        kind, val = self.take()
        if kind in ("num", "str", "bool"):
            return _tag(lambda ctx, v=val: v, const=val)
        if kind == "op" and val == "(":
            fn = self.ternary()
            self.take(")")
            return fn
        if kind == "op" and val == "[":
            items: list[Fn] = []
            if self.peek() != ("op", "]"):
                items.append(self.ternary())
                while self.peek() == ("op", ","):
                    self.take()
                    items.append(self.ternary())
            self.take("]")
            return lambda ctx: [f(ctx) for f in items]
        if kind == "name":
            if self.peek() == ("op", "::"):
                parts = [val]
                while self.peek() == ("op", "::"):
                    self.take()
                    parts.append(self.take()[1])
                number = self.enum_lookup(parts)
                return _tag(lambda ctx: number, const=number)
            if val == "_root":
                return lambda ctx: ctx.obj._root
            if val == "_parent":
                return lambda ctx: ctx.obj._parent
            if val == "_io":
                return lambda ctx: ctx.io
            if val == "_index":
                self.uses_index = True
                return lambda ctx: ctx.index
            if val == "_":
                self.uses_index = True
                return lambda ctx: ctx.under
            return _tag(lambda ctx, n=val: ctx.obj.attr(n), name=val)
        raise SpecError(f"unexpected token {val!r} in expression {self.text!r}")

    def postfix(self, fn: Fn) -> Fn:
        while True:
            kind, val = self.peek()
            if kind != "op" or val not in (".", "["):
                return fn
            self.take()
            if val == "[":
                idx = self.ternary()
                self.take("]")
                fn = (lambda f, g: lambda ctx: _index(f(ctx), g(ctx)))(fn, idx)
                continue
            name = self.take()[1]
            if name == "as" and self.peek() == ("op", "<"):
                # cast: .as<type> is the identity at run time
                depth = 0
                while True:
                    k, v = self.take()
                    if v == "<":
                        depth += 1
                    elif v == ">":
                        depth -= 1
                        if depth == 0:
                            break
                    elif k == "end":
                        raise SpecError(f"unterminated .as<> in {self.text!r}")
                continue
            args: list[Fn] = []
            if self.peek() == ("op", "("):
                self.take()
                if self.peek() != ("op", ")"):
                    args.append(self.ternary())
                    while self.peek() == ("op", ","):
                        self.take()
                        args.append(self.ternary())
                self.take(")")
            fn = (lambda f, n, a: lambda ctx: _member(f(ctx), n, [x(ctx) for x in a]))(fn, name, args)


def _tag(fn: Fn, **marks: Any) -> Fn:
    """Remember what a closure is (a constant, a name, ``name == const``) for chain folding."""
    for k, v in marks.items():
        setattr(fn, "_" + k, v)
    return fn


def _lookup_chain(cond: Fn, a: Fn, b: Fn) -> Fn | None:
    """Fold ``x == K1 ? v1 : x == K2 ? v2 : ... : d`` (constants only) into one dict lookup.

    Specs use such chains as tables (a type's block size by its enum value); evaluating
    them as a dict is one call instead of one per case.
    """
    eq = getattr(cond, "_eq", None)
    if eq is None or not hasattr(a, "_const"):
        return None
    lhs, key = eq
    if hasattr(b, "_chain") and b._chain[0]._name == lhs._name:
        table = {key: a._const, **b._chain[1]}
        default = b._chain[2]
    elif hasattr(b, "_const"):
        table, default = {key: a._const}, b._const
    else:
        return None
    if not all(type(k) is int for k in table):
        return None
    get = table.get
    return _tag(lambda ctx: get(lhs(ctx), default), chain=(lhs, table, default))


def _index(value: Any, i: Any) -> Any:
    try:
        v = value[i]
    except (IndexError, KeyError, TypeError) as exc:
        raise ExprError(f"index {i} out of range") from exc
    # numpy scalars would wrap at 64 bits and make `/` a float division: use Python numbers
    return v.item() if isinstance(v, np.generic) else v


def _member(value: Any, name: str, args: list[Any]) -> Any:
    attr = getattr(value, "attr", None)
    if attr is not None and not args:
        return attr(name)
    return _method(value, name, args)


def compile_expr(text: Any, enum_lookup: Callable[[list[str]], int]) -> tuple[Fn, bool]:
    """Compile ``text``; returns the closure and whether it uses ``_index``/``_``."""
    if isinstance(text, bool) or isinstance(text, (int, float)):
        return (lambda ctx, v=text: v), False
    p = _Parser(str(text), enum_lookup)
    return p.parse(), p.uses_index
