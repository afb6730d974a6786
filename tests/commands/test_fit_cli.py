"""``ggscope fit``: llama.cpp's buffers from the header, its CLI habits (JSON keys, exit
codes, usage errors, hostile text), and the same numbers in ``info``."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ggscope.cli import main

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tools.llama_memory_recipe import build, decoder, load, records  # noqa: E402

EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def _json(capsys, *argv) -> dict:
    assert main(["fit", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_the_named_totals(capsys):
    d = _json(capsys, str(EXAMPLE), "--ctx", "1000", "--cpu", "none")
    for key in ("model_bytes", "kv_bytes", "k_bytes", "v_bytes", "recurrent_bytes", "compute_bytes", "total_bytes"):
        assert isinstance(d[key], int), key
    assert d["n_ctx"] == 1024                         # GGML_PAD(n_ctx, 256)
    assert d["kv_bytes"] >= d["k_bytes"] + d["v_bytes"] > 0
    assert d["total_bytes"] == sum(b["bytes"] for b in d["buffers"])
    # the mapped range of the example file: first to last tensor byte
    assert d["buffers"][0] == {"kind": "model", "name": "CPU_Mapped", "bytes": d["model_bytes"]}


def test_kv_follows_context_and_cache_type(capsys):
    a = _json(capsys, str(EXAMPLE), "--ctx", "4096", "--cpu", "none")
    b = _json(capsys, str(EXAMPLE), "--ctx", "8192", "--cpu", "none")
    # its 16-wide heads: llama.cpp refuses a q8_0 cache with flash attention, takes a q8_0 K without
    c = _json(capsys, str(EXAMPLE), "--ctx", "8192", "-ctk", "q8_0", "-fa", "off", "--cpu", "none")
    assert b["k_bytes"] == 2 * a["k_bytes"]
    assert c["k_bytes"] * 32 == b["k_bytes"] * 17       # q8_0: 34 bytes per 32 values against 64


def test_text_lines_use_llama_cpp_names_and_match_a_record(tmp_path, capsys):
    rec = next(load(p) for p in records() if p.stem.startswith("gemma-3-270m"))
    path = build(rec, tmp_path / "g.gguf")
    run = next(r for r in rec["runs"] if r["params"]["ctx"] == 4096 and not r["params"]["flash_attn"]
               and r["params"]["swa_full"] and r["params"]["type_k"] == "f16")
    assert main(["fit", str(path), "--ctx", "4096", "-b", "512", "-fa", "off", "--swa-full", "--cpu", "avx2"]) == 0
    out = capsys.readouterr().out
    for name, mib in run["llama"]["model"].items():
        assert f"{name} model buffer size = {mib:8.2f} MiB" in out
    for kv in run["llama"]["kv"]:
        assert f"KV buffer size = {kv['mib']:8.2f} MiB" in out


def test_vram_converse(tmp_path, capsys):
    path = build({"recipe": decoder("llama", 4, 256, 4, 2, 64, 512, 1000, n_ctx_train=8192)}, tmp_path / "m.gguf")
    assert main(["fit", str(path), "--cpu", "none", "--vram", "64M", "1K", "--json"]) == 1   # 1K: nothing fits
    big, tiny = json.loads(capsys.readouterr().out)["vram"]
    assert 0 < big["max_ctx"] <= 8192 and big["max_ctx"] % 256 == 0
    assert tiny == {"bytes": 1024, "max_ctx": 0, "max_ngl": 0}
    assert main(["fit", str(path), "--cpu", "none", "--vram", "64M"]) == 0
    assert "context up to" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--vram", "lots"], ["--cache-type-k", "q3_k"], ["--cpu", "sse9"], ["--ubatch", "0"]])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        rc = main(["fit", str(EXAMPLE), *argv])
        raise SystemExit(rc)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ggscope" in err


def test_unsizable_and_hostile_header_is_one_line(tmp_path, capsys):
    path = build({"recipe": decoder("llama\x1b[2J", 1, 64, 4, 4, 16, 64, 300)}, tmp_path / "evil.gguf")
    assert main(["fit", str(path), "--cpu", "none"]) in (0, 2)
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    bad = build({"recipe": {**decoder("llama", 2, 64, 4, 4, 16, 64, 300),
                            "metadata": {**decoder("llama", 2, 64, 4, 4, 16, 64, 300)["metadata"],
                                         "llama.block_count": {"type": "UINT32", "value": 100000}}}},
                tmp_path / "bad.gguf")
    assert main(["fit", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "cannot size" in err and "Traceback" not in err


def test_info_shows_the_same_plan(capsys):
    assert main(["info", "--json", str(EXAMPLE)]) == 0
    info = json.loads(capsys.readouterr().out)["memory"]
    assert info["n_ctx"] == 4096 and info["total_bytes"] > 0
    assert main(["info", str(EXAMPLE)]) == 0
    assert "llama.cpp memory:" in capsys.readouterr().out
