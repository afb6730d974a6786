"""A .ksy document compiled into plain objects the engine walks quickly.

Loading resolves everything that does not depend on a file: type references (with
Kaitai's scoping: nested types first, then enclosing types), enum tables, expression
closures, primitive formats, each type's minimum byte size (used to refuse counts that
cannot fit before any loop runs) and whether a type is a *length-prefixed string*
(``[len: uint, data: str/bytes of size len]``), which the engine scans in bulk.  The
compiled objects themselves are defined in ``spec_types`` (re-exported here).
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ggscope.core.errors import SpecError
from ggscope.ksy.expr import compile_expr
from ggscope.ksy.spec_types import PRIMITIVES, EnumSpec, FieldSpec, Spec, TypeRef, TypeSpec, prim

__all__ = ["Spec", "TypeSpec", "FieldSpec", "TypeRef", "compile_spec", "PRIMITIVES"]

_TYPE_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_:]*)\s*(?:\((.*)\))?\s*$")


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


class _Compiler:
    def __init__(self, doc: dict) -> None:
        self.doc = doc
        meta = doc.get("meta", {}) or {}
        self.encoding = meta.get("encoding")

    def enum_lookup(self, scope: TypeSpec) -> Callable[[list[str]], int]:
        def lookup(parts: list[str]) -> int:
            *path, member = parts
            enum_name = path[-1]
            en = scope.lookup_enum(enum_name)
            if en is None or member not in en.by_name:
                raise SpecError(f"unknown enum reference {'::'.join(parts)}")
            return en.by_name[member]
        return lookup

    def expr(self, text: Any, scope: TypeSpec) -> tuple[Callable, bool]:
        return compile_expr(text, self.enum_lookup(scope))

    # -- pass 1: create every TypeSpec so references can be resolved in pass 2
    def declare(self, name: str, raw: dict, parent: TypeSpec | None, path: str) -> TypeSpec:
        t = TypeSpec(name=name, spec_path=path, doc=str(raw.get("doc", "")).strip(), parent=parent, raw=raw)
        for ename, members in (raw.get("enums") or {}).items():
            by_value: dict[int, str] = {}
            for k, v in members.items():
                vname = v["id"] if isinstance(v, dict) else v
                by_value[int(k)] = str(vname)
            t.enums[ename] = EnumSpec(ename, by_value, {v: k for k, v in by_value.items()})
        for tname, traw in (raw.get("types") or {}).items():
            t.types[tname] = self.declare(tname, traw, t, f"{path}/types/{tname}")
        return t

    def resolve(self, t: TypeSpec) -> None:
        raw = t.raw
        meta = raw.get("meta") or {}
        endian = meta.get("endian")
        if isinstance(endian, str):
            t.endian = endian
        elif isinstance(endian, dict):
            t.endian_switch, _ = self.expr(endian["switch-on"], t)
            t.endian_text = str(endian["switch-on"])
            for k, v in endian["cases"].items():
                key = None if k == "_" else self._case_key(k, t)
                t.endian_cases.append((key, v))
        for p in raw.get("params") or []:
            t.params.append(p["id"])
        for i, f in enumerate(raw.get("seq") or []):
            t.seq.append(self.field(f, t, f"{t.spec_path}/seq/{i}", False))
        for iname, f in (raw.get("instances") or {}).items():
            f = dict(f, id=iname)
            t.instances[iname] = self.field(f, t, f"{t.spec_path}/instances/{iname}", True)
        for sub in t.types.values():
            self.resolve(sub)

    def _case_key(self, k: Any, scope: TypeSpec) -> Any:
        if isinstance(k, (bool, int, float)):
            return k
        fn, _ = self.expr(k, scope)

        class _NoCtx:
            obj = io = index = under = None
        try:
            return fn(_NoCtx)
        except Exception as exc:   # a case key must be a constant
            raise SpecError(f"case key {k!r} is not a constant") from exc

    def typeref(self, tval: Any, f: dict, scope: TypeSpec) -> TypeRef:
        if isinstance(tval, dict):
            on, uses_index = self.expr(tval["switch-on"], scope)
            cases = []
            for k, v in tval["cases"].items():
                key = None if k == "_" else self._case_key(k, scope)
                cases.append((key, self.typeref(v, f, scope)))
            return TypeRef("switch", switch_on=on, switch_uses_index=uses_index, cases=cases, name="switch",
                           switch_text=str(tval["switch-on"]))
        if tval is None:
            return TypeRef("bytes", name="bytes")
        tval = str(tval)
        if tval in PRIMITIVES:
            return TypeRef("prim", prim=prim(tval), name=tval)
        if tval in ("str", "strz"):
            return TypeRef(tval, name=tval)
        m = _TYPE_CALL.match(tval)
        if not m:
            raise SpecError(f"bad type {tval!r}")
        name = m.group(1).split("::")[-1]
        user = scope.lookup_type(name)
        if user is None:
            raise SpecError(f"unknown type {tval!r} in {scope.spec_path}")
        args = [self.expr(a, scope)[0] for a in _split_args(m.group(2) or "")]
        return TypeRef("user", user=user, args=args, name=name)

    def field(self, f: dict, scope: TypeSpec, path: str, is_instance: bool) -> FieldSpec:
        fid = f.get("id")
        if fid is None:
            raise SpecError(f"field without id at {path}")
        fs = FieldSpec(id=str(fid), doc=str(f.get("doc", "")).strip(), spec_path=path,
                       tref=self.typeref(f.get("type"), f, scope), is_instance=is_instance)
        if "contents" in f:
            c = f["contents"]
            if isinstance(c, str):
                fs.contents = c.encode("utf-8")
            else:
                fs.contents = bytes(x if isinstance(x, int) else ord(x) for x in c) if all(
                    isinstance(x, int) or len(str(x)) == 1 for x in c) else b"".join(
                    x.to_bytes(1, "little") if isinstance(x, int) else str(x).encode() for x in c)
        if "size" in f:
            fs.size, _ = self.expr(f["size"], scope)
            fs.size_text = str(f["size"]).strip()
        fs.size_eos = bool(f.get("size-eos", False))
        if "enum" in f:
            fs.enum = scope.lookup_enum(str(f["enum"]).split("::")[-1])
            if fs.enum is None:
                raise SpecError(f"unknown enum {f['enum']!r} at {path}")
        fs.encoding = f.get("encoding") or (self.encoding if fs.tref.kind in ("str", "strz") else None)
        if fs.tref.kind == "strz":
            fs.terminator = 0
        if "terminator" in f:
            fs.terminator = int(f["terminator"])
        fs.consume = bool(f.get("consume", True))
        fs.include = bool(f.get("include", False))
        rep = f.get("repeat")
        if rep:
            fs.repeat = rep
            if rep == "expr":
                fs.repeat_expr, _ = self.expr(f["repeat-expr"], scope)
                fs.repeat_text = str(f["repeat-expr"]).strip()
            elif rep == "until":
                fs.repeat_until, _ = self.expr(f["repeat-until"], scope)
            elif rep != "eos":
                raise SpecError(f"unknown repeat {rep!r} at {path}")
        if "if" in f:
            fs.if_expr, _ = self.expr(f["if"], scope)
        if "pos" in f:
            fs.pos, _ = self.expr(f["pos"], scope)
        if "io" in f:
            fs.io, _ = self.expr(f["io"], scope)
        if "value" in f:
            fs.value, _ = self.expr(f["value"], scope)
        fs.hidden = bool(f.get("-ggscope-hidden", False))
        for unsupported in ("process", "valid"):
            if unsupported in f:
                raise SpecError(f"{unsupported!r} is not supported by the ggscope engine ({path})")
        return fs


def _min_size(t: TypeSpec, seen: set[int]) -> int:
    if id(t) in seen:
        return 0
    seen = seen | {id(t)}
    total = 0
    for f in t.seq:
        if f.if_expr is not None or f.repeat is not None:
            continue
        total += _min_tref(f, f.tref, seen)
    return total


def _min_tref(f: FieldSpec, tref: TypeRef, seen: set[int]) -> int:
    if f.contents is not None:
        return len(f.contents)
    if f.size is not None:
        return 0
    if tref.kind == "prim":
        return tref.prim.size
    if tref.kind == "user":
        return _min_size(tref.user, seen)
    if tref.kind == "switch":
        sizes = [_min_tref(f, r, seen) for _, r in tref.cases]
        return min(sizes) if sizes else 0
    if tref.kind == "strz":
        return 1 if f.consume else 0
    return 0


def _lp_string(t: TypeSpec) -> tuple | None:
    """(len field, data field, tail fields) when ``t`` is a length-prefixed string.

    Tail fields are fixed-size numbers after the string (a vocabulary entry's score);
    their ``if``, when present, must not depend on the element (it is evaluated once).
    """
    if t.params or t.instances or len(t.seq) < 2:
        return None
    a, b, *tail = t.seq
    if a.repeat or b.repeat or a.if_expr or b.if_expr or a.contents or b.contents or a.enum:
        return None
    for f in tail:
        if f.repeat or f.contents or f.size is not None or f.tref.kind != "prim":
            return None
    ints = []
    if a.tref.kind == "prim":
        ints = [a.tref.prim]
    elif a.tref.kind == "switch" and not a.tref.switch_uses_index:
        ints = [r.prim for _, r in a.tref.cases if r.kind == "prim"]
        if len(ints) != len(a.tref.cases):
            return None
    if not ints or not all(p.is_int and p.code in "BHIQ" for p in ints):
        return None
    if b.tref.kind not in ("str", "bytes") or b.size_text != a.id or b.terminator is not None:
        return None
    return (a, b, tuple(tail))


_NAME = re.compile(r"(?<![.:\w])([A-Za-z_]\w*)(?!\s*::)")


def _from_root(text: str | None) -> bool:
    """Whether an expression reads nothing but ``_root`` (and constants): its value is the
    same for every element of an array, so it can be evaluated once."""
    if text is None:
        return True
    body = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)
    return all(m.group(1) in ("_root", "true", "false") for m in _NAME.finditer(body))


def _record(t: TypeSpec) -> tuple | None:
    """The field kinds ("str", "prim", "array") when arrays of ``t`` can be scanned in
    bulk (``records.py``): every field a length-prefixed string, a number, or an array of
    numbers counted by an earlier number field, unconditional and unsized, with byte
    orders and switches that read only ``_root``."""
    if t.params or not t.seq or not _from_root(t.endian_text):
        return None
    kinds: list[str] = []
    counts: set[str] = set()
    for f in t.seq:
        if (f.if_expr is not None or f.contents is not None or f.size is not None or f.size_eos
                or f.terminator is not None or f.repeat not in (None, "expr")):
            return None
        tref = f.tref
        if tref.kind == "user":
            st = tref.user
            if (f.repeat or tref.args or st.lp_string is None or st.lp_string[2] or st.params
                    or not _from_root(st.endian_text)):
                return None
            len_ref = st.lp_string[0].tref
            if len_ref.kind == "switch" and not _from_root(len_ref.switch_text):
                return None
            kinds.append("str")
            continue
        prims = [tref.prim] if tref.kind == "prim" else None
        if tref.kind == "switch" and not tref.switch_uses_index and _from_root(tref.switch_text) \
                and all(r.kind == "prim" for _, r in tref.cases):
            prims = [r.prim for _, r in tref.cases]
        if not prims:
            return None
        if f.repeat == "expr":
            if f.repeat_text not in counts:
                return None
            kinds.append("array")
        else:
            kinds.append("prim")
            if all(p.is_int for p in prims):
                counts.add(f.id)
    return tuple(kinds)


def compile_spec(doc: dict) -> Spec:
    meta = doc.get("meta") or {}
    if "id" not in meta:
        raise SpecError("spec has no meta/id")
    c = _Compiler(doc)
    root = c.declare(meta["id"], doc, None, "")
    c.resolve(root)

    def finish(t: TypeSpec) -> None:
        t.min_size = _min_size(t, set())
        t.lp_string = _lp_string(t)
        for sub in t.types.values():
            finish(sub)
    finish(root)

    def finish_records(t: TypeSpec) -> None:    # after every type's lp_string is known
        t.record = _record(t)
        for sub in t.types.values():
            finish_records(sub)
    finish_records(root)
    return Spec(id=meta["id"], root=root, meta=meta, encoding=meta.get("encoding"))
