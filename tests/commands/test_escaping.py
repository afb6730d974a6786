"""File-provided text never reaches a terminal raw, and --json is always valid UTF-8 JSON.

The file is written byte by byte (struct), independent of ggscope: a metadata key that
sets the terminal title, a value that re-colours it, a tensor name with a newline, and
a string and a tensor name that are not valid UTF-8.
"""
from __future__ import annotations

import json
import struct

import pytest

from ggscope.cli import main
from ggscope.core.escape import escape_text, json_text

TITLE_KEY = b"x.\x1b]0;pwned\x07"
RED = b"\x1b[31mred"
BAD = b"caf\xe9\xff"                 # Latin-1, not UTF-8


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _hostile_gguf() -> bytes:
    kvs = [_s(b"general.architecture") + struct.pack("<I", 8) + _s(b"llama"),
           _s(TITLE_KEY) + struct.pack("<I", 8) + _s(RED),
           _s(b"x.latin1") + struct.pack("<I", 8) + _s(BAD),
           _s(b"x.bidi") + struct.pack("<I", 8) + _s("a\u202eb\u2028c".encode())]
    names = [b"w\nfake_row", b"t" + BAD]
    infos = b"".join(_s(n) + struct.pack("<IQIQ", 1, 8, 0, 32 * i) for i, n in enumerate(names))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * (-len(head) % 32)
    return head + b"\0" * 64


@pytest.fixture
def hostile(tmp_path):
    p = tmp_path / "hostile.gguf"
    p.write_bytes(_hostile_gguf())
    return p


def _clean(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\u2028" not in out
    assert "\udcff" not in out


def test_info_plain_escapes_and_keeps_one_row_per_entry(hostile, capsys):
    assert main(["info", str(hostile)]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "fake_row" in out
    row = next(line for line in out.splitlines() if "fake_row" in line)
    assert "w\\nfake_row" in row                      # one row, the newline shown as \n
    assert "\\x1b]0;pwned\\x07" in out


def test_info_rich_escapes(hostile, capsys):
    assert main(["info", "--color", "always", str(hostile)]) == 0
    out = capsys.readouterr().out
    assert "]0;pwned" not in out.replace("\\x1b]0;pwned", "")
    assert "\x1b[31mred" not in out


def test_info_json_is_valid_utf8_and_lossless(hostile, capsysbinary):
    assert main(["info", "--json", str(hostile)]) == 0
    raw = capsysbinary.readouterr().out
    doc = json.loads(raw.decode("utf-8"))            # strict: raises on invalid UTF-8
    assert doc["metadata"]["x.latin1"] == {"bytes": BAD.hex()}
    assert doc["metadata"][TITLE_KEY.decode()] == RED.decode()   # valid UTF-8 stays text in JSON
    names = [t["name"] for t in doc["tensors"]]
    assert names[0] == "w\nfake_row" and names[1] == {"bytes": (b"t" + BAD).hex()}


def test_validate_and_stats_escape(hostile, capsys):
    main(["validate", str(hostile)])
    out = capsys.readouterr()
    _clean(out.out + out.err)
    main(["stats", str(hostile)])
    out = capsys.readouterr()
    _clean(out.out + out.err)


def test_helper():
    assert escape_text("a\x1b[31m\n\t\x7f\x9b") == "a\\x1b[31m\\n\\t\\x7f\\x9b"
    assert escape_text(BAD.decode("utf-8", "surrogateescape")) == "caf\\xe9\\xff"
    assert escape_text("r\u202el") == "r\\u202el"
    assert escape_text("plain ünïcode \\x") == "plain ünïcode \\x"
    assert json_text(BAD.decode("utf-8", "surrogateescape")) == {"bytes": BAD.hex()}
