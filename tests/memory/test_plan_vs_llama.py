"""ggscope.memory against llama.cpp's own printed sizes (fixtures/llama_memory, recorded by
tools/record_llama_memory.py from llama-cpp-python 0.3.36 on its vendored llama.cpp).

Every record's model is rebuilt from its recipe (same tensor layout, zero data) and every
recorded configuration is predicted: the model buffers, output buffer, each KV cache's
cells/layers/K/V and the recurrent state must equal llama.cpp's MiB with two decimals; the
compute buffer must be within 10 % (or 1 MiB, for graphs of a few MiB), and where
ggscope.memory.graph describes the model's graph (the allocator replay) equal to llama.cpp's
four-decimal ``~llama_context`` figure.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.llama_memory_recipe import build, load, records  # noqa: E402

import ggscope  # noqa: E402
from ggscope.memory import Options, plan  # noqa: E402
from ggscope.memory import graph as replay_graph  # noqa: E402
from ggscope.memory.hparams import read  # noqa: E402

MiB = 1 << 20
RECORDS = records()


def _m(n: int) -> float:
    return round(n / MiB, 2)


def _options(rec: dict, pa: dict) -> Options:
    feats = frozenset("avx512" if f == "avx512f" else f for f in rec["cpu"])
    return Options(ctx=pa["ctx"], batch=pa["batch"], ubatch=pa["ubatch"], cache_type_k=pa["type_k"],
                   cache_type_v=pa["type_v"], flash_attn=pa["flash_attn"], swa_full=pa["swa_full"],
                   parallel=pa.get("parallel", 1), features=feats, ngl=pa.get("ngl", 0), device="RPC0",
                   kv_unified=pa.get("kv_unified", False))


def _per_device(p, kind: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for b in p.buffers:
        if b.kind == kind:
            out[b.name] = out.get(b.name, 0) + b.nbytes
    return out


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    d = tmp_path_factory.mktemp("llama_memory")
    return {p.stem: ggscope.open(str(build(load(p), d / (p.stem + ".gguf")))) for p in RECORDS}


def test_there_are_records_of_many_architectures():
    archs = {load(p)["recipe"]["metadata"]["general.architecture"]["value"] for p in RECORDS}
    assert len(archs) >= 8, archs


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_exact_buffers_and_compute_within_ten_percent(path, rebuilt):
    rec = load(path)
    mf = rebuilt[path.stem]
    assert rec["runs"]
    for run in rec["runs"]:
        pa, ll = run["params"], run["llama"]
        p = plan(mf, _options(rec, pa))
        where = f"{path.stem} {pa}"
        assert {b.name: _m(b.nbytes) for b in p.buffers if b.kind == "model"} == ll["model"], where
        assert _m(p.output_bytes) == ll["output"], where
        got_kv = [(c.cells, c.layers, _m(c.k_bytes), _m(c.v_bytes), _m(c.buffer_bytes)) for c in p.caches]
        want_kv = [(k["cells"], k["layers"], k["k"], k["v"], k["mib"]) for k in ll["kv"]]
        assert got_kv == want_kv, where
        if "kv_dev" not in ll:
            assert (_m(p.recurrent_bytes) if p.recurrent_bytes else None) == ll["rs"], where
            # within 10 %, or within 1 MiB for the tiny models whose whole graph is a few MiB
            # (there ggml-alloc's placement of small tensors, not the plan's peaks, decides)
            pred = p.compute_bytes / MiB
            err = abs(pred - ll["compute"])
            assert err <= 0.10 * ll["compute"] or err <= 1.0, (where, pred, ll["compute"])
            if _replayed(mf):
                # the allocator replay: llama.cpp's figure, printed with four decimals
                assert round(pred, 4) == ll["compute"], (where, pred, ll["compute"])
            continue
        # offloaded through the RPC device: every buffer per device; llama.cpp prints a line
        # per cache and device, summed here from their two decimals (so 0.01 MiB per line)
        for kind in ("kv", "rs"):
            got = {k: _m(v) for k, v in _per_device(p, kind).items()}
            want = ll[kind + "_dev"]
            assert got.keys() == want.keys(), (where, kind, got, want)
            assert all(abs(got[k] - want[k]) <= 0.01 * len(ll["kv"] or [1]) for k in got), (where, kind, got, want)
        compute = _per_device(p, "compute")
        for dev, mib in ll["compute_dev"].items():
            pred = compute.get(dev, 0) / MiB
            if dev == "CPU" and pa["ngl"] > _n_layer(mf) and not pa["flash_attn"]:
                assert pred <= mib, (where, dev, pred)       # the inputs alone: a lower bound
                continue
            assert abs(pred - mib) <= 0.10 * mib or abs(pred - mib) <= 1.0, (where, dev, pred, mib)


def _n_layer(mf) -> int:
    arch = mf.metadata["general.architecture"]
    return int(mf.metadata[f"{arch}.block_count"])


def test_offload_records_cover_none_partial_and_all_layers():
    recs = [load(p) for p in RECORDS if p.stem.endswith("-rpc")]
    assert len(recs) >= 3
    for rec in recs:
        arch = rec["recipe"]["metadata"]["general.architecture"]["value"]
        n = rec["recipe"]["metadata"][f"{arch}.block_count"]["value"]
        ngls = {r["params"]["ngl"] for r in rec["runs"]}
        assert {0, 1, n + 1} <= ngls and any(1 < g <= n for g in ngls), (rec["model"], ngls)


def _replayed(mf) -> bool:
    hp = read(mf.metadata, {t.name: tuple(t.shape) for t in mf.tensors})
    return replay_graph.described(hp, {t.name for t in mf.tensors}, mf.metadata)


def test_every_modelled_hybrid_family_is_recorded():
    archs = {load(p)["recipe"]["metadata"]["general.architecture"]["value"] for p in RECORDS}
    assert {"jamba", "granitehybrid", "nemotron_h", "falcon-h1", "lfm2", "qwen35", "qwen3next", "plamo2",
            "minimax-01", "qwen35moe", "kimi-linear", "bailingmoe3"} <= archs


def test_refuses_what_llama_cpp_refuses(tmp_path):
    """llama_init_from_model (src/llama-context.cpp) refuses these configurations; checked
    against llama.cpp on the recorded kimi-linear widths (72-wide V heads: the recorder's q8_0
    runs there all failed) and on the 16-wide TinyLlama example.  Every recorded run (one
    llama.cpp accepted) is planned without refusal by the test above."""
    rec = next(load(p) for p in RECORDS if p.stem == "synthetic-kimi-linear-widths")
    mf = ggscope.open(str(build(rec, tmp_path / "k.gguf")))
    with pytest.raises(ValueError, match="V head size 72"):
        plan(mf, Options(ctx=256, flash_attn=True, cache_type_k="q8_0", cache_type_v="q8_0"))
    with pytest.raises(ValueError, match="without flash attention"):
        plan(mf, Options(ctx=256, flash_attn=False, cache_type_k="q8_0", cache_type_v="q8_0"))
    with pytest.raises(ValueError, match="MLA"):
        plan(mf, Options(ctx=256, flash_attn=True, cache_type_k="q8_0", cache_type_v="f16"))
    assert plan(mf, Options(ctx=256, flash_attn=True)).kv_bytes > 0
    tiny = ggscope.open(str(Path(ggscope.__file__).parent / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"))
    with pytest.raises(ValueError, match="K head size 16"):
        plan(tiny, Options(ctx=8192, flash_attn=True, cache_type_k="q8_0", cache_type_v="q8_0"))
    assert plan(tiny, Options(ctx=8192, flash_attn=False, cache_type_k="q8_0")).k_bytes > 0


def test_refuses_more_sequences_than_the_batch_holds():
    """llama_context's constructor reserves one output per sequence, at most n_outputs_max
    (n_batch by default): ``output_reserve(n_seq_max)`` fails ``GGML_ASSERT(n_outputs_max <=
    cparams.n_outputs_max)`` (src/llama-context.cpp) - llama.cpp aborted (SIGABRT) on every
    tiny model with ``n_batch`` 1 or 2 and 3 or 4 sequences; a micro-batch smaller than the
    sequences is fine when the batch holds them (recorded: ubatch 1 and 2 with 3 to 6 sequences)."""
    tiny = ggscope.open(str(Path(ggscope.__file__).parent / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"))
    with pytest.raises(ValueError, match="more sequences"):
        plan(tiny, Options(ctx=1000, batch=2, ubatch=2, parallel=3))
    with pytest.raises(ValueError, match="more sequences"):
        plan(tiny, Options(ctx=2, batch=512, ubatch=512, parallel=3))      # n_batch = min(n_ctx, batch)
    with pytest.raises(ValueError, match="more than 256 sequences"):
        plan(tiny, Options(ctx=100000, batch=4096, parallel=257))
    assert plan(tiny, Options(ctx=1000, batch=3, ubatch=1, parallel=3)).compute_bytes > 0


def test_records_hold_micro_batches_rounded_to_the_sequences():
    """graph_reserve rounds the micro-batch up to a multiple of the sequences but keeps its
    outputs, and a micro-batch of fewer tokens than sequences is outgrown by the
    token-generation graph: both are recorded on replayed models."""
    runs = [(p.stem, r["params"]) for p in RECORDS for r in load(p)["runs"]]
    assert any(pa["ubatch"] % pa.get("parallel", 1) for _, pa in runs)
    assert any(pa["ubatch"] < pa.get("parallel", 1) and "widths" in stem for stem, pa in runs)


def test_records_hold_unified_caches_of_several_sequences():
    """A unified cache (-kvu) is one attention stream for every sequence: replayed like the
    others (attention, windowed attention, MLA, a recurrent model, real widths)."""
    stems = {p.stem for p in RECORDS for r in load(p)["runs"]
             if r["params"].get("kv_unified") and r["params"].get("parallel", 1) > 1}
    assert {"Tiny-Gemma3-317K-v1.0-Q8_0", "Tiny-DeepSeek2-4x138K-v1.0-Q8_0", "Tiny-Mamba-106K-v1.0-Q8_0",
            "synthetic-gemma2-2b-widths", "synthetic-llama-7b-widths"} <= stems
