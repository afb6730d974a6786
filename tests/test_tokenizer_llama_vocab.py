"""The GGUF tokenizer against llama.cpp's own tokenizer test vectors.

Oracle: ../shared/fixtures/llama-vocab (MANIFEST.md there): for each real vocabulary
``ggml-vocab-<name>.gguf``, llama.cpp's ``.inp`` texts (separated by lines
``__ggml_vocab_test__``) and the ids llama.cpp's tokenizer produced, one line per text
in ``.out`` (no BOS).  Every pair with an ``.inp``/``.out`` is a case and must pass;
the ones the issues name are required in the reproduced count.
``test_report_reproduced_count`` prints how many vocabularies are reproduced exactly.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import ggscope
from ggscope.model.tokenizer import TokenizerError, load

VOCAB = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures" / "llama-vocab"
REQUIRED = {"llama-spm", "gpt-2", "falcon", "starcoder", "deepseek-coder", "bert-bge"}
SEP = "\n__ggml_vocab_test__\n"


def _names() -> list[str]:
    if not VOCAB.is_dir():
        return sorted(REQUIRED)
    return sorted(p.name[len("ggml-vocab-"):-len(".gguf.inp")] for p in VOCAB.glob("ggml-vocab-*.gguf.inp"))


def read_cases(name: str) -> list[tuple[str, list[int]]]:
    """llama.cpp's test-tokenizer-0 reading: texts split by the separator line, ids one line each."""
    base = VOCAB / f"ggml-vocab-{name}.gguf"
    texts = base.with_name(base.name + ".inp").read_text(encoding="utf-8").split(SEP)
    if texts and texts[-1] == "":
        texts.pop()
    elif texts and texts[-1].endswith(SEP.rstrip("\n")):
        texts[-1] = texts[-1][: -len(SEP.rstrip("\n"))]
    lines = base.with_name(base.name + ".out").read_text(encoding="utf-8").split("\n")
    ids = [[int(x) for x in line.split()] for line in lines[:len(texts)]]
    assert len(ids) == len(texts)
    return list(zip(texts, ids))


def mismatches(name: str) -> list[tuple[str, list[int], list[int]]]:
    tok = load(ggscope.open(VOCAB / f"ggml-vocab-{name}.gguf"))
    return [(text, want, got) for text, want in read_cases(name)
            if (got := tok.encode(text, add_bos=False)) != want]


@pytest.mark.parametrize("name", _names())
def test_llama_cpp_vectors(name, shared_fixtures):
    bad = mismatches(name)
    assert not bad, f"{len(bad)} texts differ from llama.cpp, first: {bad[0]!r}"


def test_report_reproduced_count(shared_fixtures, capsys):
    names = _names()
    exact = [n for n in names if not mismatches(n)]
    with capsys.disabled():
        print(f"\nllama-vocab: ggscope reproduces {len(exact)} of {len(names)} vocabularies "
              f"exactly: {', '.join(exact)}")
    assert REQUIRED <= set(exact)


def test_spm_adds_bos_and_decodes(shared_fixtures):
    tok = load(ggscope.open(VOCAB / "ggml-vocab-llama-spm.gguf"))
    ids = tok.encode("Hello world")
    assert ids[0] == 1 and tok.decode(ids[1:]) == "Hello world"


def test_byte_level_for_vocab_of_256_bytes(shared_fixtures):
    tok = load(ggscope.open(shared_fixtures / "ggml-legacy" / "gpt2-tiny-f32.bin"))
    assert tok.encode("Hello") == [72, 101, 108, 108, 111]


def test_no_vocabulary_is_a_clear_error(tmp_path):
    from gguf_writers import write_gguf_py
    with pytest.raises(TokenizerError, match="--tokens"):
        load(ggscope.open(write_gguf_py(tmp_path / "m.gguf")))
