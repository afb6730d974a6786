"""File-provided text, made safe for a terminal, a widget and JSON: the one escaping.

Why: metadata keys, string values, tensor names, file names and tokens come from the
inspected file.  Printed raw, ``\\x1b]0;title\\x07`` sets the terminal's title,
``\\x1b[31m`` re-colours it, a newline breaks a table into rows that are not entries,
U+202E reverses what follows and U+200B hides a difference between two names.  Given
to Rich or Textual as markup, ``[/bold]`` crashes the browser, ``[link=URL]`` becomes a
real hyperlink and ``[@click=app.quit]`` a click action.

What is escaped - the ``UNSAFE`` characters: the C0 and C1 controls and DEL (Unicode
category Cc), the format characters (Cf: zero-width space U+200B, byte order mark
U+FEFF, the bidirectional marks, embeddings, overrides and isolates, soft hyphen, tag
characters), the line and paragraph separators (Zl, Zp) and surrogates (Cs: a byte
that was not valid UTF-8, held by Python's ``surrogateescape`` as U+DC80..U+DCFF).

To what: ``\\n``, ``\\t``, ``\\r`` by name; other characters below U+0100 as ``\\xNN``
(``\\x1b``, ``\\x7f``, ``\\x9b``); a byte that was not UTF-8 as ``\\xNN`` of that byte
(``\\xff``); everything else as ``\\uNNNN`` (``\\u202e``) or ``\\UNNNNNNNN``.  Backslashes
are left alone: a chat template's literal ``\\n`` reads as written, and the result is
for reading, not for parsing back.

In which output, each exactly once, where the text leaves ggscope:

* text (info, stats, validate, diff, run, every error line) and GitHub annotations
  (before the workflow command's own ``%0A`` encoding, keeping line breaks:
  ``keep="\\r\\n"``): ``escape_text``;
* Rich tables and the Textual browser: ``rich.text.Text(escape_text(s))`` - never a
  markup string, so ``[`` is just a bracket (the browser escapes with
  ``tui.format.file_text``, the detail pane keeping line feeds, and hands widgets
  ``Text`` through ``tui.format.plain`` and ``tui.widgets.plain_table.PlainTable``;
  notifications pass ``markup=False``);
* a token in a quoted label (``run``'s candidates, ``diff --logits``): ``escape_label``,
  which also escapes the backslash, the double quote, every space that is not U+0020
  and characters that are private or unassigned, since a token is often one invisible
  character;
* JSON (info, stats, validate's json and SARIF, diff, rules, run): lossless - valid
  UTF-8 text stays a string (``json_text``), text that is not becomes
  ``{"bytes": "<hex of the exact bytes>"}``, a key that is not is written escaped
  (``json_key``; ``info --json`` records its exact bytes under
  ``"metadata_key_bytes"``); and the JSON text itself passes ``json_safe``, which
  writes every ``UNSAFE`` character as a ``\\uNNNN`` escape: the document parses back
  to the same strings, is always valid UTF-8, and ``cat`` of it cannot drive a terminal.

A finding's message is display text built by a rule, which quotes the file text in it
with ``rules.base.quoted`` (this ``escape_text``); the outputs escape the whole message
where it leaves, which changes nothing there (escaping is idempotent: backslashes are
left alone) and catches text a message took in any other way.

``UNSAFE`` is one table of ranges (Unicode 14 as in Python 3.11's ``unicodedata``, plus
the format characters added since) so that the check is one regular expression;
tests/core/test_escape.py proves it covers every Cc/Cf/Cs/Zl/Zp character of the
running Python.  Every such character is unprintable to ``str.isprintable`` (one C
loop), so printable text - almost all text - skips the expression, and ASCII JSON is
checked with ``str.isascii`` (a flag) and one search for DEL
(benchmarks/escape_text.py: ``json_safe`` costs a fraction of the ``json.dumps`` before it).
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["escape_text", "escape_label", "quoted", "llama_quoted", "json_text", "json_key", "json_safe", "is_valid_utf8",
           "raw_bytes", "UNSAFE_RANGES"]

# (first, last) code points of categories Cc, Cf, Cs, Zl and Zp
UNSAFE_RANGES = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F),            # Egyptian hieroglyph format controls (1343x: Unicode 15)
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    def lit(cp: int) -> str:
        return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"
    return "".join(lit(a) if a == b else f"{lit(a)}-{lit(b)}" for a, b in ranges)


# One class of the BMP ranges plus every astral character: a class holding the astral
# ranges themselves makes ``re`` three times slower; an astral match is checked in Python.
_BMP = tuple(r for r in UNSAFE_RANGES if r[1] < 0x10000)
_ASTRAL = tuple(r for r in UNSAFE_RANGES if r[0] >= 0x10000)
_CLASS = f"[{_char_class(_BMP)}\\U00010000-\\U0010ffff]"
_UNSAFE = re.compile(_CLASS)
_KEEP = {"": _UNSAFE, "\n": re.compile(f"(?!\\n){_CLASS}"), "\r\n": re.compile(f"(?![\\r\\n]){_CLASS}")}
# json.dumps escapes C0 inside strings itself; outside them C0 is the layout (indent)
_JSON_UNSAFE = re.compile(f"[{_char_class(tuple(r for r in _BMP if r[0] > 0x1F))}\\U00010000-\\U0010ffff]")


_LABEL_EXTRA = re.compile(r'[^\x20-\x7e]|["\\]')        # all but printable ASCII, and " \


def _unsafe_astral(o: int) -> bool:
    return any(a <= o <= b for a, b in _ASTRAL)


def _is_unsafe(c: str) -> bool:
    o = ord(c)
    return _unsafe_astral(o) if o >= 0x10000 else _UNSAFE.match(c) is not None
_SURROGATES = re.compile("[\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_char(c: str) -> str:
    named = _NAMED.get(c)
    if named:
        return named
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:              # an undecodable byte, kept by surrogateescape
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _one(m: re.Match) -> str:
    c = m.group()
    return _escape_char(c) if _is_unsafe(c) else c     # an astral match may be an emoji


def _as_str(s: Any) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, (bytes, bytearray, memoryview)):
        return bytes(s).decode("utf-8", "surrogateescape")
    return str(s)


def escape_text(s: Any, *, keep: str = "") -> str:
    """``s`` (str, or bytes read as UTF-8) with every ``UNSAFE`` character escaped;
    ``keep`` is ``"\\n"`` or ``"\\r\\n"`` for a renderer that draws (or encodes) line
    breaks itself: the browser's detail pane, a GitHub annotation."""
    s = _as_str(s)
    if s.isprintable():              # C speed; every UNSAFE character is unprintable to Python
        return s
    pattern = _KEEP[keep]
    return pattern.sub(_one, s) if pattern.search(s) else s


def quoted(text: Any) -> str:
    """File-provided text or bytes in a message (a finding, an error): in double quotes,
    control characters and bytes that are not UTF-8 escaped (``"FU\\x00G"``, ``"\\xff"``),
    never a Python repr (``'\\udcff'``, ``b'...'``)."""
    return '"' + escape_text(text) + '"'


def llama_quoted(text: Any) -> str:
    """``quoted`` for a message that repeats one of llama.cpp's, which quote ``'%s'``."""
    return "'" + escape_text(text) + "'"


_LABEL_NAMED = {"\\": "\\\\", '"': '\\"'}


def _label_one(m: re.Match) -> str:
    c = m.group()
    if c in _LABEL_NAMED:
        return _LABEL_NAMED[c]
    if _is_unsafe(c):
        return _escape_char(c)
    import unicodedata
    cat = unicodedata.category(c)
    if cat in ("Co", "Cn") or cat == "Zs":     # private, unassigned, a space that is not U+0020
        return _escape_char(c)
    return c


def escape_label(raw: bytes | str) -> str:
    """A token's text for a double-quoted label (``run``'s candidates, ``diff --logits``):
    ``escape_text`` plus the backslash and the double quote, spaces other than U+0020,
    private-use and unassigned characters (see the module docstring)."""
    return _LABEL_EXTRA.sub(_label_one, _as_str(raw))


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


def _json_one(m: re.Match) -> str:
    o = ord(m.group())
    if o < 0x10000:
        return f"\\u{o:04x}"
    if not _unsafe_astral(o):
        return m.group()
    o -= 0x10000                        # JSON escapes astral characters as a surrogate pair
    return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"


def json_safe(text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with every
    ``UNSAFE`` character written as a ``\\u`` escape; parses back to the same value.
    Outside strings JSON is ASCII, so every such character is inside a string (C0
    controls are escaped there by ``json.dumps`` already; outside they are the layout)."""
    if text.isascii() and "\x7f" not in text:    # a flag and a memchr: the usual case
        return text
    if text.isprintable():                      # one C loop: no UNSAFE character
        return text
    return _JSON_UNSAFE.sub(_json_one, text) if _JSON_UNSAFE.search(text) else text
