"""tensor_stats against numpy on gguf-py's dequantization of the same bytes."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize

import ggscope
from ggscope.stats import StatsCancelled, tensor_stats
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
