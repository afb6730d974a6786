"""The array readers of the spec engine: counts checked first, bulk scans where possible.

Why a module of its own: arrays are where a hostile count meets the engine, and each
kind has its own fast path - fixed-size numbers become numpy views on the file,
length-prefixed strings are scanned in bulk (``scan``) into a lazy ``StringArray``,
records of strings, numbers and counted number arrays (GGUF tensor infos) are scanned
in bulk (``records``) into a lazy ``RecordArray``; anything else is read element by
element.  Contract: a count is compared with the bytes left divided by the element
type's minimum size before anything is allocated, and elements that consume no bytes
are capped (``MAX_ZERO_SIZE_ELEMENTS``; for ``repeat: until``, which stops on parsed
data, one per byte of the stream), so nothing loops without consuming.
``ArrayReader`` is a mixin of ``engine._Engine``: it uses the engine's ``fail``,
``read_one``, ``parse_type``, ``resolve_switch`` and ``_decide_byte_order``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ggscope.ksy.expr import ExprError
from ggscope.ksy.node import LazyChildren, Node
from ggscope.ksy.records import FieldPlan, RecordArray, RecordStop, scan_records
from ggscope.ksy.runtime import Ctx, Fail, KStruct, Stream, why
from ggscope.ksy.scan import ScanStop, StringArray, scan_length_prefixed
from ggscope.ksy.spec_types import FieldSpec, TypeRef, TypeSpec

__all__ = ["ArrayReader", "MAX_ZERO_SIZE_ELEMENTS"]

MAX_ZERO_SIZE_ELEMENTS = 1 << 10   # elements that consume no bytes: the bytes back no count
ELEMENT_CACHE = 1 << 12            # record structures kept at once (memory stays bounded)


class ArrayReader:
    """The ``repeat`` half of the engine (see the module docstring)."""

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
                raise self.fail(f, name, path, tref.name, start, "unevaluable", what="evaluate repeat-expr",
                                **why(exc))
            if not isinstance(n, (int, np.integer)) or n < 0:
                raise self.fail(f, name, path, tref.name, start, "not-a-count", value=n)
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
            raise self.fail(f, name, path, p.name, start, "no-byte-order")
        if n is None:   # eos
            n = io.remaining // p.size
            if io.remaining % p.size:
                raise self.fail(f, name, path, p.name, start + n * p.size, "partial-element",
                                value=io.remaining % p.size, what=p.name)
        if n > io.remaining // p.size:
            raise self.fail(f, name, path, p.name, start, "count-too-large", count=n,
                            what=f"elements of {p.size} bytes", expected=n * p.size, remaining=io.remaining)
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
            raise self.fail(f, name, path, t.name, start, "count-too-large", count=n, what="strings",
                            expected=n * p.size, remaining=io.remaining)
        limit = io.base + io.size
        try:
            lens, end = scan_length_prefixed(self.arr, start, n, p.size, le, limit, tail)
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
            io.pos = start - io.base       # the scan and the element disagree: read one by one
            return None
        io.pos = end - io.base
        value = StringArray(self.arr, start, lens, p.size,
                            (data_f.encoding or "utf-8") if data_f.tref.kind == "str" else None, tail=tail)
        for tf, ofs, tle in tails:         # read block by block: no (n, size) index array
            tp = tf.tref.prim
            col = np.empty(n, dtype=tp.dtypes[0 if tle else 1])
            for lo, hi, starts, ls in value.blocks():
                at = starts + p.size + ls + ofs
                col[lo:hi] = self.arr[at[:, None] + np.arange(tp.size)].view(col.dtype).reshape(hi - lo)
            value.fields[tf.id] = col
        fields = value.fields
        width = p.size
        lktype = p.name + ("le" if le else "be") if p.size > 1 else p.name
        dkind = data_f.tref.kind

        def make(i: int) -> Node:
            s = int(value.offsets(i, i + 1)[0])
            ln = int(value.lens[i])
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
            if hit is None:                  # bounded like LazyChildren: rules read the columns
                if len(cache) >= ELEMENT_CACHE:
                    cache.clear()
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
            raise self.fail(f, name, path, tref.name, start, "count-too-large", count=n,
                            what=f"elements of at least {min_size} bytes", expected=n * min_size,
                            remaining=io.remaining)
        values: list[Any] = []
        kids: list[Node] = []
        i = 0
        zero_run = 0
        # repeat-until probes that read no bytes (GGUF's alignment_search: one per metadata
        # entry) stop at a condition on parsed data; at most one per byte of the stream
        zero_cap = max(MAX_ZERO_SIZE_ELEMENTS, io.size) if f.repeat == "until" else MAX_ZERO_SIZE_ELEMENTS
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
            if zero_run and (f.repeat == "eos" or zero_run > zero_cap
                             or (n is not None and n - i > MAX_ZERO_SIZE_ELEMENTS)):
                # a count of elements that take no bytes is not backed by the file: stop
                # before work or memory grows with it
                raise self.fail(f, name, path, tref.name, io.base + io.pos, "zero-size-elements",
                                count=n, value=i - 1)
            if f.repeat == "until":
                ectx.under = v
                try:
                    if f.repeat_until(ectx):
                        break
                except (ExprError, ArithmeticError, TypeError) as exc:
                    raise self.fail(f, name, path, tref.name, io.base + io.pos,
                                    "unevaluable", what="evaluate repeat-until",
                                    **why(exc))
                if io.pos >= io.size and io.pos != before:
                    raise self.fail(f, name, path, tref.name, io.base + io.pos, "until-unmet")
        end = io.base + io.pos
        return values, Node(name, path, f"{tref.name}[]", start, end, None, f.doc, f.spec_path, kids)

    @staticmethod
    def _min_size(tref: TypeRef) -> int:
        if tref.kind == "prim":
            return tref.prim.size
        if tref.kind == "user":
            return tref.user.min_size
        if tref.kind == "switch":
            sizes = [ArrayReader._min_size(r) for _, r in tref.cases]
            return min(sizes) if sizes else 0
        return 0
