"""Counting 16-bit codes through byte counters (csrc/_ccount8.h, ``count_codes``' route for
at least 65,536 contiguous codes without many repeats): the counts are numpy's bincount
whatever the codes -- a byte counter that wraps at 256 (a code more than 255 times in a
block), exactly 256 (the counter back at 0) or 255, in the first block or a later one,
data that turns peaked after a spread start (the switch to straight counting), codes at
both ends of the table and the NaN/Inf/-0 codes, blocks cut anywhere, counts already in
the table, calls in a row that inherit a block length from the call before -- and
the F16/BF16 statistics through it are numpy's, little- and big-endian."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

import ggscope
from ggscope.stats.counted import code_table
from ggscope.stats.tensors import tensor_stats
from tests.gguf_writers import TensorSpec, write_gguf_py

C = pytest.importorskip("ggscope.stats.cstats")
if not C.available():
    pytest.skip("ggscope.stats._cstats not built", allow_module_level=True)

BLOCK = 1 << 18                         # codes per byte-counted block (_ccount8.h COUNT8_BLOCK)
FIRST = 1 << 16                         # the first block of unknown data (COUNT8_FIRST)
LONGEST = 1 << 20                       # the longest block (COUNT8_MAX)
MIN = 1 << 16                           # fewer codes are counted straight (COUNT8_MIN)
EDGES = np.array([0x0000, 0xFFFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x8000, 0x7FFF, 0x8001, 0x7BFF],
                 np.uint16)             # table ends, +-Inf, NaNs, -0, the largest finite


def _normal(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 0.02).astype(np.float16).view(np.uint16)


def _cycle(n: int, period: int = 5) -> np.ndarray:
    """Few distinct codes, none equal to the three before it: counted one-lane, and each
    one far more than 255 times in a block."""
    return (0x3C00 + np.arange(n) % period).astype(np.uint16)


def _random(n: int, seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 16, n, dtype=np.uint16)


def _spaced(base: np.ndarray, code: int, times: int, start: int, stop: int) -> np.ndarray:
    """``base`` without ``code``, then ``code`` at ``times`` places of ``[start, stop)``."""
    c = base[base != code]
    c = np.resize(c, base.size)
    c[np.linspace(start, stop - 1, times).astype(np.int64)] = code
    return c


CASES = {
    "normal, blocks and an odd tail": lambda: _normal(2 * BLOCK + 7),
    "at the threshold": lambda: _normal(MIN),
    "below the threshold": lambda: _normal(MIN - 1),
    "random over the whole table": lambda: _random(FIRST + 2 * BLOCK + 3),
    "edge and non-finite codes": lambda: np.concatenate([_random(MIN), np.repeat(EDGES, 3)[np.arange(30) * 7 % 30],
                                                         _random(BLOCK, 5), EDGES]),
    "wraps in the first block": lambda: _cycle(BLOCK + 12_345),
    "wraps in a later block": lambda: np.concatenate([_random(FIRST + BLOCK), _cycle(100_001), _random(50_000)]),
    "a code 256 times in the first block": lambda: _spaced(_normal(MIN + 5, 4), 0x7E00, 256, 0, FIRST),
    "a code 255 times in the first block": lambda: _spaced(_normal(MIN + 5, 4), 0x7E00, 255, 0, FIRST),
    "a code 256 times in a full block": lambda: _spaced(_random(FIRST + BLOCK + 9), 0xFFFF, 256, FIRST, FIRST + BLOCK),
    "a code 512 times in a full block": lambda: _spaced(_random(FIRST + BLOCK), 0x8000, 512, FIRST, FIRST + BLOCK),
    "peaked after a spread start": lambda: np.concatenate([_random(FIRST), _normal(3 * BLOCK)[::1] >> 3 << 3]),
}


def _fresh() -> None:
    """The next call looks at its data afresh (a first block of FIRST): a call whose data
    went straight leaves no block length for the next one to start with."""
    C.count_codes(_cycle(MIN), code_table(1 << 16, np.int64))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", CASES)
def test_byte_counted_codes_are_bincount(case, dtype):
    codes = CASES[case]()
    _fresh()
    table = code_table(1 << 16, dtype)
    table[0, 0x3C00] = 7                        # counts already there stay: the counter adds
    table[0, 0xFFFF] = 1
    C.count_codes(codes, table)
    C.count_codes(codes[1:], table)             # once more, one code shorter (another tail)
    want = np.bincount(codes, minlength=1 << 16) + np.bincount(codes[1:], minlength=1 << 16)
    want[0x3C00] += 7
    want[0xFFFF] += 1
    assert np.array_equal(table.sum(axis=0, dtype=np.int64)[:1 << 16], want)
    assert not table[:, 1 << 16:].any()


SEQUENCES = {
    # a call starts with the block length the last call over spread codes ended with
    "spread, then peaked from the start": [_normal(3 * LONGEST, 5), _cycle(2 * LONGEST + 3), _normal(LONGEST, 6)],
    "spread, then a wrap late in a long block": [
        _random(2 * LONGEST, 7), _spaced(_random(2 * LONGEST + 1, 8), 0x1234, 300, LONGEST - 400, LONGEST - 1),
        _random(LONGEST, 9)],
    "spread, then a call shorter than a block, then spread": [_normal(LONGEST, 10), _normal(MIN + 1, 11),
                                                              _normal(3 * BLOCK, 12)],
    "a call below the threshold between spread ones": [_random(LONGEST, 13), _random(MIN - 1, 14), _random(LONGEST, 15)],
    "peaked, then spread": [_cycle(BLOCK), _normal(2 * LONGEST, 16)],
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("seq", SEQUENCES)
def test_calls_in_a_row_are_bincount_each(seq, dtype):
    """Counts stay exact whatever block length a call inherits from the one before (a
    long block that wraps is counted again) -- checked after every call."""
    _fresh()
    table = code_table(1 << 16, dtype)
    want = np.zeros(1 << 16, np.int64)
    for codes in SEQUENCES[seq]:
        C.count_codes(codes, table)
        want += np.bincount(codes, minlength=1 << 16)
        assert np.array_equal(table.sum(axis=0, dtype=np.int64)[:1 << 16], want)


def _numpy(v: np.ndarray, bins: int = 64) -> dict:
    f = v[np.isfinite(v)]
    counts, edges = np.histogram(f, bins=bins)
    return {"finite": f.size, "nan": int(np.isnan(v).sum()), "inf": int(np.isinf(v).sum()),
            "zeros": int((f == 0).sum()), "min": f.min(), "max": f.max(), "mean": f.mean(),
            "std": f.std(), "abs_mean": np.abs(f).mean(), "counts": counts.tolist(), "edges": edges}


def _bf16_values(codes: np.ndarray) -> np.ndarray:
    return (codes.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("kind", ["normal", "few values"])
def test_f16_and_bf16_statistics_through_byte_counters_are_numpy(tmp_path, kind, endian, threads):
    rows, cols = 96, 4099                       # 393,504 codes: more than a block, odd rows
    n = rows * cols
    codes = _normal(n, 9) if kind == "normal" else _cycle(n, 7)
    codes = codes.copy()
    codes[np.arange(len(EDGES)) * 9973 + 11] = EDGES          # NaN, Inf, -0 and the table's ends
    f16 = codes.view(np.float16).reshape(rows, cols)
    bf16 = (f16.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)   # truncated: exact codes
    bf16[0, :len(EDGES)] = EDGES
    raw = bf16.astype(">u2" if endian == "big" else "<u2").view(np.uint8).reshape(rows, cols * 2)
    path = write_gguf_py(tmp_path / "m.gguf", endian=endian,
                         tensors=[TensorSpec("f16", Q.F16, f16), TensorSpec("bf16", Q.BF16, raw)])
    with ggscope.open(str(path)) as mf:
        for name, values in (("f16", f16.astype(np.float64)), ("bf16", _bf16_values(bf16))):
            s = tensor_stats(mf.tensor(name), threads=threads)
            want = _numpy(values.reshape(-1))
            for k in ("finite", "nan", "inf", "zeros", "min", "max"):
                assert s[k] == want[k], (name, k)
            assert s["histogram"]["counts"] == want["counts"], name
            assert np.array_equal(s["histogram"]["edges"], want["edges"]), name
            assert s["mean"] == pytest.approx(want["mean"], rel=1e-12, abs=1e-15)
            assert s["std"] == pytest.approx(want["std"], rel=1e-12)
            assert s["abs_mean"] == pytest.approx(want["abs_mean"], rel=1e-12)
