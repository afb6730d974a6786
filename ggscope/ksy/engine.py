"""The interpreter: runs a compiled .ksy spec over a file and builds the Node tree.

Semantics follow Kaitai Struct, with three deliberate additions for hostile input:

* **Damage is a node.**  The first field that cannot be read (too few bytes, a count
  that cannot fit, a contents mismatch, a switch with no matching case and no size, an
  expression that fails) becomes an error node carrying offset, path and a
  ``Damage`` (``damage.py``: the reason as data, worded only for display); everything
  parsed before it stays in the tree.  No exception escapes ``parse``.
* **Counts are checked before loops.**  ``repeat-expr`` counts are compared with the
  bytes left divided by the element type's minimum size before anything is allocated;
  arrays of fixed-size numbers become numpy views on the file (no copy, no objects);
  arrays of length-prefixed strings are scanned in bulk (``scan.py``) into a lazy
  ``StringArray``; arrays of records made of strings, numbers and counted number
  arrays (GGUF tensor infos) are scanned in bulk (``records.py``) into a lazy
  ``RecordArray`` whose element nodes are made on demand.  Zero-size elements are
  capped, so nothing loops without consuming.  The array readers live in ``arrays.py``,
  the run-time state (streams, structures, the stop signal) in ``runtime.py``.
* **Nesting is bounded** (``MAX_DEPTH``), so nested GGUF arrays cannot exhaust the stack.

A switch-on over element types is resolved once per array unless it mentions ``_index``
or ``_``.  Elements of length-prefixed string arrays evaluate to their decoded strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ggscope.core.gcpause import paused
from ggscope.ksy.arrays import MAX_ZERO_SIZE_ELEMENTS, ArrayReader
from ggscope.ksy.damage import Damage
from ggscope.ksy.expr import ExprError
from ggscope.ksy.loader import load_spec
from ggscope.ksy.node import Node
from ggscope.ksy.runtime import Ctx, Fail, KStruct, Stream, join, why
from ggscope.ksy.spec_types import FieldSpec, Spec, TypeRef, TypeSpec
from ggscope.source.mapped import ByteSource

__all__ = ["parse", "parse_spec", "ParseResult", "KStruct", "MAX_DEPTH", "MAX_ZERO_SIZE_ELEMENTS"]

MAX_DEPTH = 64
EAGER_STR_LIMIT = 1 << 24   # longer strings stay raw bytes (a memoryview) until asked for


@dataclass
class ParseResult:
    root: Node
    obj: "KStruct | None"
    error: Node | None


class _Engine(ArrayReader):
    def __init__(self, spec: Spec, source: ByteSource) -> None:
        self.spec = spec
        self.source = source
        self.buf = source.buf
        self.arr = source.array
        self.depth = 0

    # ---- errors -------------------------------------------------------------------
    def fail(self, f: FieldSpec | None, name: str, path: str, ktype: str, start: int, kind: str,
             **data: Any) -> Fail:
        """The stop signal for a field that cannot be read: ``kind`` and ``data`` are the
        ``Damage`` fields (``ksy.damage``)."""
        node = Node(name, path, ktype, start, None, None, f.doc if f else "",
                    f.spec_path if f else "", damage=Damage(kind, path, start, **data))
        return Fail(node, node)

    # ---- types ----------------------------------------------------------------------
    def parse_type(self, t: TypeSpec, io: Stream, parent: KStruct | None, root: KStruct | None,
                   name: str, path: str, args: list[Any], f: FieldSpec | None) -> tuple[KStruct, Node]:
        obj = KStruct(t, parent, root, io, self, path)
        start = obj._start
        doc = (f.doc if f and f.doc else t.doc)
        spec_path = f.spec_path if f else t.spec_path
        if self.depth >= MAX_DEPTH:
            raise self.fail(f, name, path, t.name, start, "too-deep", expected=MAX_DEPTH)
        for pname, value in zip(t.params, args):
            obj._params[pname] = value
        try:
            self._decide_byte_order(t, obj, io, strict=True)
        except (ExprError, ValueError) as exc:
            raise self.fail(f, name, path, t.name, start, "byte-order", detail=str(exc))
        kids: list[Node] = []
        self.depth += 1
        try:
            for fs in t.seq:
                try:
                    value, node = self.read_field(fs, obj, io, path)
                except Fail as exc:
                    if not fs.hidden:
                        kids.append(exc.node)
                    partial = Node(name, path, t.name, start, exc.error.start, None, doc, spec_path, kids)
                    raise Fail(partial, exc.error) from None
                obj._fields[fs.id] = value
                if node is not None and not fs.hidden:
                    kids.append(node)
        finally:
            self.depth -= 1
        end = io.base + io.pos
        inst = [n for n, fs in t.instances.items() if not fs.hidden]
        if inst:
            children = (lambda o=obj, k=kids, names=inst: k + [self.instance(o, n)[1] for n in names])
        else:
            children = kids
        return obj, Node(name, path, t.name, start, end, None, doc, spec_path, children)

    @staticmethod
    def _decide_byte_order(t: TypeSpec, obj: KStruct, io: Stream, strict: bool = False) -> bool:
        """Set ``obj._is_le`` from the type's fixed or calculated byte order (else inherited)."""
        if t.endian is not None:
            obj._is_le = t.endian == "le"
        elif t.endian_switch is not None:
            try:
                on = t.endian_switch(Ctx(obj, io))
            except (ExprError, Fail) as exc:
                if strict:
                    raise ExprError(f"{exc.error.path}: {exc.error.error}" if isinstance(exc, Fail) else str(exc)) from None
                return False
            for key, val in t.endian_cases:
                if key is None or key == on:
                    obj._is_le = val == "le"
                    break
            else:
                if strict:
                    if on is None:
                        raise ValueError(f"the bytes that decide it are missing: the data ends at offset "
                                         f"{io.base + io.size} ({io.base + io.size:#x})")
                    raise ValueError(f"the value it is decided by, {on}, matches none of the spec's cases")
                return False
        return True

    # ---- instances ------------------------------------------------------------------
    def instance(self, obj: KStruct, name: str) -> tuple[Any, Node]:
        hit = obj._inst.get(name)
        if hit is not None:
            return hit
        f = obj._spec.instances[name]
        path = join(obj._path, name)
        if name in obj._busy:
            raise ExprError(f"instance {name} depends on itself")
        obj._busy.add(name)
        try:
            ctx = Ctx(obj, obj._io)
            if f.value is not None:
                try:
                    v = f.value(ctx)
                    node = Node(name, path, "value", obj._start, obj._start, v, f.doc, f.spec_path)
                except (ExprError, Fail, ArithmeticError, TypeError, ValueError) as exc:
                    v = None
                    node = Node(name, path, "value", obj._start, None, None, f.doc, f.spec_path,
                                damage=Damage("unevaluable", path, obj._start, what="compute", **why(exc)))
                result = (v, node)
            else:
                try:
                    io = f.io(ctx) if f.io is not None else obj._io
                    pos = f.pos(ctx) if f.pos is not None else io.pos
                    if not isinstance(io, Stream):
                        raise ExprError("io: does not name a stream")
                except (ExprError, Fail, ArithmeticError, TypeError) as exc:
                    fail_node = Node(name, path, f.tref.name, obj._start, None, None, f.doc, f.spec_path,
                                     damage=Damage("unevaluable", path, obj._start, what="locate", **why(exc)))
                    result = (None, fail_node)
                else:
                    tmp = Stream(io.base, io.size, pos)
                    if not 0 <= pos <= io.size:
                        fail_node = Node(name, path, f.tref.name, io.base + pos, None, None, f.doc, f.spec_path,
                                         damage=Damage("outside-stream", path, io.base + pos, value=pos,
                                                       remaining=io.size, expected=io.base))
                        result = (None, fail_node)
                    else:
                        try:
                            result = self.read_field(f, obj, tmp, obj._path)
                        except Fail as exc:
                            result = (None, exc.node)
            obj._inst[name] = result
            return result
        finally:
            obj._busy.discard(name)

    # ---- fields ---------------------------------------------------------------------
    def read_field(self, f: FieldSpec, obj: KStruct, io: Stream, prefix: str) -> tuple[Any, Node | None]:
        path = join(prefix, f.id)
        ctx = Ctx(obj, io)
        if f.if_expr is not None:
            try:
                if not f.if_expr(ctx):
                    return None, None
            except (ExprError, ArithmeticError, TypeError) as exc:
                raise self.fail(f, f.id, path, f.tref.name, io.base + io.pos, "unevaluable", what="evaluate if", **why(exc))
        if f.repeat is None:
            return self.read_one(f, f.tref, obj, io, f.id, path, ctx)
        return self.read_array(f, obj, io, path, ctx)

    def resolve_switch(self, f: FieldSpec, tref: TypeRef, ctx: Ctx, name: str, path: str, io: Stream) -> TypeRef | None:
        try:
            on = tref.switch_on(ctx)
        except (ExprError, Fail, ArithmeticError, TypeError) as exc:
            raise self.fail(f, name, path, "switch", io.base + io.pos, "unevaluable", what="evaluate switch-on",
                            **why(exc))
        default = None
        for key, r in tref.cases:
            if key is None:
                default = r
            elif key == on:
                return r
        if default is not None:
            return default
        if f.size is not None or f.size_eos:
            return None   # raw bytes, as Kaitai does
        raise self.fail(f, name, path, "switch", io.base + io.pos, "no-case", value=on)

    def _size(self, f: FieldSpec, ctx: Ctx, io: Stream, name: str, path: str, ktype: str) -> int:
        start = io.base + io.pos
        if f.size is not None:
            try:
                n = f.size(ctx)
            except (ExprError, Fail, ArithmeticError, TypeError) as exc:
                raise self.fail(f, name, path, ktype, start, "unevaluable", what="evaluate size", **why(exc))
            if not isinstance(n, (int, np.integer)) or n < 0:
                raise self.fail(f, name, path, ktype, start, "not-a-size", value=n)
            n = int(n)
            if n > io.remaining:
                raise self.fail(f, name, path, ktype, start, "size-past-end", expected=n, remaining=io.remaining)
            return n
        if f.size_eos:
            return io.remaining
        raise self.fail(f, name, path, ktype, start, "no-size")

    def read_one(self, f: FieldSpec, tref: TypeRef, obj: KStruct, io: Stream, name: str, path: str,
                 ctx: Ctx) -> tuple[Any, Node]:
        start = io.base + io.pos
        if tref.kind == "switch":
            r = self.resolve_switch(f, tref, ctx, name, path, io)
            tref = r if r is not None else TypeRef("bytes", name="bytes")
        kind = tref.kind
        if kind == "prim":
            p = tref.prim
            le = (p.endian == "le") if p.endian else (True if p.size == 1 else obj._is_le)
            if le is None:
                raise self.fail(f, name, path, p.name, start, "no-byte-order")
            if p.size > io.remaining:
                raise self.fail(f, name, path, p.name, start, "truncated", expected=p.size,
                                remaining=io.remaining)
            v = p.structs[0 if le else 1].unpack_from(self.buf, start)[0]
            io.pos += p.size
            enum = f.enum.by_value.get(v) if f.enum is not None else None
            return v, Node(name, path, p.name + ("le" if le else "be") if p.size > 1 else p.name,
                           start, start + p.size, v, f.doc, f.spec_path, enum=enum)
        if kind in ("bytes", "str", "strz"):
            if f.contents is not None:
                n = len(f.contents)
                got = self.source.read(start, start + min(n, io.remaining))
                if got != f.contents:
                    raise self.fail(f, name, path, "contents", start, "bad-value", expected=f.contents,
                                    value=bytes(got))
                io.pos += n
                return got, Node(name, path, "contents", start, start + n, got, f.doc, f.spec_path)
            if f.terminator is not None and f.size is None and not f.size_eos:
                end = self.source.find(bytes([f.terminator]), start, io.base + io.size)
                if end < 0:
                    raise self.fail(f, name, path, kind, start, "no-terminator")
                n = end - start + (1 if f.include else 0)
                raw = self.buf[start:start + n]
                io.pos += end - start + (1 if f.consume else 0)
                stop = start + (end - start) + (1 if f.consume else 0)
            else:
                n = self._size(f, ctx, io, name, path, kind)
                raw = self.buf[start:start + n]
                io.pos += n
                stop = start + n
                if f.terminator is not None:
                    cut = bytes(raw).find(bytes([f.terminator]))
                    if cut >= 0:
                        raw = raw[:cut + (1 if f.include else 0)]
            if kind == "bytes":
                return raw, Node(name, path, "bytes", start, stop, raw, f.doc, f.spec_path)
            v = bytes(raw).decode(f.encoding or "utf-8", "surrogateescape") if len(raw) <= EAGER_STR_LIMIT else raw
            return v, Node(name, path, "str", start, stop, v, f.doc, f.spec_path)
        if kind == "user":
            try:
                args = [a(ctx) for a in tref.args]
            except (ExprError, ArithmeticError, TypeError) as exc:
                raise self.fail(f, name, path, tref.name, start, "unevaluable", what="evaluate arguments",
                                **why(exc))
            if f.size is not None or f.size_eos:
                n = self._size(f, ctx, io, name, path, tref.name)
                sub = Stream(start, n)
                child, node = self.parse_type(tref.user, sub, obj, obj._root, name, path, args, f)
                io.pos += n
                node.end = start + n
                return child, node
            return self.parse_type(tref.user, io, obj, obj._root, name, path, args, f)
        raise self.fail(f, name, path, kind, start, "unsupported", value=kind)

    def run(self) -> ParseResult:
        t = self.spec.root
        io = Stream(0, self.source.size)
        try:
            obj, node = self.parse_type(t, io, None, None, "", "", [], None)
            return ParseResult(node, obj, None)
        except Fail as exc:
            root = exc.node
            return ParseResult(root, None, exc.error)


def parse_spec(spec: Spec, source: ByteSource) -> ParseResult:
    """Run ``spec`` over ``source``; never raises for damaged input.  The cyclic garbage
    collector is paused meanwhile: the tree stays alive, and its passes would make
    parsing super-linear in the records (``core.gcpause``)."""
    with paused():
        return _Engine(spec, source).run()


def parse(format_id: str, source: ByteSource) -> ParseResult:
    """Parse ``source`` with ``formats/<format_id>.ksy``."""
    return parse_spec(load_spec(format_id), source)
