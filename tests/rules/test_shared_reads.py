"""What several rules read of one file is read once per file, not once per rule.

Why: ten rules walk the metadata entries and six ask for the templates; each walk is
small, but per file they added up to a tenth of what ``validate`` costs beyond ``info``
on a vocabulary file (issue 27 item 3).  The answers are held to a fresh walk.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ggscope
from ggscope.ksy.node import Node
from ggscope.rules import common
from ggscope.rules.templates import sources
from ggscope.validate.runner import selected_rules, validate

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def test_the_metadata_entries_are_walked_once_per_file(monkeypatch):
    mf = ggscope.open(str(EXAMPLE))
    walks = []
    real = Node.children

    def children(node):
        if node.name == "metadata_kv" and sys._getframe(1).f_code.co_name == "kv_nodes":
            walks.append(node)                  # a walk for the rules (finding locations are apart)
        return real.fget(node)

    monkeypatch.setattr(Node, "children", property(children))
    validate(mf, selected_rules())
    assert len(walks) == 1
    monkeypatch.setattr(Node, "children", real)
    fresh = ggscope.open(str(EXAMPLE))
    assert [kv.path for kv in common.kv_nodes(mf)] == [kv.path for kv in common.kv_nodes(fresh)]


def test_the_templates_are_gathered_once_per_file():
    mf = ggscope.open(str(EXAMPLE))
    first = sources.templates(mf)
    assert sources.templates(mf) is first
    assert [t.key for t in first] == [k for k in mf.metadata if k == "tokenizer.chat_template"
                                      or k.startswith("tokenizer.chat_template.")]


# --- the special tokens: found and gathered once per file -------------------------------

def _vocab_file(tmp_path, tokens: list[str], types: list[int]):
    from gguf import GGUFValueType as V
    from gguf_writers import GArray, KV, write_gguf_py
    return write_gguf_py(tmp_path / "v.gguf", kvs=[
        KV("tokenizer.ggml.model", V.STRING, "gpt2"),
        KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, tuple(tokens))),
        KV("tokenizer.ggml.token_type", V.ARRAY, GArray(V.INT32, tuple(types))),
        KV("tokenizer.ggml.bos_token_id", V.UINT32, 1),
        KV("tokenizer.chat_template", V.STRING, "{% for m in messages %}<s>{{ m.content }}</s>{% endfor %}")])


def _counting(monkeypatch, module, *names) -> dict[str, int]:
    calls = dict.fromkeys(names, 0)
    for name in names:
        real = getattr(module, name)

        def counted(*a, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(*a, **kw)
        monkeypatch.setattr(module, name, counted)
    return calls


def test_the_special_tokens_bytes_are_gathered_once_per_file(tmp_path, monkeypatch):
    """GG1308 (the special tokens' texts), GG1310 (their joined text) and the per-token
    check share one gather of their bytes and one search for their ids."""
    from ggscope.rules import vocab_bytes
    tokens = [f"tok{i}" for i in range(40)] + [f"<|special {i}|>" for i in range(20)] + ["\u200bhidden"]
    types = [1] * 40 + [3] * 20 + [4]
    path = _vocab_file(tmp_path, tokens, types)
    reads = _counting(monkeypatch, vocab_bytes, "texts", "joined_texts")
    finds = _counting(monkeypatch, sources, "_find_special_ids")
    mf = ggscope.open(str(path))
    got = validate(mf, selected_rules())
    assert reads["texts"] + reads["joined_texts"] == 1, reads
    assert finds["_find_special_ids"] == 1
    hidden = [f.message for f in got if f.code == "GG1310"]
    assert hidden == ['special token 60 "\\u200bhidden": 1 invisible character (U+200B ZERO WIDTH SPACE)'], hidden


def test_the_special_tokens_texts_are_those_of_their_ids(tmp_path):
    """Split from the joined text only when that is exact: a special token holding a
    newline sends the texts back to the read by id."""
    from ggscope.rules import vocab_bytes
    for extra in (["<|a|>", "<|b\n|>", "\n"], ["<|a|>", "<|\udcff|>".encode("utf-8", "surrogateescape")
                                                   .decode("utf-8", "replace"), "é"]):
        tokens = [f"t{i}" for i in range(30)] + [f"<|s{i}|>" for i in range(20)] + extra
        types = [1] * 30 + [3] * (20 + len(extra))
        path = _vocab_file(tmp_path, tokens, types)
        mf = ggscope.open(str(path))
        ids, texts = sources.special_tokens(mf)
        assert ids == [1, *range(30, len(tokens))]
        assert texts == vocab_bytes.texts(mf.metadata["tokenizer.ggml.tokens"], ids) == [tokens[i] for i in ids]
        assert sources.special_text(mf) == "\n".join(texts)
        mf.close()


def test_the_special_ids_are_the_typed_ones_and_those_keys_name(tmp_path):
    tokens = [f"t{i}" for i in range(50)]
    types = [1] * 50
    types[7] = types[44] = 3
    types[12] = 4
    mf = ggscope.open(str(_vocab_file(tmp_path, tokens, types)))     # bos_token_id 1 lies between none of them
    assert sources._find_special_ids(mf) == [1, 7, 12, 44]
    assert all(type(i) is int for i in sources._find_special_ids(mf))


def test_the_named_special_tokens_are_those_of_their_ids(tmp_path, shared_fixtures):
    """``special_texts`` (bos_token, eos_token, ... for the template renders) is taken
    from the special tokens' one read, once per file: the same texts as indexing the
    vocabulary by each key's id - on a file written here (its BOS an ordinary token,
    not one of the control tokens) and on the real vocabularies."""
    from ggscope.facts import upstream
    tokens = [f"tok{i}" for i in range(40)] + [f"<|special {i}|>" for i in range(20)] + ["\u200bhidden"]
    paths = [_vocab_file(tmp_path, tokens, [1] * 40 + [3] * 20 + [4])]
    paths += sorted((shared_fixtures / "llama-vocab").glob("*.gguf"))
    keys = upstream.tokenizer_keys()
    by_name = {"bos_token": "BOS_ID", "eos_token": "EOS_ID", "unk_token": "UNK_ID", "sep_token": "SEP_ID",
               "pad_token": "PAD_ID", "mask_token": "MASK_ID"}
    for path in paths:
        mf = ggscope.open(str(path))
        toks = mf.metadata["tokenizer.ggml.tokens"]
        want = {}
        for name, attr in by_name.items():
            tid = mf.metadata.get(keys[attr])
            want[name] = toks[tid] if isinstance(tid, int) and 0 <= tid < len(toks) else ""
        got = sources.special_texts(mf)
        assert got == want, path
        got["bos_token"] = "changed"                       # a copy: the file's record stays
        assert sources.special_texts(mf) == want
