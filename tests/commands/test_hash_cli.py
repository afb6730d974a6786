"""``ggscope hash`` as a command: split-set verdicts, --json, several files, manifest
errors, hostile names and files.  Byte-for-byte agreement with llama-gguf-hash is
tests/hash/test_gguf_hash_records.py."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from ggscope.cli import main

REPO = Path(__file__).resolve().parents[2]
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
Q4 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
sys.path.insert(0, str(REPO / "tests" / "hash"))
import generated  # noqa: E402

SPLIT = generated.SPLIT


@pytest.fixture(scope="module")
def gen(tmp_path_factory) -> dict[str, Path]:
    return generated.write_all(tmp_path_factory.mktemp("hash_cli"))


@pytest.fixture
def split_dir(gen, tmp_path, monkeypatch) -> Path:
    for n in SPLIT:
        shutil.copy(gen[n], tmp_path / n)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsysbinary, *args: str) -> tuple[int, bytes, bytes]:
    capsysbinary.readouterr()
    code = main(["hash", *args])
    got = capsysbinary.readouterr()
    return code, got.out, got.err


def shard_lines(out: bytes) -> dict[str, str]:
    return {ln.split()[1].decode(): ln.split()[-1].decode() for ln in out.splitlines() if ln.startswith(b"shard ")}


def flip_tensor_byte(path: Path, index: int) -> None:
    import ggscope
    with ggscope.open(path) as mf:
        off = mf.tensors[index].offset + 1
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 1]))


def test_a_split_manifest_checks_ok_from_any_shard(split_dir, capsysbinary):
    code, manifest, _ = run(capsysbinary, "--sha256", SPLIT[0])
    Path("m.txt").write_bytes(manifest)
    code, out, _ = run(capsysbinary, "--check", "m.txt", SPLIT[2])
    assert code == 0 and shard_lines(out) == {n: "Ok" for n in SPLIT}
    assert out.startswith(b"manifest  m.txt  sha256\n") and out.endswith(b"\nVerification results for m.txt - Success\n")


def test_a_changed_shard_is_named(split_dir, capsysbinary):
    _, manifest, _ = run(capsysbinary, "--sha256", SPLIT[0])
    Path("m.txt").write_bytes(manifest)
    flip_tensor_byte(split_dir / SPLIT[1], 2)
    code, out, _ = run(capsysbinary, "--check", "m.txt", SPLIT[0])
    assert code == 1 and shard_lines(out) == {SPLIT[0]: "Ok", SPLIT[1]: "Changed", SPLIT[2]: "Ok"}
    assert out.count(b"Mismatch") == 2             # the tensor and the shard's whole data


def test_a_missing_shard_is_named(split_dir, capsysbinary):
    _, manifest, _ = run(capsysbinary, "--xxh64", SPLIT[0])
    Path("m.txt").write_bytes(manifest)
    os.remove(SPLIT[2])
    code, out, err = run(capsysbinary, "--check", "m.txt", SPLIT[0])
    assert code == 1 and shard_lines(out)[SPLIT[2]] == "Missing"
    assert SPLIT[2].encode() in err


def test_a_shard_the_manifest_does_not_know_is_extra(split_dir, capsysbinary):
    _, manifest, _ = run(capsysbinary, SPLIT[0])
    Path("m.txt").write_bytes(b"".join(ln + b"\n" for ln in manifest.splitlines() if SPLIT[0].encode() not in ln))
    code, out, _ = run(capsysbinary, "--check", "m.txt", SPLIT[1])
    assert code == 1 and shard_lines(out) == {SPLIT[0]: "Extra", SPLIT[1]: "Ok", SPLIT[2]: "Ok"}


def test_a_shard_of_a_larger_set_in_the_manifest_is_missing(split_dir, capsysbinary):
    _, manifest, _ = run(capsysbinary, SPLIT[0])
    Path("m.txt").write_bytes(manifest.replace(b"-of-00003", b"-of-00004")
                              + b"xxh64     0123456789abcdef  split-00004-of-00004.gguf\n")
    code, out, _ = run(capsysbinary, "--check", "m.txt", SPLIT[0])
    got = shard_lines(out)
    assert code == 1 and got["split-00004-of-00004.gguf"] == "Missing"


def test_hashing_a_split_set_with_a_missing_shard_exits_2(split_dir, capsysbinary):
    os.remove(SPLIT[1])
    code, out, err = run(capsysbinary, SPLIT[0])
    assert code == 2 and SPLIT[1].encode() in err
    assert SPLIT[0].encode() in out and SPLIT[2].encode() in out


def test_json_holds_the_same_facts_as_the_lines(capsysbinary, monkeypatch):
    monkeypatch.chdir(Q8.parent)
    _, lines, _ = run(capsysbinary, "--all", "--uuid", Q8.name)
    code, out, _ = run(capsysbinary, "--json", "--all", "--uuid", Q8.name)
    doc = json.loads(out)
    assert code == doc["exit"] == 0
    (f,) = doc["files"][0]["hashes"]
    rebuilt = [(a, h, f"{Q8.name}:{t['name']}") for t in f["tensors"] for a, h in t.items() if a != "name"]
    rebuilt += [(a, h, Q8.name) for a, h in f["whole"].items()]
    assert [tuple(ln.split()) for ln in lines.decode().splitlines()] == rebuilt


def test_json_check_reports_each_tensor(capsysbinary, monkeypatch, tmp_path):
    monkeypatch.chdir(Q8.parent)
    _, manifest, _ = run(capsysbinary, "--sha1", Q8.name)
    m = tmp_path / "m.txt"
    m.write_bytes(manifest.replace(manifest.split()[1], b"0" * 40, 1))
    code, out, _ = run(capsysbinary, "--json", "--check", str(m), Q8.name)
    doc = json.loads(out)
    check = doc["files"][0]["check"]
    assert code == doc["exit"] == check["exit"] == 1 and check["result"] == "Failure"
    assert [c["result"] for c in check["tensors"]].count("Mismatch") == 1
    assert check["whole"] == [{"file": Q8.name, "algo": "sha1", "result": "Ok"}]


def test_several_files_print_in_turn(capsysbinary, monkeypatch):
    monkeypatch.chdir(Q8.parent)
    _, a, _ = run(capsysbinary, Q8.name)
    _, b, _ = run(capsysbinary, Q4.name)
    code, both, _ = run(capsysbinary, Q8.name, Q4.name)
    assert code == 0 and both == a + b


def test_xxh3_lines_follow_sha256(capsysbinary, monkeypatch):
    monkeypatch.chdir(Q8.parent)
    code, out, _ = run(capsysbinary, "--sha256", "--xxh3", "--uuid", Q8.name)
    kinds = [ln.split()[0] for ln in out.splitlines()]
    assert kinds[:2] == [b"sha256", b"xxh3"] and kinds[-3:] == [b"sha256", b"xxh3", b"uuid"]


def test_threads_do_not_change_the_result(capsysbinary, monkeypatch, gen):
    monkeypatch.chdir(gen["big_tensor.gguf"].parent)
    outs = {run(capsysbinary, "--threads", str(n), "--all", "big_tensor.gguf")[1] for n in (1, 2, 4)}
    assert len(outs) == 1


@pytest.mark.parametrize("bad", ["dir", "fifo"])
def test_a_manifest_that_is_no_file_never_hangs(bad, tmp_path, capsysbinary):
    m = tmp_path / "m"
    os.mkdir(m) if bad == "dir" else os.mkfifo(m)
    code, out, _ = run(capsysbinary, "--check", str(m), str(Q8))
    assert (code, out) == ((4, b"ERROR manifest does not have any known hash format in " + str(m).encode())
                           if bad == "dir" else (5, b"ERROR cannot open manifest " + str(m).encode()))


def test_unreadable_and_unknown_files_are_one_line(tmp_path, capsysbinary):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"\x1b[31mnot a model at all" * 10)
    for path in (str(junk), str(tmp_path / "absent.gguf")):
        code, out, err = run(capsysbinary, path)
        assert code == 2 and out == b"" and err.count(b"\n") == 1 and b"\x1b" not in err


def test_file_text_is_escaped_on_a_terminal_only(tmp_path, capsysbinary, monkeypatch):
    import numpy as np
    sys.path.insert(0, str(REPO / "tests"))
    import gguf_writers as gw
    p = tmp_path / "evil.gguf"
    gw.write_gguf_py(p, tensors=[gw.TensorSpec("evil\x1b]0;pwned\x07.weight", gw.T.F32, np.ones(4, np.float32))])
    code, piped, _ = run(capsysbinary, str(p))
    assert b"\x1b]0;pwned\x07" in piped           # piped: the tool's exact bytes, a manifest
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    code, shown, _ = run(capsysbinary, str(p))
    assert b"\x1b" not in shown and b"\\x1b]0;pwned\\x07" in shown


def test_help_names_every_option_of_the_tool(capsys):
    assert main(["hash", "--help"]) == 0
    out = capsys.readouterr().out
    for opt in ("--xxh64", "--sha1", "--sha256", "--xxh3", "--all", "--no-layer", "--uuid", "--check", "--json"):
        assert opt in out
