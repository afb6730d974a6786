"""``ggscope hash`` against the recorded output of llama.cpp's ``llama-gguf-hash``.

The records (``fixtures/gguf_hash/records.json``, written by ``tools/record_gguf_hash.py``
from the real tool) cover the repository's GGUF files, every GGUF file of
``../shared/fixtures`` and the generated files of ``generated.py``, with each option
and the ``--check`` cases: stdout must be the same bytes and the exit status the same.
A split set hashed from any shard prints the tool's lines for each shard in order.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ggscope.cli import main

REPO = Path(__file__).resolve().parents[2]
SHARED_FIXTURES = REPO / ".." / "shared" / "fixtures"      # as tests/conftest.py defines it

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402

RECORDS = json.loads((REPO / "fixtures" / "gguf_hash" / "records.json").read_text())["records"]


def _id(r: dict) -> str:
    return f"{r['source']}:{r['file']}:{' '.join(r['args']) or 'default'}"


@pytest.fixture(scope="session")
def generated_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("gguf_hash_generated")
    generated.write_all(d)
    return d


def _path(r: dict, generated_dir: Path) -> Path:
    if r["source"] == "repo":
        return REPO / r["file"]
    if r["source"] == "generated":
        return generated_dir / r["file"]
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES.resolve()}")
    p = SHARED_FIXTURES / r["file"]
    if not p.is_file():
        pytest.skip(f"{r['file']} is not in this copy of the shared fixtures")
    return p


def hash_cli(capsysbinary, monkeypatch, cwd: Path, args: list[str], *, err: bool = False):
    monkeypatch.chdir(cwd)
    capsysbinary.readouterr()
    code = main(["hash", "--threads", "1", *args])
    got = capsysbinary.readouterr()
    return (code, got.out, got.err) if err else (code, got.out)


def expected(r: dict) -> bytes:
    return bytes.fromhex(r["stdout_hex"]) if "stdout_hex" in r else r["stdout"].encode()


SPLIT_SETS = (generated.SPLIT, generated.SPLIT_SMALL_FIRST)
SHARDS = {name for s in SPLIT_SETS for name in s}


@pytest.mark.parametrize("r", [r for r in RECORDS if r["exit"] >= 0 and r["file"] not in SHARDS], ids=_id)
def test_same_bytes_and_status_as_llama_gguf_hash(r, generated_dir, capsysbinary, monkeypatch):
    p = _path(r, generated_dir)
    code, out = hash_cli(capsysbinary, monkeypatch, p.parent, [*r["args"], p.name])
    assert out == expected(r)
    assert code == r["exit"]


@pytest.mark.parametrize("r", [r for r in RECORDS if r["exit"] < 0 and not r["args"]], ids=_id)
def test_a_file_the_tool_crashes_on_is_one_line_or_hashed(r, generated_dir, capsysbinary, monkeypatch):
    """The tool dereferences NULL on files gguf_init_from_file refuses; ggscope answers."""
    p = _path(r, generated_dir)
    code, out, err = hash_cli(capsysbinary, monkeypatch, p.parent, [p.name], err=True)
    assert code in (0, 2)
    if code == 2:
        assert out == b"" and err.count(b"\n") == 1 and err.startswith(b"ggscope: cannot hash ")
    else:
        assert out.endswith(b"  " + p.name.encode() + b"\n")


@pytest.mark.parametrize("opts", [[], ["--all", "--uuid", "--no-layer"], ["--sha256", "--no-layer"]], ids=" ".join)
@pytest.mark.parametrize("shard", sorted(SHARDS))
def test_any_shard_hashes_the_whole_set_as_the_tool_hashes_each_shard(shard, opts, generated_dir, capsysbinary,
                                                                      monkeypatch):
    """Also a set whose first shard holds no tensors (``--no-tensor-first-split``)."""
    want = b""
    for name in next(s for s in SPLIT_SETS if shard in s):
        rec = [r for r in RECORDS if r["source"] == "generated" and r["file"] == name and r["args"] == opts]
        assert len(rec) == 1
        want += expected(rec[0])
    code, out = hash_cli(capsysbinary, monkeypatch, generated_dir, [*opts, shard])
    assert (code, out) == (0, want)


def test_records_cover_every_option_and_check_outcome():
    seen_opts = {a for r in RECORDS for a in r["args"]}
    assert {"--xxh64", "--sha1", "--sha256", "--all", "--uuid", "--no-layer", "--check"} <= seen_opts
    assert {r["exit"] for r in RECORDS if "--check" in r["args"]} == {0, 1, 3, 4, 5}
    assert sum(1 for r in RECORDS if r["source"] == "generated" and r["exit"] == 0) >= 40
