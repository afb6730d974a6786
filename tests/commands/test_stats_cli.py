"""``ggscope stats`` in-process: exit codes, glob selection, JSON shape and values."""
from __future__ import annotations

import json

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize

import ggscope
from ggscope.cli import main
from tests.conftest import REPO

FIXTURE = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


@pytest.fixture
def fixture_path():
    if not FIXTURE.exists():
        pytest.skip(f"{FIXTURE} missing: run fixtures/make_fixtures.py")
    return str(FIXTURE)


def test_json_of_one_tensor_matches_gguf_py(fixture_path, capsys):
    assert main(["stats", "--json", "--bins", "16", fixture_path, "blk.0.attn_q.weight"]) == 0
    out = json.loads(capsys.readouterr().out)
    (s,) = out["tensors"]
    with ggscope.open(fixture_path) as mf:
        t = mf.tensor("blk.0.attn_q.weight")
        ref = dequantize(np.asarray(t.raw()), Q[t.type]).astype(np.float64)
    assert s["name"] == "blk.0.attn_q.weight" and s["count"] == ref.size
    assert s["min"] == ref.min() and s["max"] == ref.max()
    assert s["std"] == pytest.approx(ref.std(), rel=1e-5)
    assert len(s["histogram"]["counts"]) == 16 and out["errors"] == []


def test_glob_and_plain_text(fixture_path, capsys):
    assert main(["stats", "--color", "never", fixture_path, "blk.*.ffn_down.weight"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["name", "type", "count", "min"]
    with ggscope.open(fixture_path) as mf:
        want = [t.name for t in mf.tensors if t.name.endswith(".ffn_down.weight")]
    assert [ln.split()[0] for ln in lines[1:]] == want


def test_rich_output_on_request(fixture_path, capsys):
    assert main(["stats", "--color", "always", fixture_path, "output_norm.weight"]) == 0
    assert "output_norm.weight" in capsys.readouterr().out


def test_unknown_tensor_and_bad_file(fixture_path, tmp_path, capsys):
    assert main(["stats", fixture_path, "no.such.tensor"]) == 2
    assert "no tensor matches" in capsys.readouterr().err
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 10)
    assert main(["stats", str(bad)]) == 2
    assert main(["stats", "--bins", "0", fixture_path]) == 2
