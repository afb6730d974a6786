"""The allocator replay on headers llama.cpp could not build a graph from: the plan falls back
to the plan of peaks (or refuses with one sentence), never divides by zero or loops over a
count the header claims."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.llama_memory_recipe import build, load  # noqa: E402

import ggscope  # noqa: E402
from ggscope.memory import Options, plan  # noqa: E402

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "llama_memory"


def _plan(tmp_path, stem, **meta):
    rec = copy.deepcopy(load(FIX / f"{stem}.json"))
    arch = rec["recipe"]["metadata"]["general.architecture"]["value"]
    for k, v in meta.items():
        rec["recipe"]["metadata"][f"{arch}.{k}"]["value"] = v
    mf = ggscope.open(str(build(rec, tmp_path / f"{stem}.gguf")))
    return plan(mf, Options(ctx=4096, flash_attn=True))


def _how(p) -> str:
    return next(b.how for b in p.buffers if b.kind == "compute")


@pytest.mark.parametrize("stem, meta", [
    ("synthetic-granitehybrid-widths", {"ssm.time_step_rank": 0}),
    ("synthetic-granitehybrid-widths", {"ssm.group_count": 7}),
    ("synthetic-qwen3next-widths", {"ssm.group_count": 0}),
    ("synthetic-qwen3next-widths", {"expert_used_count": 1 << 30}),
    ("Tiny-Qwen3MoE-4x116K-v1.0-Q8_0", {"expert_used_count": 1000}),
])
def test_a_header_llama_cpp_could_not_build_falls_back(tmp_path, stem, meta):
    assert _how(_plan(tmp_path, stem)) == "replay"
    p = _plan(tmp_path, stem, **meta)
    assert _how(p) == "peaks" and p.compute_bytes > 0
