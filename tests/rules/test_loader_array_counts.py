"""get_key_or_arr's count as llama.cpp passes it: block_count, the layers but the
next-token-prediction ones, or a constant.

Why: the loader table took every ``get_key_or_arr`` key to hold ``block_count`` entries,
but llama.cpp's qwen2vl / qwen3vl / qwen3vlmoe loaders read ``rope.dimension_sections``
with a count of 4 (llama.cpp as vendored in llama-cpp-python 0.3.36,
src/models/qwen2vl.cpp: ``get_key_or_arr(LLM_KV_ROPE_DIMENSION_SECTIONS, rope_sections, 4,
true)``; src/llama-model-loader.cpp throws "key %s has wrong array length; expected %u,
got %u" for any other length), so GG1105 refused - and ``ggscope run`` declined - every
Qwen2-VL file llama.cpp loads.  The model is tools/arch_models.py's qwen2vl, which
llama.cpp loaded and ran (fixtures/arch_logits).
"""
from __future__ import annotations

import pytest

pytest.importorskip("gguf")

from ggscope.facts.llama_arch import ARCHS  # noqa: E402
from ggscope.model.open import open as open_file  # noqa: E402
from ggscope.rules.refusal import loader_refusal  # noqa: E402
from ggscope.validate.runner import validate_file  # noqa: E402
from tools import arch_models  # noqa: E402


def _qwen2vl(tmp_path, monkeypatch, sections):
    spec = arch_models.SPECS["qwen2vl"]
    keys = {**spec["keys"], "qwen2vl.rope.dimension_sections": sections}
    assert len(keys) == len(spec["keys"])                  # the spec's own key, replaced
    monkeypatch.setitem(arch_models.SPECS, "qwen2vl-test", {**spec, "arch": "qwen2vl", "keys": keys})
    return str(arch_models.write("qwen2vl-test", "F32", tmp_path / "m.gguf"))


def test_the_table_carries_each_count():
    modes = {(h.kv, h.mode) for a in ("qwen2vl", "qwen3vl", "qwen3vlmoe") for h in ARCHS[a].hparams}
    assert ("ROPE_DIMENSION_SECTIONS", "per_4") in modes
    assert all(m != "per_layer" for kv, m in modes if kv == "ROPE_DIMENSION_SECTIONS")


def test_four_sections_load_as_llama_cpp_loads_them(tmp_path, monkeypatch):
    path = _qwen2vl(tmp_path, monkeypatch, [1, 1, 1, 5])
    assert arch_models.SPECS["qwen2vl"]["keys"]["qwen2vl.rope.dimension_sections"] == [1, 1, 1, 5]
    assert loader_refusal(open_file(path)) is None
    assert [f.code for f in validate_file(path) if f.code == "GG1105"] == []


@pytest.mark.parametrize("sections", [[1, 1, 5], [1, 1, 1, 1, 4], [8] * 2])
def test_another_length_is_llama_cpp_s_error(tmp_path, monkeypatch, sections):
    path = _qwen2vl(tmp_path, monkeypatch, sections)
    found = [f for f in validate_file(path) if f.code == "GG1105"]
    assert [f.message for f in found] == [
        f"key qwen2vl.rope.dimension_sections has wrong array length; expected 4, got {len(sections)}"]
    assert loader_refusal(open_file(path)) is not None
