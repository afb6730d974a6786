"""formats/gguf.ksy's generated type section equals ggscope/ggml_types.py (one table)."""
from __future__ import annotations

import ggscope
from ggscope.facts import ggml_types
from tools.gen_gguf_types import main as gen_main
from ggscope.ksy.loader import spec_path


def test_spec_type_section_is_current():
    assert gen_main(["--check"]) == 0, "run python -m tools.gen_gguf_types"


def test_spec_block_sizes_agree_with_table(tmp_path):
    import gguf_writers as W
    m = ggscope.open(W.many_tensors(tmp_path / "m.gguf"))
    for t in m.tensors:
        assert t.nbytes == ggml_types.tensor_nbytes(t.type, t.shape), t.name


def test_check_detects_a_stale_copy(tmp_path):
    stale = tmp_path / "gguf.ksy"
    stale.write_text(spec_path("gguf").read_text().replace("q4_k ? 144", "q4_k ? 145"))
    assert gen_main(["--check", "--path", str(stale)]) == 1
