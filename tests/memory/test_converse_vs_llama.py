"""``--vram``'s converse (ggscope.memory.max_context / max_layers) against llama.cpp's own
printed sizes (fixtures/llama_memory): for a budget equal to what llama.cpp allocated in
one recorded run, the context or layer count ggscope answers must be one whose recorded
allocation fits the budget, and the next recorded one must not - up to the compute
buffer's estimate (10 % of it), the only part of the plan that is not exact.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.llama_memory_recipe import build, load, records  # noqa: E402

import ggscope  # noqa: E402
from ggscope.memory import Options, max_context, max_layers  # noqa: E402

MiB = 1 << 20
CPU_RECORDS = [p for p in records() if p.stem.startswith("synthetic-") and not p.stem.endswith("-rpc")]
RPC_RECORDS = [p for p in records() if p.stem.endswith("-rpc")]


def _options(rec: dict, pa: dict, **kw) -> Options:
    feats = frozenset("avx512" if f == "avx512f" else f for f in rec["cpu"])
    return Options(ctx=pa["ctx"], batch=pa["batch"], ubatch=pa["ubatch"], cache_type_k=pa["type_k"],
                   cache_type_v=pa["type_v"], flash_attn=pa["flash_attn"], swa_full=pa["swa_full"],
                   parallel=pa.get("parallel", 1), features=feats, device="RPC0", **kw)


def _total(ll: dict) -> float:
    return sum(ll["model"].values()) + ll["output"] + sum(k["mib"] for k in ll["kv"]) + (ll["rs"] or 0) + ll["compute"]


def _device(ll: dict, dev: str = "RPC0") -> float:
    return (ll["model"].get(dev, 0) + ll["kv_dev"].get(dev, 0) + ll["rs_dev"].get(dev, 0)
            + ll["compute_dev"].get(dev, 0))


@pytest.mark.parametrize("path", CPU_RECORDS, ids=lambda p: p.stem)
def test_largest_context_that_fits(path, tmp_path):
    rec = load(path)
    mf = ggscope.open(str(build(rec, tmp_path / (path.stem + ".gguf"))))
    # the runs that differ only in context, keyed by everything else
    groups: dict[tuple, dict[int, dict]] = {}
    for run in rec["runs"]:
        pa = run["params"]
        key = tuple(sorted((k, v) for k, v in pa.items() if k != "ctx"))
        groups.setdefault(key, {})[pa["ctx"]] = run
    checked = 0
    for runs in groups.values():
        for ctx, run in runs.items():
            budget = _total(run["llama"])
            got = max_context(mf, _options(rec, run["params"]), int(budget * MiB))
            for other, r in runs.items():
                slack = 0.10 * r["llama"]["compute"]
                if other <= got:
                    assert _total(r["llama"]) <= budget + slack, (path.stem, run["params"], got, other)
                else:
                    assert _total(r["llama"]) > budget - slack, (path.stem, run["params"], got, other)
            checked += 1
    assert checked


@pytest.mark.parametrize("path", RPC_RECORDS, ids=lambda p: p.stem)
def test_most_layers_that_fit(path, tmp_path):
    rec = load(path)
    mf = ggscope.open(str(build(rec, tmp_path / (path.stem + ".gguf"))))
    by_fa: dict[bool, dict[int, dict]] = {}
    for run in rec["runs"]:
        by_fa.setdefault(run["params"]["flash_attn"], {})[run["params"]["ngl"]] = run["llama"]
    for fa, runs in by_fa.items():
        pa = next(r["params"] for r in rec["runs"] if r["params"]["flash_attn"] == fa)
        for ngl, ll in runs.items():
            if ngl == 0:
                continue
            budget = _device(ll)
            got = max_layers(mf, _options(rec, pa), int(budget * MiB))
            slack = lambda g: 0.10 * runs[g]["compute_dev"].get("RPC0", 0)  # noqa: E731
            assert got >= 1 or _device(runs[1]) > budget - slack(1), (path.stem, fa, ngl)
            if got in runs:
                assert _device(runs[got]) <= budget + slack(got), (path.stem, fa, ngl, got)
            if got + 1 in runs:
                assert _device(runs[got + 1]) > budget - slack(got + 1), (path.stem, fa, ngl, got)
