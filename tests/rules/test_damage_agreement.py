"""`validate`, `info` and `ggscope.open()` agree on which files are damaged (issue 13).

Over every real fixture and cuts of it (inside the header, at every quarter, one byte
short): when ``open`` sets ``damage``, ``validate`` has an error-level finding at that
offset from the damage rules and ``info`` exits 2; when it does not, ``info`` exits 0.
Before the damage rules covered every format, every cut legacy file passed validate.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import ggscope
from ggscope.cli import main
from ggscope.rules import Severity
from ggscope.validate.runner import selected_rules, validate

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SHARED_FIXTURES = REPO / ".." / "shared" / "fixtures"

DAMAGE_CODES = {"GG101", "GG103", "GG104", "GG117", "GG118", "GG902"}
RULES = selected_rules()


def _files() -> list[Path]:
    roots = [SHARED_FIXTURES, FIXTURES, REPO / "ggscope" / "examples"]
    out = []
    for root in roots:
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix != ".md" and p.stat().st_size <= 8 << 20:
                with open(p, "rb") as fh:
                    head = fh.read(4096)
                from ggscope.model.detect import detect
                if detect(head, p.stat().st_size) is not None:
                    out.append(p)
    return out


FILES = _files()


def _cuts(size: int) -> list[int]:
    return sorted({9, 30, 100, size // 4, size // 2, 3 * size // 4, size - 1, size} - {0})


def _check(data: bytes, label: str) -> bool:
    try:
        mf = ggscope.open_bytes(data, label)
    except ggscope.UnknownFormat:
        return False
    found = validate(mf, RULES)
    assert not [f for f in found if f.code == "GG000"], found
    errors = [f for f in found if f.severity is Severity.ERROR]
    if mf.damage is not None:
        assert errors, (label, mf.damage.path, mf.damage.error)
        if mf.format != "gguf" or "/data" not in mf.damage.path:
            hit = [f for f in errors if f.code in DAMAGE_CODES]
            assert hit, (label, [(f.code, f.message) for f in errors])
            # at the damage, or (a negative count) at the count that caused it
            assert any(f.start is not None and f.start <= mf.damage.start for f in hit), (label, hit)
    return mf.damage is not None


@pytest.mark.skipif(not FILES, reason="no fixtures found")
@pytest.mark.parametrize("path", FILES, ids=[str(p.name) for p in FILES])
def test_open_and_validate_agree_on_every_cut(path):
    data = path.read_bytes()
    for n in _cuts(len(data)):
        _check(data[:n], f"{path.name}[:{n}]")


def test_info_exit_status_follows_damage(tmp_path, capsys):
    picks = [p for p in FILES if p.suffix in (".bin", ".bit1", ".gguf")][::7][:12]
    if not picks:
        pytest.skip("no fixtures found")
    for path in picks:
        data = path.read_bytes()
        for n in (100, len(data) // 2, len(data)):
            cut = tmp_path / f"{path.stem}-{n}{path.suffix}"
            cut.write_bytes(data[:n])
            try:
                damaged = ggscope.open(cut).damage is not None
            except ggscope.UnknownFormat:
                continue
            rc = main(["info", str(cut)])
            capsys.readouterr()
            assert rc == (2 if damaged else 0), (cut.name, rc)
            rc = main(["validate", "--ignore", "filename", str(cut)])
            capsys.readouterr()
            if damaged:
                assert rc == 1, cut.name


def test_short_cuts_are_truncations_and_absurd_counts_are_not():
    """A GGUF file cut to 25-40 bytes is truncated (GG117), not a hostile count (GG103);
    a count needing over a thousand times the file's bytes is GG103; nested arrays
    deeper than the engine follows are a nested-array finding (GG104), not a truncation."""
    import struct
    data = (REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf").read_bytes()
    for n in range(25, 41):
        codes = {f.code for f in validate(ggscope.open_bytes(data[:n], "x.gguf"), RULES)}
        assert "GG117" in codes and "GG103" not in codes, (n, codes)
    hostile = data[:16] + struct.pack("<Q", 2**40) + data[24:64]
    codes = {f.code for f in validate(ggscope.open_bytes(hostile, "x.gguf"), RULES)}
    assert "GG103" in codes and "GG117" not in codes, codes

    def s(b):
        return struct.pack("<Q", len(b)) + b
    inner = struct.pack("<IQ", 4, 1) + struct.pack("<I", 7)
    for _ in range(70):
        inner = struct.pack("<IQ", 9, 1) + inner
    nested = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + s(b"x.deep") + struct.pack("<I", 9) + inner
    found = [f for f in validate(ggscope.open_bytes(nested, "x.gguf"), RULES) if f.severity is Severity.ERROR]
    assert [f.code for f in found] == ["GG104"], found
    assert found[0].path == "metadata_kv[0]" and "nested" in found[0].message
