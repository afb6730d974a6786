"""`ggscope info`: JSON contract, plain output when piped, errors as one paragraph + exit 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import ggscope
from ggscope.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def test_json_contract(capsys):
    assert main(["info", "--json", str(EXAMPLE)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"format", "version", "endian", "metadata", "tensors"} <= set(out)
    assert out["format"] == "gguf" and out["version"] == 3 and out["endian"] == "little"
    gguf = pytest.importorskip("gguf")
    r = gguf.GGUFReader(EXAMPLE)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    assert out["metadata"]["tokenizer.ggml.tokens"] == tokens          # complete, not summarised
    assert [t["name"] for t in out["tensors"]] == [t.name for t in r.tensors]
    for t, rt in zip(out["tensors"], r.tensors):
        assert set(t) >= {"name", "shape", "type", "offset", "nbytes"}
        assert (t["shape"], t["type"], t["offset"], t["nbytes"]) == \
               ([int(x) for x in rt.shape], rt.tensor_type.name, int(rt.data_offset), int(rt.n_bytes))


def test_plain_output_when_piped_summarises_long_arrays(capsys):
    assert main(["info", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out                      # no colour codes when not a terminal
    assert "format: gguf" in out and "token_embd.weight" in out
    line = next(x for x in out.splitlines() if "tokenizer.ggml.tokens" in x)
    assert "items]" in line and len(line) < 300


def test_damaged_file_is_one_paragraph_and_exit_2(tmp_path, capsys):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(EXAMPLE.read_bytes()[:1000])
    assert main(["info", str(cut)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offset" in err and "field" in err and "Traceback" not in err
    m = ggscope.open(cut)
    assert m.damage.path in err and str(m.damage.start) in err


def test_unknown_format_names_first_bytes_and_known_formats(tmp_path, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"PK\x03\x04 not a model")
    assert main(["info", str(junk)]) == 2
    err = capsys.readouterr().err
    assert "unknown format" in err and "50 4b 03 04" in err
    for name in ("gguf", "ggjt", "rwkv.cpp", "chatglm.cpp", "bit1"):
        assert name in err


def test_missing_file_exit_2(capsys):
    assert main(["info", "/nonexistent/model.gguf"]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tiny-2L-64d.bit1"])
def test_bundled_examples_open(name):
    m = ggscope.open(REPO / "ggscope" / "examples" / name)
    assert m.damage is None and m.root.end == m.file_size
