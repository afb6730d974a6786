"""File-provided text, made safe for a terminal and for JSON.

Why: metadata keys, string values, tensor names and tokens come from the inspected file.
Printed raw, ``\\x1b]0;title\\x07`` sets the terminal's title, ``\\x1b[31m`` re-colours it
and a newline breaks a table into rows that are not entries.  Every human-readable
output (info, stats, validate, run, diff, the TUI) passes such text through
``escape_text``; ``--json`` output passes values through ``json_text``.

``escape_text(s)``: C0 and C1 control characters and DEL become ``\\n``, ``\\t``, ``\\r``
or ``\\xNN``; Unicode line and paragraph separators and the bidirectional overrides
(which reorder what a terminal shows) become ``\\uNNNN``; a byte that was not valid UTF-8
(held as a lone surrogate U+DC80..U+DCFF, Python's ``surrogateescape``) becomes ``\\xNN``
of that byte.  Backslashes are left alone, so text that is already a Python ``repr`` is
unchanged; the result is for reading, not for parsing back.

``escape_label(raw)``: the stricter form for a token quoted in a label (every format
and separator character too, plus backslash and double quote), since a token is often
one invisible character.

``json_text(s)``: valid UTF-8 text stays a JSON string.  Text holding bytes that are not
valid UTF-8 becomes ``{"bytes": "<hex of the exact bytes>"}`` - lossless, and valid
UTF-8 JSON that every parser accepts.  ``json_key(s)`` does the same for object keys,
which must be strings: such a key becomes ``escape_text(key)`` and the caller records
its exact bytes (``info --json`` puts them under ``"metadata_key_bytes"``).
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["escape_text", "escape_label", "json_text", "json_key", "is_valid_utf8", "raw_bytes"]

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_SURROGATES = re.compile("[\ud800-\udfff]")


def _one(m: re.Match) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named:
        return named
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:              # an undecodable byte, kept by surrogateescape
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}"


def escape_text(s: Any) -> str:
    """``s`` as text with every control, separator and undecodable byte escaped."""
    if not isinstance(s, str):
        s = bytes(s).decode("utf-8", "surrogateescape") if isinstance(s, (bytes, bytearray, memoryview)) \
            else str(s)
    return _UNSAFE.sub(_one, s) if _UNSAFE.search(s) else s


def is_valid_utf8(s: str) -> bool:
    return _SURROGATES.search(s) is None


def raw_bytes(s: str) -> bytes:
    """The exact bytes a surrogateescape-decoded string came from."""
    return s.encode("utf-8", "surrogateescape")


def json_text(s: str) -> Any:
    """A JSON value for file text: the string, or ``{"bytes": hex}`` when not valid UTF-8."""
    if is_valid_utf8(s):
        return s
    try:
        return {"bytes": raw_bytes(s).hex()}
    except UnicodeEncodeError:          # a surrogate that no byte produced (cannot come from a file)
        return {"bytes": s.encode("utf-8", "surrogatepass").hex()}


def json_key(s: str) -> str:
    """A JSON object key for file text: unchanged when valid UTF-8, else escaped."""
    return s if is_valid_utf8(s) else escape_text(s)


_LABEL_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_label(raw: bytes | str) -> str:
    """A token's text for a quoted label (``run``'s candidates, ``diff --logits``):
    stricter than ``escape_text`` because a token is often one invisible character -
    every control, format (zero-width, bidi) and separator character, lone surrogates
    and bytes that are not UTF-8 become escapes (\\n, \\xNN, \\uNNNN), and backslash
    and double quote are escaped so that the result can be quoted."""
    import unicodedata
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    out = []
    for c in text:
        o = ord(c)
        if c in _LABEL_NAMED:
            out.append(_LABEL_NAMED[c])
        elif 0xDC80 <= o <= 0xDCFF:                    # a byte that was not UTF-8
            out.append(f"\\x{o - 0xDC00:02x}")
        elif unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp"):
            out.append(f"\\x{o:02x}" if o < 0x100 else
                       f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(c)
    return "".join(out)
