"""The one escaping (ggscope.core.escape): what is escaped, to what, and JSON that parses
back to the same text.  The oracle for "what" is the running Python's ``unicodedata``."""
from __future__ import annotations

import json
import sys
import unicodedata

from ggscope.core.escape import UNSAFE_RANGES, escape_label, escape_text, json_key, json_safe, json_text

ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def _in_table(cp: int) -> bool:
    return any(a <= cp <= b for a, b in UNSAFE_RANGES)


def test_table_covers_every_control_format_and_separator_character():
    missing = [hex(cp) for cp in range(sys.maxunicode + 1)
               if unicodedata.category(chr(cp)) in ESCAPED_CATEGORIES and not _in_table(cp)]
    assert missing == [], f"add these to UNSAFE_RANGES (unicodedata {unicodedata.unidata_version})"


def test_table_holds_nothing_else():
    # a newer Unicode may classify an unassigned code point the table already lists
    extra = [hex(cp) for a, b in UNSAFE_RANGES for cp in range(a, b + 1)
             if unicodedata.category(chr(cp)) not in ESCAPED_CATEGORIES | {"Cn"}]
    assert extra == []


def test_every_unsafe_character_is_escaped_and_nothing_else():
    for a, b in UNSAFE_RANGES:
        for cp in (a, b):
            out = escape_text(f"a{chr(cp)}b")
            assert out.startswith("a\\") and out.endswith("b") and out.isascii(), hex(cp)
    text = "plain ünïcode 🦙 中文 [/bold] \\x not escaped \u00a0"
    assert escape_text(text) == text


def test_forms():
    assert escape_text("a\x1b[31m\n\t\r\x7f\x9b") == "a\\x1b[31m\\n\\t\\r\\x7f\\x9b"
    assert escape_text("r\u202el\u200bz\ufeff\u2028") == "r\\u202el\\u200bz\\ufeff\\u2028"
    assert escape_text("tag\U000e0041") == "tag\\U000e0041"
    assert escape_text("🦙\U000f0000\U000e0041🦙") == "🦙\U000f0000\\U000e0041🦙"   # astral: only Cf escaped
    assert escape_text(b"caf\xe9\xff") == "caf\\xe9\\xff"                 # bytes that are not UTF-8
    assert escape_text("caf\xe9\xff".encode("latin-1").decode("utf-8", "surrogateescape")) == "caf\\xe9\\xff"
    assert escape_text(escape_text("x\ny\x1b")) == escape_text("x\ny\x1b")  # a second pass changes nothing


def test_label_is_stricter():
    assert escape_label('q"\\') == 'q\\"\\\\'
    assert escape_label("\u00a0\ue000\u0378 ") == "\\xa0\\ue000\\u0378 "    # NBSP, private use, unassigned
    assert escape_label(b"\xe2\x96") == "\\xe2\\x96"
    assert escape_label("🦙\U000f0000") == "🦙\\U000f0000"
    assert escape_label("é 🦙") == "é 🦙"


def test_json_is_lossless_valid_utf8_and_terminal_safe():
    values = ["a\x1b[31m", "c1\x85\x9b", "bidi\u202e", "zw\u200b\ufeff", "sep\u2028", "tag\U000e0041", "é 🦙"]
    text = json_safe(json.dumps(values, ensure_ascii=False))
    assert json.loads(text) == values
    assert not any(_in_table(ord(c)) for c in text)
    text.encode("utf-8")                              # strict: no lone surrogate
    assert json_safe(json.dumps({"k": ["\n"]}, indent=1)) == json.dumps({"k": ["\n"]}, indent=1)  # layout stays
    bad = b"caf\xe9\xff".decode("utf-8", "surrogateescape")
    assert json_text(bad) == {"bytes": "636166e9ff"} and json_key(bad) == "caf\\xe9\\xff"
    assert json_text("ok") == "ok"
