"""Rules are linear in the records and never compile file text (issue 23, item 6).

Work is counted, never timed (tests/work_budget.py): function calls, nodes built and
bytes allocated.  Before: each of 14 rules re-materialised every tensor-info node (a
node tree and a parse per tensor, kept), and the schema rule compiled the file's
``general.architecture`` into ~50 regular expressions, so a 1 MiB name cost minutes.
"""
from __future__ import annotations

import struct
import tracemalloc

import pytest

import ggscope
from ggscope.ksy import node as node_mod
from ggscope.validate import validate
from tests.work_budget import call_budget


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _arch_file(arch: bytes) -> bytes:
    kvs = [_s(b"general.architecture") + struct.pack("<I", 8) + _s(arch),
           _s(arch + b".context_length") + struct.pack("<I", 4) + struct.pack("<I", 4096),
           _s(arch + b".rope.dimension_count") + struct.pack("<I", 4) + struct.pack("<I", 128)]
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)


def _tensors_file(n: int, standard: bool = True) -> bytes:
    parts = [b"GGUF", struct.pack("<IQQ", 3, n, 1), _s(b"general.architecture"), struct.pack("<I", 8), _s(b"llama")]
    for i in range(n):
        name = f"blk.{i}.attn_q.weight" if standard else f"layers.{i}.wq"
        parts.append(_s(name.encode()) + struct.pack("<IQQIQ", 2, 4, 2, 0, i * 32))
    head = b"".join(parts)
    head += b"\0" * (-len(head) % 32)
    return head + b"\0" * (n * 32)


def _calls(data: bytes) -> int:
    mf = ggscope.open_bytes(data, "case.gguf")
    with call_budget(50_000_000) as c:
        validate(mf)
    return c.calls


def test_a_long_architecture_name_costs_no_more_calls_than_a_short_one():
    _calls(_arch_file(b"llama"))                  # gguf-py's tables, loaded once per process
    short = _calls(_arch_file(b"x" * 1024))
    long = _calls(_arch_file(b"x" * (1 << 20)))
    assert long <= short + 100, (short, long)     # before: ~2 M calls per MiB compiled


def test_architecture_text_is_never_compiled(monkeypatch):
    import re
    compiled = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda p, *a, **k: (compiled.append(p), real(p, *a, **k))[1])
    arch = b"unheard-of-arch"
    validate(ggscope.open_bytes(_arch_file(arch), "case.gguf"))
    assert not [p for p in compiled if "unheard" in str(p)]


class _NodeCount:
    def __init__(self, monkeypatch):
        self.n = 0
        real = node_mod.Node.__init__

        def counting(obj, *a, **k):
            self.n += 1
            real(obj, *a, **k)
        monkeypatch.setattr(node_mod.Node, "__init__", counting)


def test_rules_build_no_node_per_tensor(monkeypatch):
    mf = ggscope.open_bytes(_tensors_file(20_000), "many.gguf")
    count = _NodeCount(monkeypatch)
    findings = validate(mf)
    assert not [f for f in findings if f.code in ("GG501", "GG000")]
    assert count.n < 500, count.n          # before: ~13 nodes per tensor, 260 k here


def test_a_finding_per_tensor_costs_one_stand_in_node_each(monkeypatch):
    n = 5_000
    mf = ggscope.open_bytes(_tensors_file(n, standard=False), "many.gguf")
    count = _NodeCount(monkeypatch)
    findings = validate(mf)
    flagged = [f for f in findings if f.code == "GG501"]
    assert len(flagged) == n
    assert flagged[7].path == "tensor_infos[7]/name"
    real = mf.root["tensor_infos"].children[7]["name"]
    assert (flagged[7].start, flagged[7].end, flagged[7].spec_path) == (real.start, real.end, real.spec_path)
    assert count.n < n + 500, count.n


@pytest.mark.parametrize("n", [2_000, 20_000])
def test_validate_calls_grow_linearly_with_tensor_infos(n):
    per = _calls(_tensors_file(n)) / n
    assert per < 60, per                   # before: ~600 calls per tensor info


def test_validate_memory_per_tensor_info_is_bounded():
    n = 20_000
    mf = ggscope.open_bytes(_tensors_file(n), "many.gguf")
    validate(ggscope.open_bytes(_tensors_file(10), "warm.gguf"))
    tracemalloc.start()
    try:
        validate(mf)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / n < 1500, peak / n       # before: ~7 kB per tensor info, kept
