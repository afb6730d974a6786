"""tensor_stats against numpy on gguf-py's dequantization of the same bytes."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize

import ggscope
from ggscope.stats.tensors import StatsCancelled, tensor_stats
from tests.gguf_writers import TensorSpec, quantized_tensor, write_gguf_py

TYPES = ("F32", "F16", "BF16", "Q4_0", "Q8_0", "Q5_1", "Q4_K", "Q6_K", "IQ4_XS")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    rng = np.random.default_rng(7)
    specs = [quantized_tensor(f"t.{name}", Q[name], (512, 24), rng) for name in TYPES]
    bad = (rng.standard_normal((16, 64)) * 3).astype(np.float32)
    bad[0, :5] = np.nan
    bad[3, 7] = np.inf
    bad[9, 1:4] = -np.inf
    bad[5, :10] = 0.0
    bad[6, 0] = -0.0
    specs.append(TensorSpec("t.bad", Q.F32, bad))
    path = write_gguf_py(tmp_path_factory.mktemp("stats") / "m.gguf", tensors=specs)
    with ggscope.open(str(path)) as mf:
        yield mf


def _reference(t):
    flat = np.asarray(dequantize(np.asarray(t.raw()).reshape(t.shape[1], -1), Q[t.type]), np.float64).reshape(-1)
    return flat


@pytest.mark.parametrize("name", [*TYPES, "bad"])
def test_matches_numpy_on_gguf_py_dequantization(model, name):
    t = model.tensor(f"t.{name}")
    s = tensor_stats(t, chunk_elems=1000, threads=2)
    ref = _reference(t)
    finite = ref[np.isfinite(ref)]
    assert s["count"] == ref.size
    assert s["nan"] == np.isnan(ref).sum()
    assert s["inf"] == np.isinf(ref).sum()
    assert s["finite"] == finite.size
    assert s["zeros"] == (ref == 0).sum()
    if not finite.size:
        assert s["mean"] is None and s["min"] is None
        return
    assert s["min"] == finite.min() and s["max"] == finite.max()
    scale = finite.std() + abs(finite.mean()) + 1e-30
    assert abs(s["mean"] - finite.mean()) <= 1e-6 * scale
    assert s["std"] == pytest.approx(finite.std(), rel=1e-5)
    assert s["abs_mean"] == pytest.approx(np.abs(finite).mean(), rel=1e-5)
    counts, edges = np.histogram(finite, bins=64)
    assert sum(s["histogram"]["counts"]) == finite.size
    assert np.allclose(s["histogram"]["edges"], edges)
    assert np.abs(np.array(s["histogram"]["counts"]) - counts).sum() <= max(2, finite.size // 1000)


@pytest.mark.parametrize("name", ["Q4_0", "Q8_0", "Q4_K", "IQ4_XS"])
def test_block_scales_are_the_d_fields(model, name):
    t = model.tensor(f"t.{name}")
    bs = tensor_stats(t)["block_scales"]
    # ggml-common.h: d is the first f16 of these blocks (Q4_K: d then dmin)
    elems, nbytes = {"Q4_0": (32, 18), "Q8_0": (32, 34), "Q4_K": (256, 144), "IQ4_XS": (256, 136)}[name]
    d = np.asarray(t.raw()).reshape(-1, nbytes)[:, :2].copy().view("<f2").astype(np.float64).reshape(-1)
    good = d[np.isfinite(d)]
    assert bs["count"] == t.n_elements // elems
    assert bs["nonfinite"] == d.size - good.size
    if good.size:
        assert bs["min"] == good.min() and bs["max"] == good.max()
        assert bs["mean"] == pytest.approx(good.mean(), rel=1e-6, abs=1e-12)
        assert bs["zeros"] == (good == 0).sum()


def test_plain_types_have_no_block_scales(model):
    assert tensor_stats(model.tensor("t.F16"))["block_scales"] is None


@pytest.mark.parametrize("name", ["Q8_0", "Q6_K", "bad"])
def test_chunked_equals_one_shot(model, name):
    t = model.tensor(f"t.{name}")
    one = tensor_stats(t, chunk_elems=1 << 30, threads=1)
    for chunk, threads in ((256, 1), (777, 2), (64, 2)):
        s = tensor_stats(t, chunk_elems=chunk, threads=threads)
        for k in ("count", "finite", "nan", "inf", "zeros", "min", "max"):
            assert s[k] == one[k], k
        assert abs(s["mean"] - one["mean"]) <= 1e-6 * one["std"]
        for k in ("std", "abs_mean"):
            assert s[k] == pytest.approx(one[k], rel=1e-6), k
        assert s["histogram"] == one["histogram"]


@pytest.mark.parametrize("threads", [1, 2])
def test_cancel_stops_and_progress_reports(model, threads):
    t = model.tensor("t.Q8_0")
    seen = []
    s = tensor_stats(t, chunk_elems=1024, threads=threads, progress=lambda d, n: seen.append((d, n)))
    assert s["count"] == t.n_elements
    assert seen[-1] == (2 * t.n_elements, 2 * t.n_elements)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    calls = []
    with pytest.raises(StatsCancelled):
        tensor_stats(t, chunk_elems=1024, threads=threads, cancel=lambda: calls.append(1) or len(calls) > 3)


def test_modelfile_tensor_stats_and_bad_arguments(model):
    t = model.tensor("t.F32")
    s = t.stats(bins=8)
    for key in ("count", "min", "max", "mean", "std", "abs_mean", "zeros", "nan", "inf", "histogram"):
        assert key in s
    assert len(s["histogram"]["counts"]) == 8
    with pytest.raises(ValueError):
        t.stats(bins=0)
    with pytest.raises(ValueError):
        t.stats(chunk_elems=0)


def test_truncated_tensor_is_a_value_error(tmp_path, model):
    data = open(model.path, "rb").read()
    last = max(model.tensors, key=lambda t: t.offset)
    p = tmp_path / "cut.gguf"
    p.write_bytes(data[:last.offset + last.nbytes // 2])
    with ggscope.open(str(p)) as mf:
        t = mf.tensor(last.name)
        with pytest.raises(ValueError):
            tensor_stats(t)


# --- the codes route (F16, BF16, I8, I16) and the decoded route's edge cases -------

def _numpy_stats(v: np.ndarray, bins: int = 64) -> dict:
    f = v[np.isfinite(v)].astype(np.float64)
    counts, edges = np.histogram(f, bins=bins)
    return {"finite": f.size, "nan": int(np.isnan(v).sum()), "inf": int(np.isinf(v).sum()),
            "zeros": int((f == 0).sum()), "min": f.min(), "max": f.max(), "mean": f.mean(),
            "std": f.std(), "abs_mean": np.abs(f).mean(), "counts": counts.tolist(), "edges": edges}


@pytest.mark.parametrize("endian", ["little", "big"])
def test_sixteen_bit_types_are_exact_numpy(tmp_path, endian):
    """F16/BF16/I16/I8 are counted by code: every statistic, histogram included, is numpy's."""
    rng = np.random.default_rng(3)
    f16 = (rng.standard_normal((64, 96)) * 0.05).astype(np.float16)
    f16[0, :3] = [np.nan, np.inf, -np.inf]
    f16[1, :7] = 0
    f16[2, 0] = -0.0
    i16 = rng.integers(-30000, 30000, size=(8, 40), dtype=np.int16)
    i8 = rng.integers(-128, 128, size=(8, 40), dtype=np.int8)
    specs = [TensorSpec("f16", Q.F16, f16), TensorSpec("i16", Q.I16, i16), TensorSpec("i8", Q.I8, i8)]
    path = write_gguf_py(tmp_path / "m.gguf", tensors=specs, endian=endian)
    with ggscope.open(str(path)) as mf:
        for name, ref in (("f16", f16), ("i16", i16), ("i8", i8)):
            s = mf.tensor(name).stats(chunk_elems=1000, threads=2)
            want = _numpy_stats(np.asarray(ref, dtype=np.float64))
            for k in ("finite", "nan", "inf", "zeros", "min", "max"):
                assert s[k] == want[k], (name, k)
            assert s["mean"] == pytest.approx(want["mean"], rel=1e-12, abs=1e-15)
            assert s["std"] == pytest.approx(want["std"], rel=1e-12)
            assert s["abs_mean"] == pytest.approx(want["abs_mean"], rel=1e-12)
            assert s["histogram"]["counts"] == want["counts"], name
            assert np.array_equal(s["histogram"]["edges"], want["edges"])


@pytest.mark.parametrize("name", ["F16", "BF16", "Q4_K", "Q8_0", "F32", "bad"])
def test_statistics_make_no_blas_call(model, monkeypatch, name):
    """No ``np.dot`` on any route (codes, fused, numpy-decoded, non-finite values):
    OpenBLAS threads spin after a call and take a core from the statistics threads on a
    small machine."""
    def no_blas(*args, **kwargs):
        raise AssertionError("np.dot called by the statistics")
    monkeypatch.setattr(np, "dot", no_blas)
    t = model.tensor(f"t.{name}")
    assert tensor_stats(t, threads=2)["count"] == t.n_elements


def test_bf16_codes_match_gguf_py(model):
    t = model.tensor("t.BF16")
    s = t.stats()
    ref = _reference(t)
    counts, _ = np.histogram(ref, bins=64)
    assert s["histogram"]["counts"] == counts.tolist()
    assert s["min"] == ref.min() and s["max"] == ref.max() and s["zeros"] == (ref == 0).sum()


def test_unaligned_sixteen_bit_data(tmp_path):
    """alignment 1 puts an F16 tensor at an odd offset: read by copy, same answer."""
    odd = np.array([1, 2, 3], dtype=np.int8)
    f16 = (np.random.default_rng(5).standard_normal(300) * 2).astype(np.float16)
    path = write_gguf_py(tmp_path / "odd.gguf", alignment=1,
                         tensors=[TensorSpec("odd", Q.I8, odd), TensorSpec("w", Q.F16, f16)])
    with ggscope.open(str(path)) as mf:
        t = mf.tensor("w")
        assert t.offset % 2 == 1
        s = t.stats()
        want = _numpy_stats(f16.astype(np.float64))
        assert s["histogram"]["counts"] == want["counts"]
        assert (s["min"], s["max"], s["zeros"]) == (want["min"], want["max"], want["zeros"])


@pytest.mark.parametrize("cache", [True, False])
def test_decoded_once_or_twice_agree(model, monkeypatch, cache):
    """Pass two reuses decoded chunks when the tensor fits CACHE_BYTES, else decodes again."""
    import ggscope.stats.tensors as S
    monkeypatch.setattr(S, "CACHE_BYTES", 1 << 40 if cache else 0)
    for name in ("Q4_K", "bad"):
        t = model.tensor(f"t.{name}")
        s = tensor_stats(t, chunk_elems=512, threads=2)
        ref = _reference(t)
        finite = ref[np.isfinite(ref)]
        assert (s["min"], s["max"], s["zeros"], s["nan"], s["inf"]) == (
            finite.min(), finite.max(), (finite == 0).sum(), np.isnan(ref).sum(), np.isinf(ref).sum())
        assert s["std"] == pytest.approx(finite.std(), rel=1e-5)
        counts, _ = np.histogram(finite, bins=64)
        assert np.abs(np.array(s["histogram"]["counts"]) - counts).sum() <= 2


def test_range_beyond_float32_arithmetic(tmp_path):
    """max - min overflows float32: binned in float64 instead, no warning, no garbage."""
    x = np.array([-3.0e38, 3.0e38, 0.0, 1.0, -1.0, np.nan] * 50, dtype=np.float32)
    path = write_gguf_py(tmp_path / "wide.gguf", tensors=[TensorSpec("w", Q.F32, x)])
    with ggscope.open(str(path)) as mf:
        s = mf.tensor("w").stats(chunk_elems=64)
    f = x[np.isfinite(x)].astype(np.float64)
    counts, _ = np.histogram(f, bins=64)
    assert s["histogram"]["counts"] == counts.tolist()
    assert (s["min"], s["max"], s["nan"], s["zeros"]) == (f.min(), f.max(), 50, 50)
    assert s["mean"] == pytest.approx(f.mean(), abs=1e25)


def test_all_nan_tensor(tmp_path):
    x = np.full(100, np.nan, dtype=np.float32)
    h = np.full(100, np.nan, dtype=np.float16)
    path = write_gguf_py(tmp_path / "nan.gguf", tensors=[TensorSpec("x", Q.F32, x), TensorSpec("h", Q.F16, h)])
    with ggscope.open(str(path)) as mf:
        for name in ("x", "h"):
            s = mf.tensor(name).stats()
            assert (s["finite"], s["nan"], s["min"], s["mean"]) == (0, 100, None, None)
            assert sum(s["histogram"]["counts"]) == 0


def test_numpy_kernels_give_the_compiled_results(model, monkeypatch):
    """Small tensors skip numba (kernels_numpy); every kernel set -- numba's, numpy's and
    the C extension's -- gives the same statistics."""
    import ggscope.stats.cstats as C
    import ggscope.stats.kernels as compiled
    import ggscope.stats.kernels_numpy as plain
    import ggscope.stats.tensors as S
    sets = (compiled, plain) + ((C,) if C.available() else ())
    for t in model.tensors:
        got = {}
        for k in sets:
            monkeypatch.setattr(S, "_kernels", lambda n, k=k: k)
            got[k] = tensor_stats(t, chunk_elems=1000, threads=2)
        b = got[plain]
        for k in sets[:1] + sets[2:]:
            a = got[k]
            for key in ("count", "finite", "nan", "inf", "zeros", "min", "max", "histogram", "block_scales"):
                assert a[key] == b[key], (k.__name__, t.name, key)
            if a["finite"]:
                assert abs(a["mean"] - b["mean"]) <= 1e-6 * b["std"], t.name
                for key in ("std", "abs_mean"):
                    assert a[key] == pytest.approx(b[key], rel=1e-6), (k.__name__, t.name, key)


def test_the_compiled_kernels_serve_every_size(monkeypatch):
    """With the extension built at install, statistics never wait for numba: every
    tensor, small or large, runs on the C kernels."""
    import ggscope.stats.cstats as C
    import ggscope.stats.tensors as S
    if not C.available():
        pytest.skip("ggscope.stats._cstats not built")
    monkeypatch.setattr(S, "_numpy_spent", 0)
    assert S._kernels(10).__name__ == "ggscope.stats.cstats"
    assert S._kernels(1 << 30).__name__ == "ggscope.stats.cstats"


def test_a_large_tensor_does_not_load_numba(tmp_path):
    """A one-shot ``stats`` of a tensor past the numpy budget costs no numba import when
    the extension is built (the cold-start goal of issue 18)."""
    import subprocess
    import sys
    import ggscope.stats.cstats as C
    if not C.available():
        pytest.skip("ggscope.stats._cstats not built")
    import ggscope.stats.tensors as S
    rows = S.JIT_MIN_ELEMS // 1024 + 8                  # Q8_0 rows of 1024 values: 32 blocks of 34 bytes
    blocks = np.random.default_rng(1).integers(0, 256, (rows * 32, 34), dtype=np.uint8)
    blocks[:, 0:2] = np.array([0.01], np.float16).view(np.uint8)
    path = write_gguf_py(tmp_path / "big.gguf", tensors=[TensorSpec("w", Q.Q8_0, blocks.reshape(rows, -1))])
    code = ("import sys, ggscope\n"
            f"mf = ggscope.open({str(path)!r})\n"
            "s = mf.tensor('w').stats()\n"
            "print('numba' in sys.modules, s['count'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", str(rows * 1024)]


def test_a_small_tensor_does_not_load_numba(model):
    """A one-shot ``ggscope stats`` of a small tensor must not pay numba's import."""
    import subprocess
    import sys
    code = ("import sys, ggscope\n"
            f"mf = ggscope.open({str(model.path)!r})\n"
            "s = [t.stats() for t in mf.tensors]\n"
            "print('numba' in sys.modules, len(s))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", str(len(model.tensors))]


def test_numba_is_loaded_once_the_numpy_budget_is_spent(monkeypatch):
    """Without the compiled extension (here: turned off), small tensors use numpy and
    larger work loads numba."""
    import ggscope.stats.tensors as S
    monkeypatch.setenv("GGSCOPE_KERNELS", "numba")
    monkeypatch.setattr(S, "JIT_MIN_ELEMS", 1000)
    monkeypatch.setattr(S, "_numpy_spent", 0)
    monkeypatch.delitem(__import__("sys").modules, "numba", raising=False)   # as in a fresh process
    assert S._kernels(600).__name__ == "ggscope.stats.kernels_numpy"
    assert S._kernels(300).__name__ == "ggscope.stats.kernels_numpy"
    assert S._kernels(600).__name__ == "ggscope.stats.kernels"


def _codes(kind: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    normal = (rng.standard_normal(n) * 0.02).astype(np.float16).view(np.uint16)
    return {
        "zeros": np.zeros(n, np.uint16),
        "one": np.full(n, 0x3C00, np.uint16),                 # 1.0 everywhere
        "random": rng.integers(0, 1 << 16, n, dtype=np.uint16),
        "normal": normal,
        "half zero": np.where(rng.random(n) < 0.5, 0, normal).astype(np.uint16),
        "i8 zeros": np.zeros(n, np.uint8),
        "i8 random": rng.integers(0, 256, n, dtype=np.uint8),
    }[kind]


@pytest.mark.parametrize("kernels", ["compiled", "numpy", "c"])
@pytest.mark.parametrize("kind", ["zeros", "one", "random", "normal", "half zero", "i8 zeros", "i8 random"])
def test_count_codes_is_bincount_on_constant_and_spread_codes(kernels, kind):
    """Constant codes are counted into interleaved lanes (one counter would serialise every
    update on the previous store), spread codes into one table: either way, chunk by chunk,
    strided or not, the counts are numpy's bincount exactly."""
    import ggscope.stats.cstats as C
    import ggscope.stats.kernels as compiled
    import ggscope.stats.kernels_numpy as plain
    from ggscope.stats.counted import code_table
    if kernels == "c" and not C.available():
        pytest.skip("ggscope.stats._cstats not built")
    k = {"compiled": compiled, "numpy": plain, "c": C}[kernels]
    codes = _codes(kind, 300_007)
    size = 1 << (8 * codes.itemsize)
    table = code_table(size, np.int32)
    for s in range(0, codes.size, 65_536):
        k.count_codes(codes[s:s + 65_536], table)
    k.count_codes(codes[::3], table)                    # a strided view
    want = np.bincount(codes, minlength=size) + np.bincount(codes[::3], minlength=size)
    assert np.array_equal(table.sum(axis=0, dtype=np.int64)[:size], want)
    assert not table[:, size:].any()
    if kernels != "numpy" and kind in ("zeros", "one", "i8 zeros"):
        assert np.count_nonzero(table.any(axis=1)) == 4      # the constant run was split over the lanes


@pytest.mark.parametrize("kernels", ["numba", "c"])
@pytest.mark.parametrize("fill", ["zeros", "half zero"])
def test_constant_sixteen_bit_tensor_stats_are_exact(tmp_path, monkeypatch, fill, kernels):
    """An all-zero (or half-zero) F16 tensor through the compiled code counter: numpy's statistics."""
    import ggscope.stats.cstats as C
    import ggscope.stats.kernels as compiled
    import ggscope.stats.tensors as S
    if kernels == "c" and not C.available():
        pytest.skip("ggscope.stats._cstats not built")
    x = _codes(fill, 96 * 512).view(np.float16).reshape(96, 512)
    path = write_gguf_py(tmp_path / "z.gguf", tensors=[TensorSpec("z", Q.F16, x)])
    monkeypatch.setattr(S, "_kernels", lambda n: compiled if kernels == "numba" else C)
    with ggscope.open(str(path)) as mf:
        s = tensor_stats(mf.tensor("z"), chunk_elems=10_000, threads=2)
    want = _numpy_stats(x.astype(np.float64))
    for k in ("finite", "nan", "inf", "zeros", "min", "max"):
        assert s[k] == want[k], k
    assert s["histogram"]["counts"] == want["counts"]
    assert s["std"] == pytest.approx(want["std"], rel=1e-12, abs=1e-15)

