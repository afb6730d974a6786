"""Split models, written by gguf-py's own splitting writer (GGUFWriter(split_max_tensors=)):
any shard, local or remote, opens the whole model; validate checks the set as llama.cpp's
split loader does."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from ggscope.cli import main  # noqa: E402
from ggscope.model.split import open_model, shard_paths  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
sys.path.insert(0, str(Path(__file__).resolve().parent / "remote"))


def rewrite(src: Path, dst: Path, *, arch: str | None = None, split_max_tensors: int = 0,
            drop: tuple[str, ...] = ()) -> None:
    """Copy ``src`` key by key and tensor by tensor with gguf-py (reader -> writer)."""
    r = gguf.GGUFReader(src)
    a = arch or r.fields["general.architecture"].contents() if "general.architecture" in r.fields else arch
    w = gguf.GGUFWriter(dst, a, split_max_tensors=split_max_tensors)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in drop:
            continue
        vt = f.types[0]
        w.add_key_value(name, f.contents(), vt, sub_type=f.types[-1] if vt == gguf.GGUFValueType.ARRAY else None)
    for t in r.tensors:
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture
def shards(tmp_path) -> list[Path]:
    if not Q8.is_file():
        pytest.skip(f"{Q8} missing; run python fixtures/make_fixtures.py")
    rewrite(Q8, tmp_path / "Tiny.gguf", split_max_tensors=8)
    got = sorted(tmp_path.glob("Tiny-*-of-*.gguf"))
    assert [p.name for p in got] == [f"Tiny-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    return got


def _json(capsys, *argv):
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_shard_paths():
    assert shard_paths("hf://o/r/m-00002-of-00003.gguf@v1") == [
        f"hf://o/r/m-0000{i}-of-00003.gguf@v1" for i in (1, 2, 3)]
    assert shard_paths("http://h/x/m-00001-of-00002.gguf")[1] == "http://h/x/m-00002-of-00002.gguf"
    assert shard_paths("m.gguf") is None and shard_paths("m-00004-of-00003.gguf") is None


def test_info_from_any_shard_lists_every_tensor_with_its_shard(shards, capsys):
    want = [(t.name, list(map(int, t.shape))) for t in gguf.GGUFReader(Q8).tensors]
    owner = {t.name: i for i, p in enumerate(shards, 1) for t in gguf.GGUFReader(p).tensors}
    for p in shards:
        code, out = _json(capsys, "info", "--json", str(p))
        assert code == 0
        assert [(t["name"], t["shape"]) for t in out["tensors"]] == want
        assert {t["name"]: t["shard"] for t in out["tensors"]} == owner
        assert out["metadata"]["general.architecture"] == "llama"


def test_stats_diff_run_see_the_whole_model(shards, capsys):
    _, local = _json(capsys, "stats", "--json", str(Q8))
    _, split = _json(capsys, "stats", "--json", str(shards[2]))
    strip = lambda d: [{k: v for k, v in t.items() if k != "file"} for t in d["tensors"]]  # noqa: E731
    assert strip(split) == strip(local)
    code, diff = _json(capsys, "diff", "--json", str(shards[1]), str(Q8))
    # offsets move between files; the values are bit-identical
    assert all(t["max_abs"] == 0.0 and set(t["changes"]) <= {"offset"} for t in diff["tensors"]), diff["tensors"]
    assert len(diff["tensors"]) == len(gguf.GGUFReader(Q8).tensors)
    _, a = _json(capsys, "run", str(Q8), "--tokens", "1,2,3", "--json")
    _, b = _json(capsys, "run", str(shards[2]), "--tokens", "1,2,3", "--json")
    assert a == b


def test_whole_model_api_reads_each_tensor_from_its_shard(shards):
    mf = open_model(str(shards[1]))
    ref = gguf.GGUFReader(Q8)
    for t in ref.tensors:
        mine = mf.tensor(t.name)
        assert np.array_equal(mine.raw(), np.asarray(t.data).reshape(-1).view(np.uint8))


def _gg803(capsys, *paths):
    code = main(["validate", "--format", "json", *map(str, paths)])
    out = json.loads(capsys.readouterr().out)
    return code, [f for f in out if f["code"] == "GG803"], out


def test_validate_a_healthy_set_like_llama_cpp(shards, capsys):
    code, gg803, out = _gg803(capsys, *shards)
    assert code == 0 and not gg803
    assert not [f for f in out if f["severity"] == "error"]   # later shards carry no model keys: fine


def test_validate_missing_shard_and_disagreeing_architecture(shards, capsys, tmp_path):
    other = tmp_path / "other.gguf"
    rewrite(shards[1], other, arch="gpt2")
    shards[1].write_bytes(other.read_bytes())
    code, gg803, _ = _gg803(capsys, shards[0])
    assert code == 1 and any('general.architecture = "gpt2"' in f["message"] for f in gg803)
    shards[2].unlink()
    code, gg803, _ = _gg803(capsys, shards[0])
    assert code == 1 and any("1 of 3 shards missing: 3" in f["message"] for f in gg803)


def test_validate_rejects_a_later_shard_without_split_no(shards, capsys, tmp_path):
    other = tmp_path / "other.gguf"
    rewrite(shards[2], other, drop=("split.no",))
    shards[2].write_bytes(other.read_bytes())
    _, gg803, _ = _gg803(capsys, shards[0])
    assert any("has no split.no" in f["message"] for f in gg803)


def test_remote_shards(shards, capsys):
    from range_server import RangeServer
    with RangeServer() as server:
        urls = [server.serve(f"/m/{p.name}", p) for p in shards]
        code, out = _json(capsys, "info", "--json", urls[1])
        assert code == 0 and len(out["tensors"]) == len(gguf.GGUFReader(Q8).tensors)
        code, gg803, _ = _gg803(capsys, urls[0])
        assert code == 0 and not gg803
    with RangeServer() as server:
        urls = [server.serve(f"/m/{p.name}", p) for p in shards[:2]]
        server.status(f"/m/{shards[2].name}", 404)
        code, gg803, _ = _gg803(capsys, urls[0])
        assert code == 1 and any("1 of 3 shards missing: 3" in f["message"] for f in gg803)
        assert main(["info", urls[0]]) == 2
        err = capsys.readouterr().err
        assert "shard 3 of 3" in err and "not found (HTTP 404)" in err and "Traceback" not in err


def _findings(capsys, path):
    code = main(["validate", "--format", "json", str(path)])
    return code, sorted((f["file"].rsplit("/", 1)[-1], f["code"], f["message"])
                        for f in json.loads(capsys.readouterr().out))


def test_validate_any_shard_gives_the_same_findings_for_the_whole_set(shards, capsys):
    got = [_findings(capsys, p) for p in shards]
    assert got[0] == got[1] == got[2]


def test_validate_missing_shard_named_once_without_cascade(shards, capsys):
    shards[1].unlink()
    for p in (shards[0], shards[2]):
        code, found = _findings(capsys, p)
        assert code == 1
        # the set's own findings only: file names (GG801) and the example template's
        # tokens (GG13xx: the same on every shard) are not about the missing shard
        errors = [f for f in found if f[1] != "GG801" and not f[1].startswith("GG13")]
        assert [f[1] for f in errors] == ["GG803"], errors
        assert shards[1].name in errors[0][2]


def test_validate_one_set_once_when_every_shard_is_given(shards, capsys):
    shards[2].unlink()
    code = main(["validate", "--format", "json", *map(str, shards[:2])])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and [f["code"] for f in out if f["code"] == "GG803"] == ["GG803"]


def test_info_names_the_shard_given_and_the_set(shards, capsys):
    total = sum(p.stat().st_size for p in shards)
    for i, p in enumerate(shards, 1):
        assert main(["info", str(p)]) == 0
        out = capsys.readouterr().out
        head = dict(x.split(": ", 1) for x in out.split("\n\n")[0].splitlines())
        assert head["file"] == f"{p} (shard {i} of 3)"
        assert head["split model"] == "3 shards: " + ", ".join(s.name for s in shards)
        assert head["size"].startswith(f"{total:,} bytes") and head["architecture"] == "llama"
        assert not [x for x in out.split("\n\n")[0].splitlines() if "['" in x or '["' in x]   # no repr
        code, doc = _json(capsys, "info", "--json", str(p))
        assert doc["file"] == str(p) and doc["summary"]["file_size"] == total
