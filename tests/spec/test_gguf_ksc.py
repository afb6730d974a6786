"""formats/gguf.ksy under the official Kaitai compiler equals ggscope's engine.

The compiler (npm kaitai-struct-compiler 0.11, installed by .ci/install_ksc.sh) turns
the spec into a Python parser in debug mode; every field's value and absolute byte
range it reports must be what ggscope's interpreter puts in its Node tree, on files
written by gguf-py and by the independent v1/v2 writer, in both byte orders.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import ggscope
import gguf_writers as W
import kaitai_oracle as K

KSY = Path(__file__).resolve().parents[2] / "formats" / "gguf.ksy"
# zero-byte helpers the engine hides from the tree (marked -ggscope-hidden in the spec)
HIDDEN = ("version_probe", "alignment_search", "is_be", "pad_len")


@pytest.fixture(scope="module")
def compiled():
    try:
        return K.compile_ksy(KSY)
    except K.KaitaiUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("recipe", sorted(W.RECIPES))
def test_engine_matches_official_compiler(compiled, tmp_path, recipe):
    path = W.RECIPES[recipe](tmp_path / f"{recipe}.gguf")
    records = K.kaitai_records(KSY, path)
    mf = ggscope.open(path)
    assert mf.damage is None
    mismatches = K.compare(records, mf.root, ignore=HIDDEN)
    assert not mismatches, "\n".join(mismatches[:20])
    # the tensor data ranges the compiled spec computes are the view's offsets
    data = {r.path: r for r in records if r.path.endswith("/data") and r.path.startswith("tensor_infos")}
    for i, t in enumerate(mf.tensors):
        rec = data[f"tensor_infos[{i}]/data"]
        assert (rec.start, rec.end) == (t.offset, t.offset + t.nbytes)


def test_real_llama_cpp_file(compiled, shared_fixtures):
    path = shared_fixtures / "ggml" / "quant-oracle.gguf"
    records = K.kaitai_records(KSY, path)
    mismatches = K.compare(records, ggscope.open(path).root, ignore=HIDDEN)
    assert not mismatches, "\n".join(mismatches[:20])
