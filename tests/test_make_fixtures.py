"""fixtures/make_fixtures.py is deterministic, its committed output is current, its Q4_K
packing agrees with gguf-py's dequantizer, and gguf-py reads the files it wrote.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader, GGMLQuantizationType as Q
from gguf.quants import dequantize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return make_fixtures.make_all(tmp_path_factory.mktemp("fx"))


def test_same_bytes_every_run(generated, tmp_path):
    again = make_fixtures.make_all(tmp_path)
    assert [p.name for p in again] == [p.name for p in generated]
    for a, b in zip(generated, again):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_committed_fixtures_are_current(generated):
    for p in generated:
        committed = FIXTURES / p.name
        assert committed.is_file(), f"{committed} missing: run python fixtures/make_fixtures.py"
        assert committed.read_bytes() == p.read_bytes(), f"{committed} is stale: rerun make_fixtures.py"
        assert p.stat().st_size < 300_000


def test_q4_k_packing_is_exact_on_representable_values():
    # d = 0.25 and dmin = 0.5 are exact in f16; every sub-block uses q = 0 and q = 15, so
    # the min/max quantizer must reproduce x exactly, high scale bits included.
    sc = np.array([63, 1, 17, 32, 48, 5, 60, 33])
    m = np.array([0, 63, 12, 40, 7, 50, 21, 36])
    q = np.tile(np.arange(32) % 16, 8).reshape(8, 32)
    x = (0.25 * sc[:, None] * q - 0.5 * m[:, None]).astype(np.float32).reshape(1, 256)
    data = make_fixtures.quantize_q4_k(x)
    assert data.shape == (1, 144)
    np.testing.assert_array_equal(dequantize(data, Q.Q4_K), x)


def test_tiny_llama_reads_back_with_gguf_py(generated):
    for p in generated:
        r = GGUFReader(p)
        f = {k: v.contents() for k, v in r.fields.items() if not k.startswith("tokenizer.ggml.")}
        assert f["general.architecture"] == "llama" and f["llama.block_count"] == 2
        tokens = r.fields["tokenizer.ggml.tokens"].contents()
        assert len(tokens) == f["llama.vocab_size"] == 320
        assert len(r.fields["tokenizer.ggml.merges"].contents()) == 61
        names = [t.name for t in r.tensors]
        assert names[0] == "token_embd.weight" and names[-1] == "output.weight"
        assert "blk.1.ffn_down.weight" in names
        types = {t.tensor_type for t in r.tensors}
        assert types == ({Q.F32, Q.Q8_0} if "Q8_0" in p.name else {Q.F32, Q.Q4_K, Q.Q5_0, Q.Q5_1, Q.Q8_0})
