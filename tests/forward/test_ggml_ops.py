"""ggml_ops' kernels against llama.cpp's own nodes, bit for bit (issue 28 item 1).

The cases in fixtures/ggml_ops/ are what llama.cpp computed (its eval callback, one
thread, F16 cache, flash attention on) on the first 128-token chunk of the perplexity
corpus, recorded by tools/record_ggml_ops.py from the TinyLlama test model and its
llama-quantize copies (F16, BF16, Q4_0, IQ4_NL, IQ4_XS, Q5_0, Q4_1, Q5_1, Q6_K, Q5_K, Q3_K_S,
and Q2_K with --pure): per weight
type and path the first
product's weight bytes, input rows and output rows, one flash attention, and the whole
chunk's logits.  "Equal" here means every float32 bit pattern: numpy's sums (the
fallback without the extension) get the same values to ~1e-7, which these tests reject.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES, REPO
from ggscope.forward import ggml_ops, load_weights
from ggscope.forward.blocks import _glu, rope
from ggscope.forward.matmul import round_activations
from ggscope.model.split import open_model

CASES = FIXTURES / "ggml_ops"
TINY_Q8 = FIXTURES / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
NAMES = ("tinyllama-Q8_0", "tinyllama-F16", "tinyllama-Q4_0", "tinyllama-IQ4_NL", "tinyllama-Q5_0",
         "tinyllama-Q4_1", "tinyllama-Q5_1", "tinyllama-Q4_K_S", "tinyllama-Q6_K", "tinyllama-Q5_K",
         "tinyllama-Q3_K_S", "tinyllama-BF16", "tinyllama-BF16-ctx2", "tinyllama-IQ4_XS",
         "tinyllama-Q2_K-ctx128", "tinyllama-Q2_K-ctx7", "tinyllama-Q6_K-ctx7", "tinyllama-Q5_K-ctx7",
         "tinyllama-Q4_K_S-ctx7", "tinyllama-IQ4_XS-ctx7")
TINY_Q4KS = FIXTURES / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"

pytestmark = pytest.mark.skipif(not ggml_ops.AVAILABLE, reason="ggscope.forward._cggml is not built "
                                "(no C compiler at install): the forward pass is numpy's, not ggml's bits")


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def _products(name: str):
    z = np.load(CASES / f"{name}.npz")
    i = 0
    while f"mm{i}.w" in z.files:
        yield (bytes(z[f"mm{i}.type"]).decode(), z[f"mm{i}.w"], z[f"mm{i}.x"], z[f"mm{i}.y"])
        i += 1


def _weight(gtype: str, raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The weight as the forward pass holds it: float32 values tagged with the type (F16)."""
    from ggscope.forward.loading import decode_blocks
    from ggscope.forward.matmul import typed
    out = np.empty((rows, cols), np.float32)
    decode_blocks(gtype, raw, out, "little")
    return typed(out, gtype, raw)


@pytest.mark.parametrize("name", NAMES)
def test_products_are_llama_cpps_bits(name):
    seen = []
    for gtype, raw, x, want in _products(name):
        got = ggml_ops.product(x, _weight(gtype, raw, want.shape[1], x.shape[1]))
        assert got is not None, f"{gtype}: no kernel"
        assert np.array_equal(_bits(got), _bits(want)), f"{name} {gtype}"
        seen.append(gtype)
    assert seen                                     # the record holds at least one product


def test_cases_cover_every_kernel_path():
    """tinyBLAS (Q8_0, Q5_0, F16, BF16), the repacked orders (Q4_0, IQ4_NL, Q4_K: rows % 8 ==
    0; Q2_K on AVX-512: its gemm for groups of 4 activation rows, its gemv for the rest),
    vec_dot against Q8_1 (Q4_1, Q5_1), the tiled K-quant path (Q3_K, Q5_K, Q6_K, IQ4_XS)
    and ggml_vec_dot_bf16 (one activation row)."""
    paths = {(g, ggml_ops.repacked(g, y.shape[1])) for n in NAMES for g, _, _, y in _products(n)}
    assert {("Q8_0", False), ("F16", False), ("Q5_0", False), ("Q4_0", True), ("IQ4_NL", True),
            ("Q4_1", False), ("Q5_1", False), ("Q4_K", True), ("Q3_K", False), ("Q5_K", False),
            ("Q6_K", False), ("BF16", False), ("IQ4_XS", False), ("Q2_K", True)} <= paths
    one_row = {g for n in NAMES for g, _, x, _ in _products(n) if x.shape[0] == 1}
    assert "BF16" in one_row
    few_rows = {g for n in NAMES for g, _, x, _ in _products(n) if 4 < x.shape[0] < 8}
    assert {"Q6_K", "Q5_K", "IQ4_XS", "Q4_K", "Q2_K"} <= few_rows   # vec_dot; the repacked types' gemv


@pytest.mark.parametrize("name", [*NAMES[:2], "tinyllama-BF16", "tinyllama-BF16-ctx2", "tinyllama-IQ4_XS",
                                  "tinyllama-Q2_K-ctx7", "tinyllama-Q6_K-ctx7"])
def test_numpy_products_are_not_these_bits(name):
    """The test above can fail: numpy's BLAS over the same rounded activations gets the
    values but not ggml's bits."""
    differ = 0
    for gtype, raw, x, want in _products(name):
        w = _weight(gtype, raw, want.shape[1], x.shape[1])
        plain = round_activations(x, w.vec_dot) @ np.asarray(w).T
        np.testing.assert_allclose(plain, want, rtol=1e-4, atol=1e-4)
        differ += int(np.count_nonzero(_bits(plain) != _bits(want)))
    assert differ > 0


@pytest.mark.parametrize("name", ["tinyllama-Q8_0", "tinyllama-Q8_0-ctx32"])
def test_flash_attention_is_llama_cpps_bits(name):
    """128 query rows: the tiled path; 32: the one-row path (F16 q and output)."""
    z = np.load(CASES / f"{name}.npz")
    q, k, v, m = z["fa.q"][0], z["fa.k"][0], z["fa.v"][0], z["fa.m"][0, 0]     # [H, T, D], [Hkv, S, D]
    T, S = q.shape[1], k.shape[1]
    assert (T >= ggml_ops.FA_TILE_Q) == (name == "tinyllama-Q8_0")
    scale, _, softcap = (float(p) for p in z["fa.params"])
    got = ggml_ops.flash_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2),
                                   m[:T, :S], scale, softcap)
    want = z["fa.out"].reshape(got.shape)
    assert np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("name,path", [("tinyllama-Q8_0", TINY_Q8), ("tinyllama-Q4_K_S", TINY_Q4KS),
                                       ("tinyllama-Q8_0-ctx32", TINY_Q8), ("tinyllama-Q8_0-ctx2", TINY_Q8)])
def test_whole_chunk_logits_are_llama_cpps_bits(name, path):
    """Every op of the forward pass together: llama.cpp's logits of the chunk's second
    half, to the bit (embedding, rms_norm, rope, the products -- Q8_0; Q5_0, Q5_1, Q4_K
    --, flash attention over an F16 cache, SwiGLU, the output projection); at 2 tokens
    the last layer's FFN and the output run on one row (ggml's vec_dot)."""
    z = np.load(CASES / f"{name}.npz")
    tokens = [int(t) for t in z["tokens"]]
    module, w = load_weights(open_model(str(path)))
    logits, _ = module.forward(w, tokens, None, kv_f16=True, logits_from=len(tokens) // 2, flash_attn=True)
    assert np.array_equal(_bits(logits), _bits(z["logits"]))


@pytest.mark.parametrize("name", ["tinyllama-Q8_0", "gemma3-270m-f16"])
def test_rope_is_llama_cpps_bits(name):
    """ggml_rope_ext on the chunk's last positions (normal pairs for TinyLlama, neox for
    gemma-3): glibc's cosf / sinf and powf, as ggml_rope_cache_init calls them."""
    z = np.load(CASES / f"{name}.npz")
    _, n_dims, mode, _, n_ctx_orig = (int(v) for v in z["rope.ints"])
    base, fs, ext, attn, beta_fast, beta_slow = (float(v) for v in z["rope.floats"])
    yarn = (ext, beta_fast, beta_slow, n_ctx_orig) if ext else None
    got = rope(z["rope.x"][0], z["rope.pos"], n_dims, base, mode == 2, fs, None, yarn, attn)
    assert np.array_equal(_bits(got), _bits(z["rope.y"][0]))


@pytest.mark.parametrize("name,act", [("tinyllama-Q8_0", "silu"), ("gemma3-270m-f16", "gelu")])
def test_glu_is_llama_cpps_bits(name, act):
    """SwiGLU (ggml's vector expf) and GEGLU (the fp16 GELU table, +0 below -10)."""
    from types import SimpleNamespace
    z = np.load(CASES / f"{name}.npz")
    c = SimpleNamespace(traits=SimpleNamespace(act=act), exact=False)
    got = _glu(c, z["glu.g"][0, 0], z["glu.u"][0, 0])
    assert np.array_equal(_bits(got), _bits(z["glu.y"][0, 0]))
    if act == "gelu":                 # vec.h ggml_vec_geglu_f32: x <= -10 -> y = 0.0f, not 0 * g
        low = _glu(c, np.array([[-11.0, -10.0]], np.float32), np.array([[-1.0, -2.0]], np.float32))
        assert _bits(low).tolist() == [[0, 0]]


def test_rope_and_swiglu_use_the_c_librarys_functions():
    """glibc's cosf / sinf and ggml's vector expf are not correctly rounded: the
    kernels must differ from the correctly rounded numpy fallback somewhere, and agree
    with it to an ulp or two."""
    from ggscope.forward.blocks import _rope_cos_sin
    pos = np.arange(128)
    c_cos, c_sin = ggml_ops.rope_cos_sin(pos, 256, 1e6, 1.0, None, 0.0, (0.0, 0.0), 1.0)
    n_cos, n_sin = _rope_cos_sin(pos, 256, 1e6, 1.0, None, 0.0, (0.0, 0.0), 1.0)
    assert np.count_nonzero(_bits(c_cos) != _bits(n_cos)) + np.count_nonzero(_bits(c_sin) != _bits(n_sin)) > 0
    np.testing.assert_allclose(c_cos, n_cos, atol=1e-6)
    g = np.linspace(-30, 30, 4099, dtype=np.float32).reshape(1, -1)
    u = np.ones_like(g)
    got = ggml_ops.swiglu(g, u)
    ref = (g.astype(np.float64) / (1 + np.exp(-g.astype(np.float64))))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-30)
    assert rope(np.ones((2, 1, 4), np.float32), np.arange(2), 4, 10000.0, True).shape == (2, 1, 4)


def test_hostile_buffers_are_refused():
    """Lengths that do not match the dimensions given are an error, never a read past
    the buffer."""
    from ggscope.forward import _cggml
    x = np.zeros((4, 64), np.float32)
    with pytest.raises(ValueError):
        _cggml.mm_q0(x, np.zeros(10, np.uint8), 8, np.zeros((4, 2), np.float32), 4, 2, 64)
    with pytest.raises(ValueError):
        _cggml.mm_f16(x, np.zeros((2, 64), np.float32), np.zeros((4, 2), np.float32), 4, 2, 1 << 50)
    with pytest.raises(ValueError):
        _cggml.mm_q0(x, np.zeros(68, np.uint8), 99, np.zeros((4, 2), np.float32), 4, 2, 64)
    with pytest.raises(ValueError):
        _cggml.fa_tiled(x, x, x, x, x, 4, 3, 4, 2, 16, 16, 1.0, 0.0)
    with pytest.raises(ValueError):          # BF16 bits: 2 bytes an element, not 4
        _cggml.mm_bf16(x, np.zeros(2 * 64, np.uint16), np.zeros((4, 2), np.float32), 4, 2, 64, False, False)
    with pytest.raises(ValueError):
        _cggml.mm_bf16(x, np.zeros(64, np.uint16), np.zeros((4, 2), np.float32), 4, 2, 64, False, True)
    with pytest.raises(ValueError):
        _cggml.mm_q4k(np.zeros((4, 256), np.float32), np.zeros(84 * 2, np.uint8), np.zeros((4, 2), np.float32),
                      4, 2, 256, 99)
    assert ggml_ops.product_blocks(x, np.zeros(10, np.uint8), "BF16", 2) is None


def test_records_say_every_node_matched():
    """The evidence tools/record_ggml_ops.py wrote beside the cases (and for the real
    gemma-3-270m files, which CI does not have): no node and no logit differs."""
    for path in sorted(CASES.glob("*.json")):
        rec = json.loads(path.read_text())
        assert "MUL_MAT without a kernel" not in rec["ops"], path.name
        assert all(v["differ"] == 0 for k, v in rec["ops"].items() if "differ" in v), path.name
        assert rec["logits"]["differ"] == 0, path.name


def test_quantize_is_ggml_cpus_quantize_row_q8_0():
    """The activations' Q8_0 blocks (tools/record_ggml_arithmetic.py asked libggml-cpu's own
    quantize_row_q8_0, with rows built to land on .5 ties): q and the fp16 d, byte for byte."""
    rec = json.loads((FIXTURES / "perplexity" / "ggml-cpu-arithmetic.json").read_text())["q8_0"]
    for row_hex, blocks_hex in zip(rec["rows"], rec["blocks"]):
        x = np.frombuffer(bytes.fromhex(row_hex), np.float32)
        q, d = ggml_ops.quantize_q8_0(x)
        blocks = np.frombuffer(bytes.fromhex(blocks_hex), np.uint8).reshape(-1, 34)
        assert np.array_equal(q.view(np.uint8).reshape(-1, 32), blocks[:, 2:])
        assert np.array_equal(d.astype(np.float16).view(np.uint16), blocks[:, :2].copy().view("<u2")[:, 0])


def test_portable_loops_give_the_same_bits():
    """The loops for CPUs without AVX2 (GGSCOPE_GGML_GENERIC=1 takes them here) compute
    the same lanes: every recorded product and the flash attention, in a child process."""
    code = ("import sys; sys.argv = ['x']; import pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
            "'tests/forward/test_ggml_ops.py', '-k', 'products_are or flash_attention_is or whole_chunk']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "GGSCOPE_GGML_GENERIC": "1"})
    assert done.returncode == 0, done.stdout[-2000:]


_ROWS_OF_EVERY_COUNT = """
import hashlib, numpy as np
from ggscope.forward import ggml_ops
rng = np.random.default_rng(28)
h = hashlib.sha256()
for gtype, bs in (("Q4_0", 18), ("Q8_0", 34), ("Q5_1", 24)):
    for T in (1, 3, 8, 11, 64):
        x = rng.standard_normal((T, 640)).astype(np.float32)
        raw = rng.integers(0, 255, (96 * 20 * bs,), dtype=np.uint8)
        raw.reshape(-1, bs)[:, 1] = 0x2C                    # fp16 scales near 0.06
        got = ggml_ops.product_blocks(x, raw, gtype, 96)
        h.update(b"-" if got is None else got.tobytes())
print(h.hexdigest())
"""


def test_avx2_and_portable_loops_agree_for_every_row_count():
    """Whole groups of 4 / 8 activation rows and the rows left over (the AVX2 kernels'
    two loops) against the portable loops, on random blocks."""
    def run(generic: str) -> str:
        done = subprocess.run([sys.executable, "-c", _ROWS_OF_EVERY_COUNT], cwd=REPO, capture_output=True,
                              text=True, env={**os.environ, "GGSCOPE_GGML_GENERIC": generic}, check=True)
        return done.stdout.strip()
    assert run("0") == run("1")


def test_bf16_products_keep_vdpbf16ps_denormal_rules():
    """VDPBF16PS (Intel SDM) reads denormal inputs as zero and flushes a denormal result
    to zero, the accumulator included; numpy's sums keep them.  Both ggml paths:
    tinyBLAS<32> (2 rows, rows % 4 == 0) and ggml_vec_dot_bf16 (one row)."""
    tiny_w = np.full((4, 64), np.uint32(0x00010000).view(np.float32), np.float32)   # a denormal BF16
    tiny_x = np.full((2, 64), 1e-39, np.float32)                                     # BF16 denormal too
    small = np.full((4, 64), 2.0 ** -70, np.float32)                               # products 2^-140
    for x, w in ((np.ones((2, 64), np.float32), tiny_w), (tiny_x, np.ones((4, 64), np.float32)),
                 (np.full((2, 64), 2.0 ** -70, np.float32), small)):
        assert np.any(round_activations(x, "bf16") @ w.T != 0)
        for rows in (2, 1):
            got = ggml_ops.product_bf16_rows(x[:rows], w, ggml_ops.bf16_vecdot(rows, 4, 64))
            assert _bits(got).tolist() == [[0] * 4] * rows
    # a product that is normal: kept
    got = ggml_ops.product_bf16_rows(np.full((2, 64), 2.0 ** -40, np.float32), small, False)
    assert np.all(got == np.float32(2.0 ** -104))


_BF16_EVERY_SHAPE = """
import hashlib, numpy as np
from ggscope.forward import ggml_ops
rng = np.random.default_rng(28)
h = hashlib.sha256()
for T in (1, 2, 3, 8, 11):
    for M, K in ((4, 640), (12, 96), (6, 64)):
        x = rng.standard_normal((T, K)).astype(np.float32) * np.float32(rng.choice([1, 1e-36, 1e30], (T, K)))
        bits = rng.integers(0, 1 << 16, (M, K), dtype=np.uint16)
        bits[rng.random((M, K)) < 0.5] &= 0x80FF                        # small and denormal values
        bits[(bits & 0x7F80) == 0x7F80] = 0                             # no NaN / Inf weights
        w = (bits.astype(np.uint32) << 16).view(np.float32)
        got = ggml_ops.product_bf16_rows(x, w, ggml_ops.bf16_vecdot(T, M, K))
        raw = ggml_ops.product_blocks(x, bits.view(np.uint8), "BF16", M)
        assert np.array_equal(got.view(np.uint32), raw.view(np.uint32))
        h.update(got.tobytes())
print(h.hexdigest())
"""


def test_bf16_instruction_and_portable_loop_agree():
    """On a CPU with AVX512-BF16 the kernel is the instruction itself; the portable loop
    (GGSCOPE_GGML_GENERIC=1) must give its bits, tiny and denormal values included (on
    other CPUs both runs take the loop).  Each run also holds the weight-from-values and
    weight-from-stored-bytes entries equal."""
    def run(generic: str) -> str:
        done = subprocess.run([sys.executable, "-c", _BF16_EVERY_SHAPE], cwd=REPO, capture_output=True,
                              text=True, env={**os.environ, "GGSCOPE_GGML_GENERIC": generic})
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()
    assert run("0") == run("1")
