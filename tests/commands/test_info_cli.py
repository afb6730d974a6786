"""`ggscope info`: JSON contract, plain output when piped, errors as one paragraph + exit 2."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
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


def _gguf_fixtures():
    from tests.conftest import SHARED_FIXTURES
    if not SHARED_FIXTURES.is_dir():
        return []
    small = [p for p in sorted(SHARED_FIXTURES.glob("**/*.gguf")) if p.stat().st_size < (1 << 20)]
    return small[::max(1, len(small) // 50)]


def _surrogates(s: str) -> bool:
    try:
        s.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


@pytest.mark.parametrize("path", _gguf_fixtures(), ids=lambda p: p.name)
def test_json_metadata_equals_gguf_py(path, capsys):
    """Every metadata value of ``info --json`` is what gguf-py reads, element for element,
    and the output is valid UTF-8 (the bulk conversion of arrays must not change a value)."""
    gguf = pytest.importorskip("gguf")
    try:
        fields = gguf.GGUFReader(path).fields
    except Exception as exc:        # a damaged fixture gguf-py refuses: nothing to compare with
        pytest.skip(f"gguf-py cannot read {path.name}: {exc}")
    mf = ggscope.open(path)
    if mf.damage is not None:
        pytest.skip(f"{path.name} is damaged")
    if any(isinstance(v, str) and not v.isascii() and _surrogates(v) or hasattr(v, "invalid_utf8") and v.invalid_utf8()
           for v in mf.metadata.values()):
        pytest.skip(f"{path.name} holds non-UTF-8 strings (their JSON form is issue 13, item 4)")
    assert main(["info", "--json", str(path)]) == 0
    text = capsys.readouterr().out
    text.encode("utf-8")            # raises on a lone surrogate: the output is not UTF-8
    meta = json.loads(text)["metadata"]
    checked = 0
    for key, field in fields.items():
        if key.startswith("GGUF.") or key not in meta:
            continue
        want = field.contents()
        if isinstance(want, list) and want and isinstance(want[0], float) and not all(map(math.isfinite, want)):
            continue
        assert meta[key] == want, key
        checked += 1
    assert checked == len(meta)


@pytest.mark.parametrize("items", [
    ["plain", "ascii", "Ġthe", "日本語", ""],
    ['a "quote"', "back\\slash", "tab\tnew\nline", "\x01ctl", "ok"],
    [],
])
def test_write_json_is_json_dumps_of_as_json(tmp_path, items):
    """The piecewise writer (string arrays straight from bytes) gives json.dumps's text."""
    import io

    gguf = pytest.importorskip("gguf")
    from ggscope.report import info as render
    path = tmp_path / "s.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_array("test.strings", items) if items else w.add_string("test.empty", "")
    w.add_array("test.floats", [1.5, float("nan"), -float("inf")])
    w.add_array("test.ints", [1, 2, 3])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    mf = ggscope.open(path)
    buf = io.StringIO()
    render.write_json(mf, buf)
    assert buf.getvalue() == json.dumps(render.as_json(mf), ensure_ascii=False, allow_nan=False)
    if items:
        assert json.loads(buf.getvalue())["metadata"]["test.strings"] == items


@pytest.mark.parametrize("arr", [
    np.array([0], np.int32), np.array([-1, 0, 1, 9, 10, 99, 100, -100, 12345], np.int64),
    np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]),
    np.array([np.iinfo(np.uint64).max, 0, 5, 2 ** 32], np.uint64),
    np.array([0, 255, 7], np.uint8), np.array([-128, 127, 0], np.int8), np.array([-32768, 32767], np.int16),
    -np.arange(5000, dtype=np.float32), np.array([-0.0, 0.0, 1.0, -3.0], np.float32),
    np.array([9999999999999998.0, -1e15, 1e16]), np.array([0.5, 1.0]), np.array([np.nan, 1.0]),
    np.array([np.inf, 2.0]), np.array([], np.float32), np.array([], np.int32), np.array([True, False]),
    np.array([1.0, 65504.0], np.float16),
    np.random.default_rng(0).integers(-10 ** 15, 10 ** 15, 2000),
    np.random.default_rng(1).integers(0, 10 ** 6, 2000).astype(np.float32),
], ids=lambda a: f"{a.dtype}-{len(a)}")
def test_number_arrays_written_in_bulk_are_json_dumps(arr):
    """Integer arrays and whole-number float arrays (token scores) are written as digits
    computed in numpy; the text must be json.dumps's, character for character, including
    -0.0, int64's extremes, 1e16 (where repr switches to an exponent) and non-finite values."""
    from ggscope.report.jsonable import jsonable, value_json
    assert value_json(arr) == json.dumps(jsonable(arr), ensure_ascii=False, allow_nan=False)


@pytest.mark.parametrize("compiled", [True, False], ids=["c", "numpy"])
@pytest.mark.parametrize("width,tail", [(8, 0), (4, 0), (4, 4), (8, 3), (2, 0), (1, 0)])
@pytest.mark.parametrize("items", [
    ["plain", "Ġthe", "日本語", "", "a b", "x"],
    ['a "quote"', "ok"], ["back\\slash"], ["tab\t"], ["\xff-not-utf8"],
])
def test_string_array_json_from_bytes_is_json_dumps(width, tail, items, compiled, monkeypatch):
    """String arrays are written from their bytes (the prefixes' last bytes become the
    separators): the text is json.dumps's, for any prefix width, with or without
    fixed-size fields after each string (a legacy vocabulary's scores), and the array
    falls back to the general path when a string needs escaping or is not UTF-8."""
    import ggscope.report.jsonable as J
    from ggscope.report.jsonable import jsonable, value_json
    from ggscope.ksy.scan import StringArray
    if compiled and J._cjson is None:
        pytest.skip("ggscope.report._cjson not built")
    if not compiled:
        monkeypatch.setattr(J, "_cjson", None)              # the numpy route
    raw = [s.encode("utf-8") if not s.startswith("\xff") else b"\xff-not-utf8" for s in items]
    data = bytearray(b"pad")
    for b in raw:
        data += len(b).to_bytes(width, "little") + b + b"\x07" * tail
    arr = np.frombuffer(bytes(data), dtype=np.uint8)
    sa = StringArray(arr, 3, np.array([len(b) for b in raw], np.uint8), width, "utf-8", tail=tail)
    joined = sa.joined_with(b'", "')
    if width >= 4:
        assert joined is not None and joined.tobytes() == b"".join(b'", "' + b for b in raw)
    else:
        assert joined is None
    assert value_json(sa) == json.dumps(jsonable(sa), ensure_ascii=False, allow_nan=False)


def test_compiled_string_join_refuses_strings_outside_the_buffer():
    """The C join checks every string against the buffer before copying (a scan never
    makes such an array; the check keeps a wrong one from reading past the map)."""
    import ggscope.report.jsonable as J
    if J._cjson is None:
        pytest.skip("ggscope.report._cjson not built")
    arr = np.frombuffer(b"\x02\x00ab\x01\x00c", dtype=np.uint8)
    u8, u32 = np.uint8, np.uint32
    assert J._cjson.join_json(arr, 0, np.array([2, 1], u8), 1, b"", 0, 2, 0) == b'["ab", "c"]'    # back to back
    assert J._cjson.join_json(arr, 0, np.array([1, 2], u8), 1, np.array([4, 0], u32), 4, 2, 0) == b'["c", "ab"]'
    for first, lens, rel in ((0, [2, 2], None), (1, [2, 1], None), (0, [2, 1], [4, 4]), (7, [0], None),
                             (0, [1], [8])):
        r = np.array(rel, u32) if rel is not None else b""
        with pytest.raises(ValueError):
            J._cjson.join_json(arr, first, np.array(lens, u8), 1, r, 4 if rel is not None else 0, 2, 0)


def test_overview_facts_in_text_and_json(capsys):
    """File type by name, parameters, bits per weight and the type table, against gguf-py."""
    gguf = pytest.importorskip("gguf")
    r = gguf.GGUFReader(EXAMPLE)
    ft = int(r.fields["general.file_type"].contents())
    n_params = sum(int(t.n_elements) for t in r.tensors)
    nbytes = sum(int(t.n_bytes) for t in r.tensors)
    by_type: dict[str, list[int]] = {}
    for t in r.tensors:
        by_type.setdefault(t.tensor_type.name, [0, 0])
        by_type[t.tensor_type.name][0] += 1
        by_type[t.tensor_type.name][1] += int(t.n_bytes)
    assert main(["info", "--json", str(EXAMPLE)]) == 0
    sm = json.loads(capsys.readouterr().out)["summary"]
    assert sm["file_type"] == gguf.LlamaFileType(ft).name.removeprefix("MOSTLY_")
    assert sm["n_params"] == n_params and sm["tensor_bytes"] == nbytes
    assert math.isclose(sm["bits_per_weight"], 8 * nbytes / n_params)
    assert {t["type"]: [t["tensors"], t["bytes"]] for t in sm["tensor_types"]} == by_type
    assert main(["info", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert f"file type: {sm['file_type']} ({ft})" in out
    assert f"({n_params:,})" in out and f"bits per weight: {8 * nbytes / n_params:.2f}" in out
    assert "tensor types:" in out


def test_floats_as_stored_and_offsets_in_one_base(tmp_path, capsys):
    from gguf_writers import KV, V, write_gguf_py
    p = write_gguf_py(tmp_path / "f.gguf", kvs=[KV("general.architecture", V.STRING, "llama"),
                                                KV("llama.attention.layer_norm_rms_epsilon", V.FLOAT32, 1e-5),
                                                KV("x.f64", V.FLOAT64, 0.1)])
    assert main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "layer_norm_rms_epsilon" in x)
    assert line.split()[-1] == "1e-05" and "9.99999" not in out
    assert next(x for x in out.splitlines() if "x.f64" in x).split()[-1] == "0.1"
    assert main(["info", str(EXAMPLE)]) == 0
    dec = capsys.readouterr().out
    assert main(["info", "--hex", str(EXAMPLE)]) == 0
    hexed = capsys.readouterr().out
    row = lambda t, name: next(x for x in t.splitlines() if x.split()[:1] == [name]).split()  # noqa: E731
    off = int(row(dec, "output.weight")[3])
    assert row(hexed, "output.weight")[3] == f"{off:#x}" and "0x" not in dec
