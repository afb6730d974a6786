"""The compiled form of a .ksy spec: plain objects the engine walks quickly.

Why a module of its own: the compiler (``model``) builds these and the engine
(``engine``, ``arrays``, ``runtime``) reads them; neither needs the other's code.
Contract: ``Spec`` is one compiled document, ``TypeSpec`` one user type with its ``seq``
and ``instances`` (``FieldSpec``), ``TypeRef`` what a field's type resolved to
(a primitive ``Prim``, bytes, a string, a user type or a switch), ``EnumSpec`` an enum
table.  ``TypeSpec.min_size``, ``lp_string`` and ``record`` are filled by the compiler's
shape analysis.  ``prim(name)`` and ``PRIMITIVES``: Kaitai's fixed-size numbers.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Prim", "TypeRef", "FieldSpec", "EnumSpec", "TypeSpec", "Spec", "prim", "PRIMITIVES"]

# name -> (size, struct code, is_float)
_PRIM_BASE = {"u1": (1, "B"), "u2": (2, "H"), "u4": (4, "I"), "u8": (8, "Q"),
              "s1": (1, "b"), "s2": (2, "h"), "s4": (4, "i"), "s8": (8, "q"),
              "f4": (4, "f"), "f8": (8, "d")}
PRIMITIVES = set(_PRIM_BASE) | {n + e for n in _PRIM_BASE for e in ("le", "be")}


@dataclass
class Prim:
    name: str          # "u4"
    size: int
    code: str          # struct code without byte order
    endian: str | None # "le", "be" or None (inherit)
    structs: tuple = ()  # (little Struct, big Struct)
    dtypes: tuple = ()   # numpy dtypes (little, big)

    @property
    def is_int(self) -> bool:
        return self.code not in "fd"


@dataclass
class TypeRef:
    kind: str                      # "prim", "bytes", "str", "strz", "user", "switch"
    prim: Prim | None = None
    user: "TypeSpec | None" = None
    args: list = field(default_factory=list)           # compiled arg closures
    switch_on: Callable | None = None
    switch_uses_index: bool = False
    switch_text: str = ""
    cases: list = field(default_factory=list)         # [(match value or None for default, TypeRef)]
    name: str = ""


@dataclass
class FieldSpec:
    id: str
    doc: str
    spec_path: str
    tref: TypeRef
    is_instance: bool = False
    repeat: str | None = None
    repeat_expr: Callable | None = None
    repeat_text: str | None = None
    repeat_until: Callable | None = None
    if_expr: Callable | None = None
    size: Callable | None = None
    size_text: str | None = None
    size_eos: bool = False
    contents: bytes | None = None
    enum: "EnumSpec | None" = None
    encoding: str | None = None
    terminator: int | None = None
    consume: bool = True
    include: bool = False
    pos: Callable | None = None
    io: Callable | None = None
    value: Callable | None = None
    hidden: bool = False


@dataclass
class EnumSpec:
    name: str
    by_value: dict[int, str]
    by_name: dict[str, int]


@dataclass
class TypeSpec:
    name: str
    spec_path: str
    doc: str = ""
    parent: "TypeSpec | None" = None
    seq: list[FieldSpec] = field(default_factory=list)
    instances: dict[str, FieldSpec] = field(default_factory=dict)
    types: dict[str, "TypeSpec"] = field(default_factory=dict)
    enums: dict[str, EnumSpec] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    endian: str | None = None             # "le", "be" or None
    endian_switch: Callable | None = None
    endian_cases: list = field(default_factory=list)
    endian_text: str | None = None
    min_size: int = 0
    lp_string: tuple | None = None        # (len field, data field) when a length-prefixed string
    record: tuple | None = None           # field kinds when arrays of it can be scanned in bulk
    raw: dict = field(default_factory=dict)

    def lookup_type(self, name: str) -> "TypeSpec | None":
        t: TypeSpec | None = self
        while t is not None:
            if name in t.types:
                return t.types[name]
            t = t.parent
        return None

    def lookup_enum(self, name: str) -> EnumSpec | None:
        t: TypeSpec | None = self
        while t is not None:
            if name in t.enums:
                return t.enums[name]
            t = t.parent
        return None


@dataclass
class Spec:
    id: str
    root: TypeSpec
    meta: dict[str, Any]
    encoding: str | None


def prim(name: str) -> Prim:
    base, endian = (name[:-2], name[-2:]) if name[-2:] in ("le", "be") and len(name) > 2 else (name, None)
    size, code = _PRIM_BASE[base]
    import numpy as np
    return Prim(base, size, code, endian,
                (struct.Struct("<" + code), struct.Struct(">" + code)),
                (np.dtype("<" + code), np.dtype(">" + code)))
