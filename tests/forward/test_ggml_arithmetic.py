"""ggscope's imitation of ggml-cpu's kernels against what the library itself computes.

The record (fixtures/perplexity/ggml-cpu-arithmetic.json) is libggml-cpu's own output,
made by tools/record_ggml_arithmetic.py from the llama.cpp that llama-cpp-python 0.3.36
vendors: its GELU fp16 table and the Q8_0 / Q8_K blocks its x86 quantize_row_* make
of float rows, some built on .5 ties.  The other two ops that moved gemma-3-270m's
report (rms_norm's double sum, rope's float32 angles) are held to their definitions
in ggml-cpu/ops.cpp, written out here independently of ggscope's code.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from conftest import FIXTURES
from ggscope.forward import blocks
from ggscope.forward.matmul import round_activations

REC = json.loads((FIXTURES / "perplexity" / "ggml-cpu-arithmetic.json").read_text())


def _gelu_codes() -> np.ndarray:
    blocks.gelu(np.zeros(1, np.float32))                       # fills the table
    return blocks._GELU_TABLE.astype(np.float16).view(np.uint16)


def test_gelu_table_is_ggmls():
    table = _gelu_codes()
    for code, want in REC["gelu_f16_table"]["probes"].items():
        assert f"{int(table[int(code, 16)]):04x}" == want, f"gelu(fp16 {code})"
    assert hashlib.sha256(table.astype("<u2").tobytes()).hexdigest() == REC["gelu_f16_table"]["sha256"]


def test_gelu_lookup_uses_the_table_between_the_clamps():
    x = np.array([-12.0, -10.0, -2.014, 0.0, 1.0, 9.99, 10.0, 30.0], np.float32)
    y = blocks.gelu(x)
    assert y[0] == 0 and y[1] == 0 and y[-2] == 10 and y[-1] == 30
    table = _gelu_codes()
    mid = x[2:6].astype(np.float16).view(np.uint16)
    assert (y[2:6] == table[mid].view(np.float16).astype(np.float32)).all()


def _rows(kind: str) -> list[np.ndarray]:
    return [np.frombuffer(bytes.fromhex(r), np.float32) for r in REC[kind]["rows"]]


def test_q8_0_rounding_is_the_x86_kernels():
    """Every block's values: fp16 d times the int8 q of ggml's block_q8_0."""
    for row, blob in zip(_rows("q8_0"), REC["q8_0"]["blocks"]):
        raw = np.frombuffer(bytes.fromhex(blob), np.uint8).reshape(-1, 34)
        d = raw[:, :2].copy().view("<f2").astype(np.float32)          # [nb, 1]
        q = raw[:, 2:].copy().view(np.int8).astype(np.float32)        # [nb, 32]
        assert (round_activations(row, "q8_0").reshape(-1, 32) == q * d).all()


def test_q8_0_ties_are_where_the_reference_would_differ():
    """The record's tie rows are not vacuous: the reference's 1/d moves some q."""
    row = _rows("q8_0")[2].reshape(-1, 32)
    amax = np.abs(row).max(1, keepdims=True)
    ref = np.rint(row * (np.float32(1) / (amax / np.float32(127))))
    x86 = np.rint(row * (np.float32(127) / amax))
    assert (ref != x86).any()


def test_q8_k_rounding_is_the_x86_kernels():
    for row, blob in zip(_rows("q8_K"), REC["q8_K"]["blocks"]):
        raw = bytes.fromhex(blob)
        d = np.frombuffer(raw[:4], np.float32)[0]
        q = np.frombuffer(raw[4:260], np.int8).astype(np.float32)
        assert (round_activations(row, "q8_k") == q * d).all()


def test_rms_norm_sums_squares_in_double():
    """ggml_compute_forward_rms_norm_f32: sum += (ggml_float)(x*x); mean = (float)(sum/n);
    scale = 1.0f/sqrtf(mean + eps); y = x*scale*w.  A row whose float32 sum of squares
    rounds differently shows it."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 640)) * 300).astype(np.float32)
    w = rng.standard_normal(640).astype(np.float32)
    s = np.array([math.fsum(float(np.float32(v * v)) for v in r) for r in x])
    mean = (s / 640).astype(np.float32)[:, None]
    scale = np.float32(1) / np.sqrt(mean + np.float32(1e-6))
    want = (x * scale) * w
    assert (blocks.rms_norm(x, w, 1e-6) == want).mean() > 0.999
    f32 = (x * x).sum(axis=1, dtype=np.float32) / np.float32(640)
    assert (f32 != mean[:, 0]).any()                      # the float32 sum would differ


def test_rope_angles_are_a_float32_running_product():
    """ggml_rope_cache_init: theta = p; theta *= powf(base, -2.0f/n_dims) per pair."""
    pos = np.array([0, 1, 127, 4000])
    x = np.ones((4, 1, 128), np.float32)
    out = blocks.rope(x, pos, 128, 10000.0, neox=True)
    scale = np.float32(np.float64(10000.0) ** np.float64(np.float32(-2.0 / 128)))
    theta = pos.astype(np.float32)
    for i in range(64):
        c, s = np.cos(theta.astype(np.float64)).astype(np.float32), np.sin(theta.astype(np.float64)).astype(np.float32)
        assert np.allclose(out[:, 0, i], c - s, rtol=0, atol=2e-7)
        theta = theta * scale
