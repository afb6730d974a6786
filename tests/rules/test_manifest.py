"""Manifest rules GG1201-GG1204: a file's tensor data against a hash manifest, through
``validate --manifest`` in every output format."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.cli import main
from ggscope.validate.runner import selected_rules, validate
from gguf_writers import T, TensorSpec, write_gguf_py


def model(path: Path, names=("a.weight", "b.weight", "c.weight"), flip: str | None = None) -> Path:
    specs = []
    for i, n in enumerate(names):
        data = np.arange(64, dtype=np.float32) + 100 * (sum(n.encode()) % 7)
        if n == flip:
            data = data.copy()
            data[5] += 1
        specs.append(TensorSpec(n, T.F32, data))
    return write_gguf_py(path, tensors=specs)


def manifest_of(path: Path, tmp_path: Path, monkeypatch, capsysbinary, *opts: str) -> Path:
    monkeypatch.chdir(path.parent)
    capsysbinary.readouterr()
    assert main(["hash", *opts, path.name]) == 0
    m = tmp_path / "m.txt"
    m.write_bytes(capsysbinary.readouterr().out)
    return m


def found(path: Path, manifest: Path | None) -> list:
    mf = ggscope.open(str(path.name))
    out = validate(mf, selected_rules(select=["manifest"]), {"manifest": str(manifest)} if manifest else None)
    assert not [f for f in out if f.code == "GG000"], out
    return out


@pytest.fixture
def pub(tmp_path, monkeypatch, capsysbinary):
    (tmp_path / "pub").mkdir()
    p = model(tmp_path / "pub" / "m.gguf")
    return p, manifest_of(p, tmp_path, monkeypatch, capsysbinary, "--sha256", "--xxh64")


def test_the_published_file_has_no_finding(pub):
    p, m = pub
    assert found(p, m) == []


def test_without_a_manifest_the_family_is_silent(pub):
    assert found(pub[0], None) == []


def test_a_changed_tensor_and_the_whole_data(pub):
    p, m = pub
    model(p, flip="b.weight")
    got = found(p, m)
    assert [(f.code, f.rule) for f in got] == [("GG1204", "manifest-data-mismatch"), ("GG1201", "manifest-tensor-changed")]
    t = ggscope.open(str(p.name)).tensor("b.weight")
    assert (got[1].start, got[1].end) == (t.offset, t.offset + t.nbytes)
    assert '"b.weight"' in got[1].message and "xxh64, sha256" in got[1].message


def test_a_missing_and_an_extra_tensor(pub):
    p, m = pub
    model(p, names=("a.weight", "c.weight", "d.weight"))
    got = {(f.code, f.message.split('"')[1]) for f in found(p, m) if '"' in f.message}
    assert ("GG1202", "b.weight") in got and ("GG1203", "d.weight") in got
    assert "GG1204" in {f.code for f in found(p, m)}


def test_a_whole_data_manifest_finds_no_extra_tensor(tmp_path, monkeypatch, capsysbinary):
    (tmp_path / "pub").mkdir()
    p = model(tmp_path / "pub" / "m.gguf")
    m = manifest_of(p, tmp_path, monkeypatch, capsysbinary, "--no-layer", "--sha1")
    assert found(p, m) == []
    model(p, flip="a.weight")
    assert [f.code for f in found(p, m)] == ["GG1204"]


def test_a_manifest_of_another_file_verifies_nothing(pub, tmp_path):
    p, m = pub
    m.write_bytes(m.read_bytes().replace(b"m.gguf", b"other.gguf"))
    (f,) = found(p, m)
    assert f.code == "GG1204" and f.severity.value == "warning" and "no entry" in f.message


def test_the_manifest_names_the_file_by_its_final_component(pub, monkeypatch):
    p, m = pub
    m.write_bytes(m.read_bytes().replace(b"m.gguf", b"downloads/m.gguf"))
    model(p, flip="c.weight")
    assert {f.code for f in found(p, m)} == {"GG1201", "GG1204"}


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_every_output_format_carries_the_verdict(pub, fmt, capsysbinary):
    p, m = pub
    model(p, flip="a.weight")
    capsysbinary.readouterr()
    code = main(["validate", "--select", "GG12", "--format", fmt, "--manifest", str(m), p.name])
    out = capsysbinary.readouterr().out.decode()
    assert code == 1
    assert "GG1201" in out and "GG1204" in out
    if fmt in ("json", "sarif"):
        json.loads(out)


def test_an_unreadable_manifest_is_a_usage_error(pub, tmp_path, capsysbinary):
    capsysbinary.readouterr()
    code = main(["validate", "--manifest", str(tmp_path / "none.txt"), pub[0].name])
    err = capsysbinary.readouterr().err.decode()
    assert code == 2 and err.count("\n") == 1 and "cannot open manifest" in err


def test_a_hostile_tensor_name_is_quoted_in_the_message(tmp_path, monkeypatch, capsysbinary):
    (tmp_path / "pub").mkdir()
    p = model(tmp_path / "pub" / "m.gguf", names=("ok.weight", "evil\x1b[2J.weight"))
    m = manifest_of(p, tmp_path, monkeypatch, capsysbinary)
    model(p, names=("ok.weight", "evil\x1b[2J.weight"), flip="evil\x1b[2J.weight")
    msgs = [f.message for f in found(p, m) if f.code == "GG1201"]
    assert msgs and "\x1b" not in msgs[0] and "\\x1b[2J" in msgs[0]
