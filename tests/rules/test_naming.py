"""Key naming rules GG401-GG404 on files written by gguf-py."""
from gguf_writers import KV, V

from _helpers import codes, findings, gguf


def test_gguf_py_standard_keys_are_clean(tmp_path):
    p = gguf(tmp_path, kvs=[KV("general.name", V.STRING, "x"), KV("llama.rope.freq_base", V.FLOAT32, 1.0)])
    assert not codes(p, select=["naming"])


def test_non_ascii_key(tmp_path):
    p = gguf(tmp_path, kvs=[KV("général.name", V.STRING, "x")])
    fs = [f for f in findings(p) if f.code == "GG401"]
    assert len(fs) == 1 and fs[0].path.endswith("/key") and fs[0].severity.value == "error"


def test_upper_case_and_empty_segment(tmp_path):
    p = gguf(tmp_path, kvs=[KV("llama.RopeBase", V.UINT32, 1), KV("general..x", V.UINT32, 1)])
    assert [f.code for f in findings(p) if f.code == "GG402"] == ["GG402", "GG402"]


def test_long_key(tmp_path):
    p = gguf(tmp_path, kvs=[KV("a." + "b" * 65534, V.UINT32, 1), KV("a." + "b" * 65533, V.UINT32, 1)])
    assert [f.code for f in findings(p) if f.code == "GG403"] == ["GG403"]


def test_bare_key_not_namespaced(tmp_path):
    p = gguf(tmp_path, kvs=[KV("temperature", V.FLOAT32, 1.0)])
    assert "GG404" in codes(p)
