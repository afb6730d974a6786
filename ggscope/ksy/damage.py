"""Damage as data: why a parse stopped, in fields a program reads.

Why: the engine's consumers decide things from damage - the remote opener whether more
bytes could help and how many (``model.open``), the structure rules which rule owns it
(``rules.damage``).  They read these fields; the English sentence is made from them
only for display (``Damage.sentence``, shown as ``Node.error``), so rewording a message
changes no verdict.

Contract: one frozen ``Damage`` per error node.  ``kind`` is one of ``KINDS``;
``field`` the node path; ``offset`` where the field starts; for the kinds in
``NEEDS_BYTES``, ``expected`` is the bytes the field needs from ``offset`` and
``remaining`` the bytes its stream still had.  ``cause`` is the inner damage when an
expression failed because another field did.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

__all__ = ["Damage", "KINDS", "NEEDS_BYTES", "show"]

# kind -> what happened (the catalogue; ``sentence`` words each)
KINDS = {
    "truncated": "a fixed-size field needs more bytes than remain",
    "count-too-large": "an element count needs more bytes than remain",
    "size-past-end": "a size runs past the end of its stream",
    "zero-size-elements": "a count of elements that consume no bytes",
    "bad-value": "fixed contents (a magic) differ",
    "no-case": "a switch value matches none of its cases (an unknown type code)",
    "too-deep": "nesting deeper than the engine allows",
    "not-a-size": "a size is not a byte count",
    "not-a-count": "an element count is not a count",
    "no-size": "a field has no size",
    "no-byte-order": "no byte order is known for a field",
    "byte-order": "the byte order cannot be decided",
    "no-terminator": "a terminator is missing before the end",
    "partial-element": "trailing bytes do not make a whole element",
    "outside-stream": "an instance's position is outside its stream",
    "until-unmet": "the stream ends before repeat-until holds",
    "unevaluable": "an expression of the spec cannot be evaluated",
    "unsupported": "a type kind the engine does not know",
}
# the kinds whose ``expected`` is a byte count that more of the file could satisfy
NEEDS_BYTES = frozenset({"truncated", "count-too-large", "size-past-end"})


@dataclass(frozen=True)
class Damage:
    """Why parsing stopped at ``field`` (see the module docstring)."""
    kind: str
    field: str
    offset: int
    expected: Any = None       # bytes needed (NEEDS_BYTES), the contents expected, a limit
    remaining: int | None = None
    value: Any = None          # the value found: a count, a switch value, bytes, a position
    count: int | None = None   # the element count claimed (count-too-large, zero-size-elements)
    what: str = ""             # display words: the element phrase, the expression, the type
    detail: str = ""           # display words: an expression's error
    cause: "Damage | None" = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown damage kind {self.kind!r}")

    @property
    def bytes_needed(self) -> int | None:
        """The bytes from ``offset`` the field needs, for the kinds more bytes could satisfy."""
        return int(self.expected) if self.kind in NEEDS_BYTES else None

    def chain(self):
        """This damage and its causes, outermost first."""
        d: Damage | None = self
        while d is not None:
            yield d
            d = d.cause

    @cached_property
    def sentence(self) -> str:
        """The reason in words, for display only."""
        return _WORDS[self.kind](self)


def show(v: Any) -> str:
    """A value inside a sentence: bytes as hex and text, nothing as words."""
    if v is None:
        return "no value (the bytes it comes from are missing)"
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if not b:
            return "no bytes (the data ends here)"
        text = "".join(chr(c) if 0x20 <= c < 0x7F else "." for c in b[:16])
        return f"{b[:16].hex(' ')}{' …' if len(b) > 16 else ''} (\"{text}\")"
    return str(v)


def _detail(d: Damage) -> str:
    return f"{d.cause.field}: {d.cause.sentence}" if d.cause is not None else d.detail


def _zero(d: Damage) -> str:
    claimed = f"{d.count} elements" if d.count is not None else "elements until the end"
    return (f"{claimed} claimed, but the elements consume no bytes (element [{d.value}] is empty): "
            "expected at least 1 byte per element, so the file's bytes cannot back the count; "
            "refusing to loop")


_WORDS = {
    "truncated": lambda d: f"needs {d.expected} bytes, only {d.remaining} remain (truncated)",
    "count-too-large": lambda d: f"{d.count} {d.what} need{'' if d.what.startswith('elements') else ' at least'} "
                                 f"{d.expected} bytes, only {d.remaining} remain",
    "size-past-end": lambda d: f"size {d.expected} runs past the end: only {d.remaining} bytes remain",
    "zero-size-elements": _zero,
    "bad-value": lambda d: f"expected {show(d.expected)}, found {show(d.value)}",
    "no-case": lambda d: f"no case of the switch matches {show(d.value)}: unknown or invalid type code",
    "too-deep": lambda d: f"nesting deeper than {d.expected} levels",
    "not-a-size": lambda d: f"size {show(d.value)} is not a byte count",
    "not-a-count": lambda d: f"element count {show(d.value)} is not a count",
    "no-size": lambda d: "no size given",
    "no-byte-order": lambda d: "no byte order known for this field",
    "byte-order": lambda d: f"cannot decide byte order: {_detail(d)}",
    "no-terminator": lambda d: "terminator not found before the end",
    "partial-element": lambda d: f"{d.value} trailing bytes do not make a whole {d.what}",
    "outside-stream": lambda d: (f"position {d.value} is outside its stream of {d.remaining} bytes "
                                 f"(starting at file offset {d.expected})"),
    "until-unmet": lambda d: "end of stream reached before repeat-until was satisfied",
    "unevaluable": lambda d: f"cannot {d.what}: {_detail(d)}",
    "unsupported": lambda d: f"unsupported type kind {d.value}",
}
assert _WORDS.keys() == KINDS.keys()
