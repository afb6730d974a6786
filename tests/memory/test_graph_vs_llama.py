"""ggscope.memory.graph against llama.cpp's own reserve graph, node by node.

fixtures/llama_graph holds, per recorded configuration, the nodes llama.cpp's scheduler
printed for the graph it reserved its compute buffer for (GGML_SCHED_DEBUG=2, recorded by
tools/record_llama_graph.py from llama-cpp-python 0.3.36 on its vendored llama.cpp): each
node's index in the graph (view ops are skipped in the print but counted), its op as
ggml_op_desc names it and its size as the scheduler prints it ("4M", "16K").  The
replayed graph must have the same nodes in the same order with the same sizes - the same
graph ggml-alloc walks - and the replay must then give llama.cpp's buffer size.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.llama_memory_recipe import build, load  # noqa: E402

import ggscope  # noqa: E402
from ggscope.memory import Options, plan  # noqa: E402
from ggscope.memory import galloc, graph  # noqa: E402
from ggscope.memory.hparams import read  # noqa: E402

GRAPHS = sorted((ROOT / "fixtures" / "llama_graph").glob("*.json"))
VIEW_OPS = {"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"}


def _size(n: int) -> str:
    """fmt_size of ggml/src/ggml-backend.cpp."""
    return f"{n // 1024 // 1024}M" if n >= 1024 * 1024 else f"{n // 1024}K"


def _ub(pa: dict) -> int:
    """The micro-batch llama.cpp uses: the batch and micro-batch are limited by the context."""
    return min(pa["ubatch"], pa["batch"], pa["ctx"])


def _replay_graph(rec_path: Path, pa: dict, tmp: Path):
    rec = load(rec_path)
    mf = ggscope.open(str(build(rec, tmp / (rec_path.stem + ".gguf"))))
    hp = read(mf.metadata, {t.name: tuple(t.shape) for t in mf.tensors})
    names = {t.name for t in mf.tensors}
    assert graph.described(hp, names, mf.metadata)
    p = plan(mf, Options(ctx=pa["ctx"], batch=pa["batch"], ubatch=pa["ubatch"], cache_type_k=pa["type_k"],
                         cache_type_v=pa["type_v"], flash_attn=pa["flash_attn"], parallel=pa["parallel"],
                         swa_full=pa["swa_full"],
                         features=frozenset()))
    cells = {c.name: c.cells for c in p.caches}
    return graph.build(hp, mf.metadata, names, cells, p.n_ubatch, pa["parallel"], pa["flash_attn"],
                       pa["type_k"], pa["type_v"]), rec, pa


def test_there_are_graph_records():
    assert len(GRAPHS) >= 6
    archs = {json.loads(p.read_text())["model"] for p in GRAPHS}
    assert len(archs) >= 6


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_same_nodes_as_llama_cpp(path, tmp_path):
    want = json.loads(path.read_text())
    g, rec, pa = _replay_graph(ROOT / "fixtures" / "llama_memory" / f"{want['model']}.json", want["params"], tmp_path)
    # the op as printed: ggml_op_desc in a ten-character field
    got = [[i, n.op[:10], _size(n.nbytes)] for i, n in enumerate(g.nodes) if n.op not in VIEW_OPS]
    assert len(g.nodes) >= want["nodes"][-1][0] + 1
    for a, b in zip(got, want["nodes"]):
        assert a == b, (path.stem, a, b)
    assert len(got) == len(want["nodes"]), path.stem
    # and the buffer is the one llama.cpp printed for this configuration
    runs = [r for r in rec["runs"] if all(r["params"].get(k, 1 if k == "parallel" else None) == v
                                          for k, v in pa.items() if k not in ("batch", "ubatch"))
            and _ub(r["params"]) == _ub(pa) and "compute_dev" not in r["llama"]]
    assert runs, f"{path.stem}: no recorded run of this configuration"
    for r in runs:
        assert round(galloc.reserve(g) / (1 << 20), 4) == r["llama"]["compute"], path.stem
