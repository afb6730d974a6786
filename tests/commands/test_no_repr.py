"""No Python repr reaches a user: what the commands print reads as sentences.

Checked on the cases that used to leak one (an empty file, a file holding only
``GGUF``, a legacy file's empty type-error table, a diff against a format without an
alignment field) and, broadly, on every legacy and chatglm fixture: the output holds
no ``None``, ``{}``, ``b'...'`` or ``[]``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ggscope.cli import main

REPO = Path(__file__).resolve().parents[2]
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
REPR = re.compile(r"\bNone\b|\{\}|\bb'|\bb\"|\[\]")


def run(capsys, *argv) -> tuple[int, str]:
    code = main([*argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_empty_file(tmp_path, capsys):
    p = tmp_path / "empty.gguf"
    p.write_bytes(b"")
    code, text = run(capsys, "info", str(p))
    assert code == 2 and not REPR.search(text)
    assert "empty" in text and str(p) in text and len(text) < 300


def test_gguf_magic_only(tmp_path, capsys):
    p = tmp_path / "magic.gguf"
    p.write_bytes(b"GGUF")
    code, text = run(capsys, "info", str(p))
    assert code == 2 and not REPR.search(text)
    assert "offset 4" in text and "missing" in text and str(p) in text


def test_wrong_magic_names_bytes_not_reprs(tmp_path, capsys):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"GGUX" + bytes(60))
    code, text = run(capsys, "info", str(p))
    assert code == 2 and not REPR.search(text) and "47 47 55 58" in text


def _legacy_files():
    root = REPO / ".." / "shared" / "fixtures"
    return sorted(p for d in ("llama-legacy", "chatglm", "ggml-legacy") for p in (root / d).glob("*.bin")
                  if "ref-logits" not in p.name)


@pytest.mark.parametrize("path", _legacy_files(), ids=lambda p: p.name)
def test_info_of_legacy_files_reads_as_text(path, capsys):
    code, text = run(capsys, "info", "--color", "never", str(path))
    assert code in (0, 2)
    head = text.split("\nmetadata:")[0]       # values of the file itself may be anything
    assert not REPR.search(head), head


def test_diff_against_a_format_without_alignment(capsys, shared_fixtures):
    legacy = shared_fixtures / "llama-legacy" / "llama0L-ggml-unversioned-f16.bin"
    if not legacy.is_file() or not Q8.is_file():
        pytest.skip("fixtures absent")
    code, text = run(capsys, "diff", "--color", "never", "--metadata-only", str(legacy), str(Q8))
    assert code == 1
    header = [ln for ln in text.splitlines() if ln.startswith("header ")]
    assert any("alignment" in ln and "not set" in ln for ln in header), header
    assert not any(REPR.search(ln) for ln in header)


def test_validate_messages_quote_bytes_not_reprs(tmp_path, capsys):
    """GG101 names a wrong magic and GG202 non-UTF-8 text as quoted, escaped text."""
    import gguf
    bad_magic = tmp_path / "fugg.gguf"
    bad_magic.write_bytes(b"FU\x00G" + bytes(20))
    code, text = run(capsys, "validate", str(bad_magic))
    assert code == 1 and "GG101" in text and '"FU\\x00G"' in text and not REPR.search(text)

    p = tmp_path / "latin1.gguf"
    w = gguf.GGUFWriter(str(p), "llama")
    w.add_string("general.name", "x")
    w.write_header_to_file(); w.write_kv_data_to_file(); w.close()
    data = p.read_bytes()
    i = data.rindex(b"x")
    p.write_bytes(data[:i] + b"\xe9" + data[i + 1:])          # general.name = b"\xe9", not UTF-8
    code, text = run(capsys, "validate", "--select", "GG202", str(p))
    assert "GG202" in text and '"\\xe9"' in text and not REPR.search(text)
