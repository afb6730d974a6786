"""The interpreter: runs a compiled .ksy spec over a file and builds the Node tree.

Semantics follow Kaitai Struct, with three deliberate additions for hostile input:

* **Damage is a node.**  The first field that cannot be read (too few bytes, a count
  that cannot fit, a contents mismatch, a switch with no matching case and no size, an
  expression that fails) becomes an error node carrying offset, path and reason;
  everything parsed before it stays in the tree.  No exception escapes ``parse``.
* **Counts are checked before loops.**  ``repeat-expr`` counts are compared with the
  bytes left divided by the element type's minimum size before anything is allocated;
  arrays of fixed-size numbers become numpy views on the file (no copy, no objects);
  arrays of length-prefixed strings are scanned in bulk (``scan.py``) into a lazy
  ``StringArray``; arrays of records made of strings, numbers and counted number
  arrays (GGUF tensor infos) are scanned in bulk (``records.py``) into a lazy
  ``RecordArray`` whose element nodes are made on demand.  Zero-size elements are
  capped, so nothing loops without consuming.
* **Nesting is bounded** (``MAX_DEPTH``), so nested GGUF arrays cannot exhaust the stack.

A switch-on over element types is resolved once per array unless it mentions ``_index``
or ``_``.  Elements of length-prefixed string arrays evaluate to their decoded strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ggscope.ksy.node import LazyChildren, Node
from ggscope.source.mapped import ByteSource
from ggscope.ksy.expr import ExprError
from ggscope.ksy.loader import load_spec
from ggscope.ksy.model import FieldSpec, Spec, TypeRef, TypeSpec
from ggscope.ksy.records import FieldPlan, RecordArray, RecordStop, scan_records
from ggscope.ksy.scan import ScanStop, StringArray, scan_length_prefixed

__all__ = ["parse", "parse_spec", "ParseResult", "KStruct", "MAX_DEPTH"]

MAX_DEPTH = 64
MAX_ZERO_SIZE_ELEMENTS = 1 << 10   # elements that consume no bytes: the bytes back no count
EAGER_STR_LIMIT = 1 << 24   # longer strings stay raw bytes (a memoryview) until asked for


@dataclass
class ParseResult:
    root: Node
    obj: "KStruct | None"
    error: Node | None


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
        super().__init__(error.error)
        self.node = node
        self.error = error


class KStruct:
    """A parsed instance of a user type; expressions read it through ``attr``."""

    __slots__ = ("_spec", "_parent", "_root", "_io", "_is_le", "_fields", "_params", "_inst",
                 "_path", "_eng", "_start", "_busy")

    def __init__(self, spec: TypeSpec, parent: "KStruct | None", root: "KStruct | None", io: Stream,
                 eng: "_Engine", path: str) -> None:
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


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


class _Engine:
    def __init__(self, spec: Spec, source: ByteSource) -> None:
        self.spec = spec
        self.source = source
        self.buf = source.buf
        self.arr = source.array
        self.depth = 0

    # ---- errors -------------------------------------------------------------------
    def fail(self, f: FieldSpec | None, name: str, path: str, ktype: str, start: int, reason: str) -> Fail:
        node = Node(name, path, ktype, start, None, None, f.doc if f else "",
                    f.spec_path if f else "", error=reason)
        return Fail(node, node)

    # ---- types ----------------------------------------------------------------------
    def parse_type(self, t: TypeSpec, io: Stream, parent: KStruct | None, root: KStruct | None,
                   name: str, path: str, args: list[Any], f: FieldSpec | None) -> tuple[KStruct, Node]:
        obj = KStruct(t, parent, root, io, self, path)
        start = obj._start
        doc = (f.doc if f and f.doc else t.doc)
        spec_path = f.spec_path if f else t.spec_path
        if self.depth >= MAX_DEPTH:
            raise self.fail(f, name, path, t.name, start, f"nesting deeper than {MAX_DEPTH} levels")
        for pname, value in zip(t.params, args):
            obj._params[pname] = value
        try:
            self._decide_byte_order(t, obj, io, strict=True)
        except (ExprError, ValueError) as exc:
            raise self.fail(f, name, path, t.name, start, f"cannot decide byte order: {exc}")
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
                    raise ExprError(_reason(exc)) from None
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
        path = _join(obj._path, name)
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
                                error=f"cannot compute: {_reason(exc)}")
                result = (v, node)
            else:
                try:
                    io = f.io(ctx) if f.io is not None else obj._io
                    pos = f.pos(ctx) if f.pos is not None else io.pos
                    if not isinstance(io, Stream):
                        raise ExprError("io: does not name a stream")
                except (ExprError, Fail, ArithmeticError, TypeError) as exc:
                    fail_node = Node(name, path, f.tref.name, obj._start, None, None, f.doc, f.spec_path,
                                     error=f"cannot locate: {_reason(exc)}")
                    result = (None, fail_node)
                else:
                    tmp = Stream(io.base, io.size, pos)
                    if not 0 <= pos <= io.size:
                        fail_node = Node(name, path, f.tref.name, io.base + pos, None, None, f.doc, f.spec_path,
                                         error=f"position {pos} is outside its stream of {io.size} bytes "
                                               f"(starting at file offset {io.base})")
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
        path = _join(prefix, f.id)
        ctx = Ctx(obj, io)
        if f.if_expr is not None:
            try:
                if not f.if_expr(ctx):
                    return None, None
            except (ExprError, ArithmeticError, TypeError) as exc:
                raise self.fail(f, f.id, path, f.tref.name, io.base + io.pos, f"cannot evaluate if: {_reason(exc)}")
        if f.repeat is None:
            return self.read_one(f, f.tref, obj, io, f.id, path, ctx)
        return self.read_array(f, obj, io, path, ctx)

    def resolve_switch(self, f: FieldSpec, tref: TypeRef, ctx: Ctx, name: str, path: str, io: Stream) -> TypeRef | None:
        try:
            on = tref.switch_on(ctx)
        except (ExprError, Fail, ArithmeticError, TypeError) as exc:
            raise self.fail(f, name, path, "switch", io.base + io.pos, f"cannot evaluate switch-on: {_reason(exc)}")
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
        enum_name = ""
        raise self.fail(f, name, path, "switch", io.base + io.pos,
                        f"no case of the switch matches {_show(on)}{enum_name}: unknown or invalid type code")

    def _size(self, f: FieldSpec, ctx: Ctx, io: Stream, name: str, path: str, ktype: str) -> int:
        start = io.base + io.pos
        if f.size is not None:
            try:
                n = f.size(ctx)
            except (ExprError, Fail, ArithmeticError, TypeError) as exc:
                raise self.fail(f, name, path, ktype, start, f"cannot evaluate size: {_reason(exc)}")
            if not isinstance(n, (int, np.integer)) or n < 0:
                raise self.fail(f, name, path, ktype, start, f"size {_show(n)} is not a byte count")
            n = int(n)
            if n > io.remaining:
                raise self.fail(f, name, path, ktype, start,
                                f"size {n} runs past the end: only {io.remaining} bytes remain")
            return n
        if f.size_eos:
            return io.remaining
        raise self.fail(f, name, path, ktype, start, "no size given")

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
                raise self.fail(f, name, path, p.name, start, "no byte order known for this field")
            if p.size > io.remaining:
                raise self.fail(f, name, path, p.name, start,
                                f"needs {p.size} bytes, only {io.remaining} remain (truncated)")
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
                    raise self.fail(f, name, path, "contents", start,
                                    f"expected {_show(f.contents)}, found {_show(got)}")
                io.pos += n
                return got, Node(name, path, "contents", start, start + n, got, f.doc, f.spec_path)
            if f.terminator is not None and f.size is None and not f.size_eos:
                end = self.source.find(bytes([f.terminator]), start, io.base + io.size)
                if end < 0:
                    raise self.fail(f, name, path, kind, start, "terminator not found before the end")
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
                raise self.fail(f, name, path, tref.name, start, f"cannot evaluate arguments: {_reason(exc)}")
            if f.size is not None or f.size_eos:
                n = self._size(f, ctx, io, name, path, tref.name)
                sub = Stream(start, n)
                child, node = self.parse_type(tref.user, sub, obj, obj._root, name, path, args, f)
                io.pos += n
                node.end = start + n
                return child, node
            return self.parse_type(tref.user, io, obj, obj._root, name, path, args, f)
        raise self.fail(f, name, path, kind, start, f"unsupported type kind {kind}")

    def read_array(self, f: FieldSpec, obj: KStruct, io: Stream, path: str, ctx: Ctx) -> tuple[Any, Node]:
        start = io.base + io.pos
        name = f.id
        tref = f.tref
        if tref.kind == "switch" and not tref.switch_uses_index:
            r = self.resolve_switch(f, tref, ctx, name, path, io)
            tref = r if r is not None else TypeRef("bytes", name="bytes")
        n: int | None = None
        if f.repeat == "expr":
            try:
                n = f.repeat_expr(ctx)
            except (ExprError, Fail, ArithmeticError, TypeError) as exc:
                raise self.fail(f, name, path, tref.name, start, f"cannot evaluate repeat-expr: {_reason(exc)}")
            if not isinstance(n, (int, np.integer)) or n < 0:
                raise self.fail(f, name, path, tref.name, start, f"element count {_show(n)} is not a count")
            n = int(n)
        if tref.kind == "prim" and f.enum is None and f.repeat != "until":
            return self._prim_array(f, tref, obj, io, name, path, n)
        if (tref.kind == "user" and tref.user.lp_string is not None and f.repeat == "expr"
                and f.size is None and not f.size_eos):
            got = self._lp_array(f, tref, obj, io, name, path, n)
            if got is not None:
                return got
        if (tref.kind == "user" and tref.user.record is not None and f.repeat == "expr"
                and f.size is None and not f.size_eos and n):
            got = self._record_array(f, tref, obj, io, name, path, n)
            if got is not None:
                return got
        return self._loop_array(f, tref, obj, io, name, path, n, ctx)

    def _prim_array(self, f, tref, obj, io, name, path, n):
        start = io.base + io.pos
        p = tref.prim
        le = (p.endian == "le") if p.endian else (True if p.size == 1 else obj._is_le)
        if le is None:
            raise self.fail(f, name, path, p.name, start, "no byte order known for this field")
        if n is None:   # eos
            n = io.remaining // p.size
            if io.remaining % p.size:
                raise self.fail(f, name, path, p.name, start + n * p.size,
                                f"{io.remaining % p.size} trailing bytes do not make a whole {p.name}")
        if n > io.remaining // p.size:
            raise self.fail(f, name, path, p.name, start,
                            f"{n} elements of {p.size} bytes need {n * p.size} bytes, "
                            f"only {io.remaining} remain")
        dtype = p.dtypes[0 if le else 1]
        arr = np.frombuffer(self.buf, dtype=dtype, count=n, offset=start) if n else np.zeros(0, dtype)
        io.pos += n * p.size
        ktype = p.name + ("le" if le else "be") if p.size > 1 else p.name
        size = p.size

        def make(i: int, arr=arr) -> Node:
            s = start + i * size
            return Node(f"[{i}]", f"{path}[{i}]", ktype, s, s + size, arr[i].item(), f.doc, f.spec_path)
        return arr, Node(name, path, f"{ktype}[]", start, start + n * size, arr, f.doc, f.spec_path,
                         LazyChildren(n, make))

    def _lp_array(self, f, tref, obj, io, name, path, n):
        t = tref.user
        len_f, data_f, tail_fs = t.lp_string
        start = io.base + io.pos
        probe = KStruct(t, obj, obj._root, io, self, path)
        if not self._decide_byte_order(t, probe, io):
            return None
        ltref = len_f.tref
        try:
            if ltref.kind == "switch":
                ltref = self.resolve_switch(len_f, ltref, Ctx(probe, io), name, path, io)
        except Fail:
            return None
        if ltref is None or ltref.kind != "prim":
            return None
        p = ltref.prim
        le = (p.endian == "le") if p.endian else probe._is_le
        if le is None:
            return None
        tails = []           # (field, byte offset after the string, little-endian?)
        tail = 0
        for tf in tail_fs:
            if tf.if_expr is not None:
                try:
                    if not tf.if_expr(Ctx(probe, io)):
                        continue
                except (ExprError, ArithmeticError, TypeError):
                    return None
            tp = tf.tref.prim
            tle = (tp.endian == "le") if tp.endian else probe._is_le
            if tle is None:
                return None
            tails.append((tf, tail, tle))
            tail += tp.size
        if n * (p.size + tail) > io.remaining:
            raise self.fail(f, name, path, t.name, start,
                            f"{n} strings need at least {n * p.size} bytes, only {io.remaining} remain")
        limit = io.base + io.size
        try:
            starts, lens, end = scan_length_prefixed(self.arr, start, n, p.size, le, limit, tail)
        except ScanStop as stop:
            # re-read the failing element exactly to report the precise field
            io.pos = stop.offset - io.base
            elem_path = f"{path}[{stop.index}]"
            try:
                self.parse_type(t, io, obj, obj._root, f"[{stop.index}]", elem_path, [], f)
            except Fail as exc:
                partial = Node(name, path, f"{t.name}[]", start, stop.offset, None, f.doc, f.spec_path,
                               [exc.node])
                raise Fail(partial, exc.error) from None
            raise self.fail(f, name, path, t.name, stop.offset, "string does not fit")  # unreachable
        io.pos = end - io.base
        fields = {}
        for tf, ofs, tle in tails:
            tp = tf.tref.prim
            at = starts + p.size + lens + ofs
            raw = self.arr[at[:, None] + np.arange(tp.size)] if n else np.zeros((0, tp.size), np.uint8)
            fields[tf.id] = raw.view(tp.dtypes[0 if tle else 1]).reshape(n)
        value = StringArray(self.arr, starts, lens, p.size,
                            (data_f.encoding or "utf-8") if data_f.tref.kind == "str" else None, fields)
        width = p.size
        lktype = p.name + ("le" if le else "be") if p.size > 1 else p.name
        dkind = data_f.tref.kind

        def make(i: int) -> Node:
            s = int(starts[i])
            ln = int(lens[i])
            ds = s + width
            raw = value[i]
            kids = [Node(len_f.id, f"{path}[{i}]/{len_f.id}", lktype, s, ds, ln, len_f.doc, len_f.spec_path),
                    Node(data_f.id, f"{path}[{i}]/{data_f.id}", dkind, ds, ds + ln, raw, data_f.doc,
                         data_f.spec_path)]
            at = ds + ln
            for tf, ofs, tle in tails:
                tp = tf.tref.prim
                kt = tp.name + ("le" if tle else "be") if tp.size > 1 else tp.name
                v = fields[tf.id][i].item()
                kids.append(Node(tf.id, f"{path}[{i}]/{tf.id}", kt, at + ofs, at + ofs + tp.size, v,
                                 tf.doc, tf.spec_path,
                                 enum=tf.enum.by_value.get(v) if tf.enum is not None else None))
            return Node(f"[{i}]", f"{path}[{i}]", t.name, s, at + tail, None, t.doc, t.spec_path, kids)
        return value, Node(name, path, f"{t.name}[]", start, end, value, f.doc, f.spec_path, LazyChildren(n, make))

    def _record_plan(self, t: TypeSpec, obj: KStruct, io: Stream, path: str) -> list[FieldPlan] | None:
        """How to read each field of every element of an array of record type ``t``
        (byte orders and switches resolved once), or None to read element by element."""
        probe = KStruct(t, obj, obj._root, io, self, path)
        if not self._decide_byte_order(t, probe, io):
            return None
        plan: list[FieldPlan] = []
        ids = [fs.id for fs in t.seq]
        for fs, kind in zip(t.seq, t.record):
            le_default = probe._is_le
            tref = fs.tref
            encoding = None
            if kind == "str":
                st = tref.user
                len_f, data_f, _ = st.lp_string
                sprobe = KStruct(st, probe, obj._root, io, self, path)
                if not self._decide_byte_order(st, sprobe, io):
                    return None
                le_default = sprobe._is_le
                tref = len_f.tref
                encoding = (data_f.encoding or "utf-8") if data_f.tref.kind == "str" else None
                holder, ctx = len_f, Ctx(sprobe, io)
            else:
                holder, ctx = fs, Ctx(probe, io)
            if tref.kind == "switch":
                try:
                    tref = self.resolve_switch(holder, tref, ctx, fs.id, path, io)
                except Fail:
                    return None
                if tref is None or tref.kind != "prim":
                    return None
            p = tref.prim
            le = (p.endian == "le") if p.endian else (True if p.size == 1 else le_default)
            if le is None:
                return None
            count_of = ids.index(fs.repeat_text) if kind == "array" else None
            plan.append(FieldPlan(fs.id, kind, p.size, p.dtypes[0 if le else 1], p.structs[0 if le else 1].unpack_from,
                                  count_of, encoding))
        counted = {pl.count_of for pl in plan if pl.count_of is not None}
        return [FieldPlan(pl.id, pl.kind, pl.size, pl.dtype, pl.unpack, pl.count_of, pl.encoding, j in counted)
                for j, pl in enumerate(plan)]

    def _record_array(self, f, tref, obj, io, name, path, n):
        """An array of records scanned in bulk (``records.py``); None to read it element by element."""
        t = tref.user
        start = io.base + io.pos
        min_size = self._min_size(tref)
        if min_size and n > io.remaining // min_size:
            return None                  # the element loop reports it, with its exact words
        plan = self._record_plan(t, obj, io, path)
        if plan is None:
            return None
        cache: dict[int, tuple[KStruct, Node]] = {}

        def element(i: int, offsets: np.ndarray) -> tuple[KStruct, Node]:
            hit = cache.get(i)
            if hit is None:                  # kept: rules walk every record, often more than once
                sub = Stream(io.base, io.size, int(offsets[i, 0]) - io.base)
                try:
                    hit = cache[i] = self.parse_type(t, sub, obj, obj._root, f"[{i}]", f"{path}[{i}]", [], f)
                except Fail as exc:          # cannot happen for a record the scan accepted
                    raise RuntimeError(f"record {path}[{i}] re-read differently: {exc}") from None
            return hit

        try:
            offsets, end = scan_records(self.buf, start, n, plan, io.base + io.size)
        except RecordStop as stop:
            io.pos = stop.offset - io.base
            try:
                self.read_one(f, tref, obj, io, f"[{stop.index}]", f"{path}[{stop.index}]",
                              Ctx(obj, io, stop.index))
            except Fail as exc:
                done = stop.offsets
                value = RecordArray(self.arr, done, stop.offset, plan, lambda i: element(i, done)[0])
                k = stop.index
                kids = LazyChildren(k + 1, lambda i, bad=exc.node: element(i, done)[1] if i < k else bad)
                partial = Node(name, path, f"{t.name}[]", start, exc.error.start, value, f.doc, f.spec_path, kids)
                raise Fail(partial, exc.error) from None
            io.pos = start - io.base      # the scan and the element disagree: read one by one
            return None
        io.pos = end - io.base
        value = RecordArray(self.arr, offsets, end, plan, lambda i: element(i, offsets)[0])
        return value, Node(name, path, f"{t.name}[]", start, end, value, f.doc, f.spec_path,
                           LazyChildren(n, lambda i: element(i, offsets)[1]))

    def _loop_array(self, f, tref, obj, io, name, path, n, ctx):
        start = io.base + io.pos
        min_size = self._min_size(tref)
        if n is not None and min_size and n > io.remaining // min_size:
            raise self.fail(f, name, path, tref.name, start,
                            f"{n} elements of at least {min_size} bytes need {n * min_size} bytes, "
                            f"only {io.remaining} remain")
        values: list[Any] = []
        kids: list[Node] = []
        i = 0
        zero_run = 0
        while True:
            if n is not None:
                if i >= n:
                    break
            elif f.repeat == "eos" and io.pos >= io.size:
                break
            before = io.pos
            ectx = Ctx(obj, io, i)
            try:
                et = tref
                if et.kind == "switch":
                    r = self.resolve_switch(f, et, ectx, f"[{i}]", f"{path}[{i}]", io)
                    et = r if r is not None else TypeRef("bytes", name="bytes")
                v, node = self.read_one(f, et, obj, io, f"[{i}]", f"{path}[{i}]", ectx)
            except Fail as exc:
                kids.append(exc.node)
                partial = Node(name, path, f"{tref.name}[]", start, exc.error.start, None, f.doc, f.spec_path, kids)
                raise Fail(partial, exc.error) from None
            values.append(v)
            kids.append(node)
            i += 1
            zero_run = zero_run + 1 if io.pos == before else 0
            if zero_run and (f.repeat == "eos" or zero_run > MAX_ZERO_SIZE_ELEMENTS
                             or (n is not None and n - i > MAX_ZERO_SIZE_ELEMENTS)):
                # a count of elements that take no bytes is not backed by the file: stop
                # before work or memory grows with it
                claimed = f"{n} elements" if n is not None else "elements until the end"
                raise self.fail(f, name, path, tref.name, io.base + io.pos,
                                f"{claimed} claimed, but the elements consume no bytes (element "
                                f"[{i - 1}] is empty): expected at least 1 byte per element, so the "
                                f"file's bytes cannot back the count; refusing to loop")
            if f.repeat == "until":
                ectx.under = v
                try:
                    if f.repeat_until(ectx):
                        break
                except (ExprError, ArithmeticError, TypeError) as exc:
                    raise self.fail(f, name, path, tref.name, io.base + io.pos,
                                    f"cannot evaluate repeat-until: {_reason(exc)}")
                if io.pos >= io.size and io.pos != before:
                    raise self.fail(f, name, path, tref.name, io.base + io.pos,
                                    "end of stream reached before repeat-until was satisfied")
        end = io.base + io.pos
        return values, Node(name, path, f"{tref.name}[]", start, end, None, f.doc, f.spec_path, kids)

    @staticmethod
    def _min_size(tref: TypeRef) -> int:
        if tref.kind == "prim":
            return tref.prim.size
        if tref.kind == "user":
            return tref.user.min_size
        if tref.kind == "switch":
            sizes = [_Engine._min_size(r) for _, r in tref.cases]
            return min(sizes) if sizes else 0
        return 0

    def run(self) -> ParseResult:
        t = self.spec.root
        io = Stream(0, self.source.size)
        try:
            obj, node = self.parse_type(t, io, None, None, "", "", [], None)
            return ParseResult(node, obj, None)
        except Fail as exc:
            root = exc.node
            return ParseResult(root, None, exc.error)


def _show(v: Any) -> str:
    """A value inside a finding's sentence: bytes as hex and text, nothing as words."""
    if v is None:
        return "no value (the bytes it comes from are missing)"
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if not b:
            return "no bytes (the data ends here)"
        text = "".join(chr(c) if 0x20 <= c < 0x7F else "." for c in b[:16])
        return f"{b[:16].hex(' ')}{' …' if len(b) > 16 else ''} (\"{text}\")"
    return str(v)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, Fail):
        return f"{exc.error.path}: {exc.error.error}"
    return str(exc) or type(exc).__name__


def parse_spec(spec: Spec, source: ByteSource) -> ParseResult:
    """Run ``spec`` over ``source``; never raises for damaged input."""
    return _Engine(spec, source).run()


def parse(format_id: str, source: ByteSource) -> ParseResult:
    """Parse ``source`` with ``formats/<format_id>.ksy``."""
    return parse_spec(load_spec(format_id), source)
