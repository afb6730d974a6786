"""Hostile input, fuzzed: mutated, truncated and spliced small GGUF files never break ggscope.

For each example ``ggscope.open_bytes`` + ``validate`` (all rules, ``deep=True``) must
not raise, must finish in under a second, must yield no GG000 (a crashing rule), and -
measured with tracemalloc - must keep peak Python memory under a small bound that does
not depend on any count the file claims.  Seeds are small valid files written by gguf-py
(tests/gguf_writers.py); hypothesis is derandomized so CI runs the same examples.
"""
from __future__ import annotations

import struct
import time
import tracemalloc

import numpy as np
import pytest
from gguf_writers import KV, GArray, T, TensorSpec, V, quantized_tensor, write_gguf_py

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ggscope  # noqa: E402
from ggscope.validate import selected_rules, validate  # noqa: E402

PEAK_BOUND = 32 * 2**20          # 32 MiB, whatever the file claims
RULES = selected_rules(deep=True)


def _seeds(tmp) -> list[bytes]:
    rng = np.random.default_rng(0)
    toks = KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, ("a", "b", "c")))
    out = []
    for i, tensors in enumerate([
        [TensorSpec("token_embd.weight", T.F32, rng.standard_normal((3, 8)).astype(np.float32))],
        [quantized_tensor("blk.0.attn_q.weight", T.Q4_K, (256, 2), rng),
         TensorSpec("n", T.F16, np.ones(16, np.float16))],
    ]):
        p = write_gguf_py(tmp / f"s{i}.gguf", kvs=[toks, KV("general.name", V.STRING, "x"),
                                                    KV("tokenizer.ggml.scores", V.ARRAY, GArray(V.FLOAT32, (0.0, 1.0, 2.0)))],
                          tensors=tensors)
        out.append(p.read_bytes())
    return out


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    out = _seeds(tmp_path_factory.mktemp("fuzz"))
    # GG1001 counts NaN/Inf through ggscope.stats, whose compiled kernels are imported
    # and loaded on first use: a once-per-process cost, paid here, before the bounds.
    for data in out:
        validate(ggscope.open_bytes(data, "warm.gguf"), RULES)
    return out


_BIG = st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1])
mutation = st.one_of(
    st.tuples(st.just("byte"), st.integers(0, 4095), st.integers(0, 255)),
    st.tuples(st.just("u64"), st.integers(0, 4095), _BIG),
    st.tuples(st.just("u32"), st.integers(0, 4095), _BIG.map(lambda v: v & 0xFFFFFFFF)),
    st.tuples(st.just("truncate"), st.integers(0, 4095), st.just(0)),
    st.tuples(st.just("splice"), st.integers(0, 4095), st.integers(0, 4095)),
)


def _mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for kind, at, v in ops:
        if not b:
            break
        at %= len(b)
        if kind == "byte":
            b[at] = v
        elif kind == "u64":
            b[at:at + 8] = struct.pack("<Q", v)
        elif kind == "u32":
            b[at:at + 4] = struct.pack("<I", v)
        elif kind == "truncate":
            del b[at:]
        else:                      # splice: repeat/skip a stretch
            src = v % len(b)
            b[at:at] = b[src:src + 64]
    return bytes(b)


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.integers(0, 1), ops=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_files_never_break(seeds, which, ops):
    data = _mutate(seeds[which], ops)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        try:
            mf = ggscope.open_bytes(data, "fuzz.gguf")
        except ggscope.UnknownFormat:
            return                  # a mutated magic: "not a model file" is a clean refusal
        found = validate(mf, RULES)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not [f for f in found if f.code == "GG000"], found
    assert elapsed < 1.0, f"{elapsed:.2f} s"
    assert peak < PEAK_BOUND, f"peak {peak / 2**20:.1f} MiB"
