"""Hostile input, fuzzed: mutated, truncated and spliced files of every format never break ggscope.

For each example ``ggscope.open_bytes`` + ``validate`` (all rules, ``deep=True``) must
not raise, must stay within a bounded amount of work (function calls counted by
tests/work_budget.py, not the clock: CI machines are busy), must yield no GG000 (a crashing rule), and -
measured with tracemalloc - must keep peak Python memory under a small bound that does
not depend on any count the file claims.  Seeds are small valid files written by gguf-py
(tests/gguf_writers.py); hypothesis is derandomized so CI runs the same examples.
"""
from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
from gguf_writers import KV, GArray, T, TensorSpec, V, quantized_tensor, write_gguf_py
from work_budget import call_budget

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ggscope  # noqa: E402
from ggscope.validate.runner import selected_rules, validate  # noqa: E402

PEAK_BOUND = 32 * 2**20          # 32 MiB, whatever the file claims
CALL_BUDGET = 1_000_000          # a seed costs a few thousand calls, whatever the file claims
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
    return _seeds(tmp_path_factory.mktemp("fuzz"))


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
    try:
        with call_budget(CALL_BUDGET):
            try:
                mf = ggscope.open_bytes(data, "fuzz.gguf")
            except ggscope.UnknownFormat:
                return              # a mutated magic: "not a model file" is a clean refusal
            found = list(validate(mf, RULES))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not [f for f in found if f.code == "GG000"], found
    assert peak < PEAK_BOUND, f"peak {peak / 2**20:.1f} MiB"
    if mf.damage is not None:       # what open() calls damaged, validate calls an error
        assert any(f.severity.value == "error" for f in found), (mf.damage.path, mf.damage.error)


def _format_seeds() -> dict[str, bytes]:
    """One small real file per format (../shared/fixtures, when present) and a BIT1 file."""
    from pathlib import Path

    from bit1_writer import bit1_bytes
    shared = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures"
    out = {"bit1": bit1_bytes(vocab_size=20, d_model=100, n_layers=2, n_heads=2, d_ff=70)}
    for label, rel in {"ggml": "llama-legacy/llama0L-ggml-unversioned-q4_0.bin",
                       "ggmf": "llama-legacy/llama0L-ggmf-v1-q4_0.bin",
                       "ggjt": "llama-legacy/llama-tiny-ggjt-v1-q4_0.bin",
                       "ggml-example": "ggml-legacy/gpt2-tiny-2023-05-26-qnt2-q4_0.bin",
                       "rwkv.cpp": "rwkv/tiny-rwkv-4v0-660K-v100-Q4_0.bin",
                       "chatglm.cpp": "chatglm/chatglm2-tiny-f86777c-q4_0.bin",
                       "chatglm.cpp v0": "chatglm/chatglm1-tiny-6c6f376-q4_0.bin"}.items():
        if (shared / rel).is_file():
            out[label] = (shared / rel).read_bytes()
    return out


FORMAT_SEEDS = _format_seeds()


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(sorted(FORMAT_SEEDS)), ops=st.lists(mutation, min_size=1, max_size=4))
def test_every_format_damaged_means_an_error(which, ops):
    """Any format, mutated, truncated or spliced: no crash, memory bounded, and a file
    ``open()`` marks damaged gets an error-level finding from ``validate``."""
    data = _mutate(FORMAT_SEEDS[which], ops)
    tracemalloc.start()
    try:
        try:
            mf = ggscope.open_bytes(data, "fuzz.bin")
        except ggscope.UnknownFormat:
            return
        found = validate(mf, RULES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not [f for f in found if f.code == "GG000"], found
    assert peak < PEAK_BOUND + 2 * len(data), f"peak {peak / 2**20:.1f} MiB"
    if mf.damage is not None:
        assert any(f.severity.value == "error" for f in found), (which, mf.damage.path, mf.damage.error)


# ---- every command on mutated seeds of every format, in children under limits ----------------
# tools/fuzz.py (issue 23 item 9): info, info --json, validate in four formats, validate --deep,
# stats, diff against the seed, run, and the browser, each case in a forked child under
# RLIMIT_AS / RLIMIT_CPU / RLIMIT_FSIZE.  Fixed seeds, so CI runs the same cases; a problem
# prints its case id, and `python -m tools.fuzz --case ID --keep DIR` makes its file again.

from tools import fuzz as command_fuzz  # noqa: E402

FUZZ_CASES = 48                # about 60 s of CPU in the children on this project's machine


def _report(problems) -> str:
    return "\n".join(f"{p.case} {p.kind} [{p.command}] {p.seed_file}: {p.mutation}: {p.detail[:300]}"
                     for p in problems)


def _fuzz_seeds():
    from tests.conftest import SHARED_FIXTURES
    return command_fuzz.find_seeds(SHARED_FIXTURES if SHARED_FIXTURES.is_dir() else None)


def test_a_case_id_makes_the_same_file():
    import random
    seeds = _fuzz_seeds()
    path = seeds[5 % len(seeds)]
    one = command_fuzz.mutate(path.read_bytes(), path.name, random.Random("3:5"))
    two = command_fuzz.mutate(path.read_bytes(), path.name, random.Random("3:5"))
    assert one == two and one[0] != path.read_bytes()


def test_every_command_survives_fixed_seed_cases():
    problems = command_fuzz.run(FUZZ_CASES, 0, _fuzz_seeds(), command_fuzz.Limits(cpu=60, wall=300),
                                browser_every=3)
    assert not problems, _report(problems)


@pytest.mark.slow
def test_every_command_survives_a_longer_run():
    problems = command_fuzz.run(400, 1, _fuzz_seeds(), command_fuzz.Limits(cpu=60, wall=300))
    assert not problems, _report(problems)
