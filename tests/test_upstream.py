"""Facts from gguf-py at run time, and the dated overlay of what upstream added since.

The overlay must only hold what the installed gguf-py lacks: each test below fails as
soon as a gguf-py release carries the entry itself, so the entry is then deleted from
``ggscope/upstream_overlay.py``.
"""
import inspect
import json
import os
from pathlib import Path

import gguf
import gguf.constants as c
import pytest

from ggscope.facts import upstream
from ggscope.facts import upstream_overlay as overlay


def test_every_overlay_entry_cites_a_dated_source():
    assert len(overlay.SOURCES) == 5
    for entry, src in overlay.SOURCES.items():
        assert "20" in src and ("ggml" in src or "llama.cpp" in src), entry


@pytest.mark.parametrize("value,name", sorted(overlay.FILE_TYPES.items()))
def test_file_type_not_yet_in_gguf_py(value, name):
    assert value not in {int(m.value) for m in c.LlamaFileType}, f"gguf-py now has file type {value}: drop it"
    assert name not in c.LlamaFileType.__members__


@pytest.mark.parametrize("value,name", sorted(overlay.GGML_TYPES.items()))
def test_ggml_type_not_yet_in_gguf_py(value, name):
    assert value not in {int(m.value) for m in c.GGMLQuantizationType}, f"gguf-py now has ggml type {value}"
    assert name not in c.GGMLQuantizationType.__members__


def test_sidecar_prefix_not_yet_in_gguf_py_naming():
    # gguf-py's naming_convention() builds file names; it gains the Sidecar slot when it catches up
    params = inspect.signature(gguf.utility.naming_convention).parameters
    assert not {"sidecar", "sidecar_type"} & set(params)
    src = inspect.getsource(gguf.utility.naming_convention)
    assert not any(p.rstrip("-") in src for p in overlay.FILENAME_PREFIXES)


def test_reader_limits_not_yet_in_gguf_py():
    from gguf import gguf_reader
    for mod in (c, gguf_reader):
        src = inspect.getsource(mod)
        assert "MAX_STRING_LENGTH" not in src and "MAX_ARRAY_ELEMENTS" not in src


def test_facts_are_read_from_the_installed_package():
    assert upstream.arch_names() == frozenset(c.MODEL_ARCH_NAMES.values())
    assert {"gpt-oss", "command-r", "falcon-h1"} <= upstream.arch_names()
    ft = upstream.file_types()
    assert all(ft[int(m.value)] == m.name for m in c.LlamaFileType)
    assert ft[38] == "MOSTLY_MXFP4_MOE" and ft[41] == "MOSTLY_Q2_0"
    kt = upstream.key_types()
    # every key gguf-py's writer writes with a typed add_* is typed here
    assert kt["{arch}.context_length"] == "uint32"
    assert kt["{arch}.attention.layer_norm_rms_epsilon"] == "float32"
    assert kt["tokenizer.ggml.seperator_token_id"] == "uint32"
    assert len(kt) > 200
    base, block = upstream.arch_tensors("gpt-oss")
    assert "token_embd" in base and "attn_sinks" in block


def test_ggml_type_table_agrees_with_gguf_py_and_overlay():
    # ggscope.facts.ggml_types carries block layouts gguf-py has no notion of; its ids and names
    # must be the ones llama.cpp maintains
    from ggscope.facts import ggml_types
    for type_id, name in upstream.ggml_type_names().items():
        t = ggml_types.type_by_id(type_id)
        assert t.name == name and not t.removed, (type_id, name, t)


def test_facts_cache_holds_what_gguf_py_gives(tmp_path, monkeypatch):
    """What gguf-py gives is kept on disk per installed gguf-py: a second process reads
    the same table, key_types() in the same order (expected_key_type's precedence
    depends on it); a damaged cache file is computed past and rewritten."""
    monkeypatch.setenv("GGSCOPE_CACHE", "1")
    monkeypatch.setattr(upstream, "_cache_dir", lambda: str(tmp_path / "facts"))
    fresh = upstream._compute_facts()
    upstream._facts.cache_clear()
    try:
        assert upstream._facts() == fresh                                    # computed, then stored
        files = list((tmp_path / "facts").glob("facts-*.json"))
        assert len(files) == 1
        upstream._facts.cache_clear()
        monkeypatch.setattr(upstream, "_compute_facts", lambda: pytest.fail("the cache was not read"))
        got = upstream._facts()
        assert got == fresh and list(got["key_types"].items()) == list(fresh["key_types"].items())
        stored = json.loads(files[0].read_text())
        files[0].write_text('{"key_types": 5')                               # damaged
        upstream._facts.cache_clear()
        monkeypatch.setattr(upstream, "_compute_facts", lambda: fresh)
        assert upstream._facts() == fresh
        assert json.loads(files[0].read_text()) == stored and stored["value"] == fresh
        stored["stamp"] += "another gguf-py"                                  # same name, other files
        files[0].write_text(json.dumps(stored))
        upstream._facts.cache_clear()
        monkeypatch.setattr(upstream, "_compute_facts", lambda: {**fresh, "arch_names": ["recomputed"]})
        assert upstream._facts()["arch_names"] == ["recomputed"]
    finally:
        upstream._facts.cache_clear()


def test_facts_cache_names_the_installed_gguf_py(tmp_path, monkeypatch):
    monkeypatch.setenv("GGSCOPE_CACHE", "1")
    monkeypatch.setattr(upstream, "_cache_dir", lambda: str(tmp_path))
    before = upstream._cache_file("facts")[0]
    writer = Path(gguf.__file__).with_name("gguf_writer.py")
    st = writer.stat()
    real_stat = os.stat
    monkeypatch.setattr(upstream.os, "stat", lambda f, *a, **k: os.stat_result(
        (st.st_mode, 0, 0, 1, 0, 0, st.st_size + 1, 0, 0, 0)) if str(f) == str(writer) else real_stat(f, *a, **k))
    assert upstream._cache_file("facts")[0] != before                         # another gguf-py: another file


def test_the_table_is_gguf_pys():
    """Each fact as read straight from gguf-py's constants."""
    assert upstream.tokenizer_keys() == {a: k for a, k in vars(c.Keys.Tokenizer).items()
                                         if isinstance(k, str) and not a.startswith("_")}
    assert upstream.tokenizer_keys()["BOS_ID"] == "tokenizer.ggml.bos_token_id"
    assert upstream.arch_names() == frozenset(c.MODEL_ARCH_NAMES.values())
    for member, arch in c.MODEL_ARCH_NAMES.items():
        names = [c.TENSOR_NAMES[t] for t in c.MODEL_TENSORS.get(member, ()) if t in c.TENSOR_NAMES]
        assert upstream.arch_tensors(arch) == (
            frozenset(n for n in names if "{" not in n),
            frozenset(n[len("blk.{bid}."):] for n in names if n.startswith("blk.{bid}."))), arch
    assert upstream.arch_tensors("no-such-arch") is None
    for m in c.LlamaFileType:
        assert upstream.file_types()[int(m.value)] == m.name
    for m in c.GGMLQuantizationType:
        assert upstream.ggml_type_names()[int(m.value)] == m.name


def test_key_patterns_compiled_only_for_keys_that_can_match_them():
    """One odd key compiles the templates whose literal prefix it starts with, not all
    of them; the answers are those of every pattern compiled and tried in order."""
    import re

    from ggscope.facts import upstream
    g_exact, g_pat, a_exact, a_pat = upstream._templates()
    assert len(g_pat) + len(a_pat) > 4
    upstream._pattern.cache_clear()
    key = g_pat[0][1] + "7" + "x" * 3        # starts like the first global template, matches none
    upstream.expected_key_type(key, "llama")
    could = sum(key.startswith(p) for _, p, _, _ in g_pat)
    assert upstream._pattern.cache_info().currsize == could < len(g_pat) + len(a_pat)

    def reference(k: str, arch: str | None) -> str | None:
        rest = k[len(arch) + 1:] if arch and k.startswith(arch + ".") else None
        hits = [h for h in (g_exact.get(k), a_exact.get(rest) if rest is not None else None) if h is not None]
        if hits:
            return max(hits)[1]
        found = [(i, t) for i, _, rx, t in g_pat if re.fullmatch(rx, k)][:1]
        if rest is not None:
            found += [(i, t) for i, _, rx, t in a_pat if re.fullmatch(rx, rest)][:1]
        return min(found)[1] if found else None
    keys = ["general.base_model.0.name", "general.base_model.12.repo_url", "general.dataset.3.name",
            "llama.context_length", "general.base_model.x.name", "tokenizer.ggml.tokens", "no.such.key", key]
    keys += [p + "0" + rx[-20:].replace("\\", "") for _, p, rx, _ in g_pat]
    keys += ["llama." + p + "1" for _, p, _, _ in a_pat]
    for k in keys:
        assert upstream.expected_key_type(k, "llama") == reference(k, "llama"), k
