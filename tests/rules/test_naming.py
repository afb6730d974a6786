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


def _raw_keys(path, keys: list[bytes]):
    """A GGUF v3 file of uint32 entries under the given raw keys (no tensors)."""
    import struct
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(keys))
    for k in keys:
        body += struct.pack("<Q", len(k)) + k + struct.pack("<II", 4, 1)
    path.write_bytes(body)
    return path


def _walked(keys: list[str]) -> list[tuple[str, str]]:
    """GG401-GG404 as one walk over the keys finds them, key by key."""
    import re
    out = []
    for k in keys:
        if not k.isascii():
            out.append(("GG401", k))
        elif not re.fullmatch(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*", k):
            out.append(("GG402", k))
        if len(k.encode("utf-8", "surrogateescape")) > 65535:
            out.append(("GG403", k))
        if "." not in k:
            out.append(("GG404", k))
    return sorted(out)


def test_the_verdict_on_all_keys_at_once_names_every_key_a_walk_names(tmp_path):
    """The family judges the keys joined one a line first and walks them only when that
    finds something: a key holding a newline between two good-looking keys, one bad key
    at either end of many good ones, a key of 16,383 or 16,384 four-byte characters and
    one of bytes that are not UTF-8 are each named as a walk over the keys names them."""
    import ggscope
    from ggscope.validate.runner import selected_rules, validate
    good = [f"general.k{i}".encode() for i in range(30)]
    cases = [good, [b"a.b\nc.d"] + good, good + [b"a.b\n"], [b"Bad.key"] + good, good + [b"general..x"],
             good + ["a.".encode() + "\U0001F600".encode() * 16_383], [b"a." + b"\xf0\x9f\x98\x80" * 16_384],
             good + [b"a." + b"b" * 65_534], good + [b"x.\xff\xfe"], [b"nodot"] + good, [b"\n"], [b""] + good]
    for i, keys in enumerate(cases):
        path = _raw_keys(tmp_path / f"k{i}.gguf", keys)
        mf = ggscope.open(str(path))
        got = sorted((f.code, mf.metadata_types and f.message) for f in validate(mf, selected_rules(select=["naming"])))
        want = _walked(list(mf.metadata))
        assert [c for c, _ in got] == [c for c, _ in want], (i, got, want)
        mf.close()


def test_a_llama_cpp_architecture_names_its_keys_with_its_hyphens(tmp_path):
    """llama.cpp reads command-r's and gpt-oss's keys under those names (LLM_KV_NAMES with
    LLM_ARCH_NAMES): nothing to warn about; another hyphenated or cased prefix, and a
    bad segment after a known one, still are."""
    p = gguf(tmp_path, kvs=[KV("general.architecture", V.STRING, "command-r"),
                            KV("command-r.context_length", V.UINT32, 8),
                            KV("gpt-oss.expert_count", V.UINT32, 4)])
    assert [f.code for f in findings(p) if f.code == "GG402"] == []
    q = gguf(tmp_path, name="q.gguf", kvs=[KV("command-x.context_length", V.UINT32, 8),
                                           KV("command-r.Context", V.UINT32, 8),
                                           KV("Command-r.context_length", V.UINT32, 8)])
    assert [f.code for f in findings(q) if f.code == "GG402"] == ["GG402"] * 3
