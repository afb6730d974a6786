"""ggscope.diff.compare against independent oracles.

Numeric oracles are computed here with numpy from gguf-py (``GGUFReader`` for the bytes,
``gguf.quants.dequantize`` for the values) on files gguf-py wrote, and from the real
rwkv.cpp / ggml files in ../shared/fixtures (decoded with gguf-py or plain numpy).
"""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize as gg_dequantize

import ggscope
import ggscope.diff.compare as diffmod
from ggscope.diff.compare import DiffCancelled, diff_files
from gguf_writers import KV, GArray, T, TensorSpec, V, quantized_tensor, write_gguf_py


def oracle(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    d = b - a
    return {"max_abs": float(np.max(np.abs(d))), "rmse": float(np.sqrt(np.mean(d * d))),
            "rel_rmse": float(np.linalg.norm(d) / np.linalg.norm(a)),
            "cosine": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
            "snr_db": float(10 * np.log10((a @ a) / (d @ d)))}


def gguf_py_values(path) -> dict[str, np.ndarray]:
    r = GGUFReader(path)
    return {t.name: gg_dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).ravel()
            for t in r.tensors}


def assert_metrics(td, expected: dict[str, float]) -> None:
    for k, v in expected.items():
        assert getattr(td, k) == pytest.approx(v, rel=1e-9, abs=1e-12), k


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two gguf-py files: B re-encodes A's F32 tensors in other types and edits metadata."""
    d = tmp_path_factory.mktemp("diffpair")
    rng = np.random.default_rng(7)
    base = {n: rng.standard_normal((4, 512)).astype(np.float32) for n in ("w.f16", "w.q8", "w.q4k", "w.q51")}
    kinds = {"w.f16": T.F16, "w.q8": T.Q8_0, "w.q4k": T.TQ2_0, "w.q51": T.Q5_1}
    same = rng.standard_normal((3, 32)).astype(np.float32)
    from gguf.quants import quantize
    ta = [TensorSpec(n, T.F32, x) for n, x in base.items()]
    ta += [TensorSpec("same", T.F32, same), TensorSpec("gone", T.F32, same),
           TensorSpec("reshaped", T.F32, same), TensorSpec("grown", T.F32, same)]
    tb = []
    for n, x in base.items():
        q = x.astype(np.float16) if kinds[n] == T.F16 else quantize(x, kinds[n]).view(np.uint8)
        tb.append(TensorSpec(n, kinds[n], q))
    tb += [TensorSpec("same", T.F32, same), TensorSpec("new", T.F32, same),
           TensorSpec("reshaped", T.F32, same.reshape(6, 16)),
           TensorSpec("grown", T.F32, np.concatenate([same, same]))]
    kva = [KV("test.kept", V.UINT32, 5), KV("test.removed", V.STRING, "bye"),
           KV("test.value", V.UINT32, 1), KV("test.type", V.UINT32, 9),
           KV("test.arr", V.ARRAY, GArray(V.INT32, tuple(range(100)))),
           KV("test.tokens", V.ARRAY, GArray(V.STRING, ("a", "b", "c", "d")))]
    arr_b = list(range(100))
    for i in (3, 50, 51):
        arr_b[i] = -1
    kvb = [KV("test.kept", V.UINT32, 5), KV("test.added", V.FLOAT32, 0.5),
           KV("test.value", V.UINT32, 2), KV("test.type", V.INT32, 9),
           KV("test.arr", V.ARRAY, GArray(V.INT32, tuple(arr_b) + (7, 8))),
           KV("test.tokens", V.ARRAY, GArray(V.STRING, ("a", "B", "c", "d")))]
    pa = write_gguf_py(d / "a.gguf", kvs=kva, tensors=ta)
    pb = write_gguf_py(d / "b.gguf", kvs=kvb, tensors=tb)
    return pa, pb


def test_gguf_py_pair_metadata(pair):
    r = diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]))
    assert [e.key for e in r.metadata.added] == ["test.added"]
    assert [e.key for e in r.metadata.removed] == ["test.removed"]
    ch = {c.key: c for c in r.metadata.changed}
    assert set(ch) == {"test.value", "test.type", "test.arr", "test.tokens"}
    assert (ch["test.value"].a, ch["test.value"].b) == (1, 2)
    assert ch["test.type"].type_changed and ch["test.type"].a == ch["test.type"].b == 9
    arr = ch["test.arr"]
    assert (arr.len_a, arr.len_b, arr.n_differing) == (100, 102, 3)
    assert [(x.index, x.a, x.b) for x in arr.first] == [(3, 3, -1), (50, 50, -1), (51, 51, -1)]
    tok = ch["test.tokens"]
    assert tok.n_differing == 1 and (tok.first[0].index, tok.first[0].a, tok.first[0].b) == (1, "b", "B")
    assert not r.identical


def test_gguf_py_pair_tensors_match_numpy_oracle(pair):
    r = diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]))
    va, vb = gguf_py_values(pair[0]), gguf_py_values(pair[1])
    by = {t.name: t for t in r.tensors}
    assert [t.name for t in r.tensors] == ["w.f16", "w.q8", "w.q4k", "w.q51", "same", "gone",
                                            "reshaped", "grown", "new"]
    for name, typ in (("w.f16", "F16"), ("w.q8", "Q8_0"), ("w.q4k", "TQ2_0"), ("w.q51", "Q5_1")):
        td = by[name]
        assert td.status == "changed" and td.type_b == typ and "type" in td.changes
        assert_metrics(td, oracle(va[name], vb[name]))
        assert (0.6 if typ == "TQ2_0" else 0.99) < td.cosine <= 1.0   # ternary is coarse
    assert by["same"].status == "identical" and by["same"].snr_db == math.inf
    assert by["gone"].status == "removed" and by["new"].status == "added"
    assert by["grown"].status == "shape-changed" and by["grown"].rmse is None
    assert by["reshaped"].status == "identical" and by["reshaped"].changes[0] == "shape"
    assert r.counts()["changed"] == 4


def test_small_chunks_give_the_same_numbers(pair, monkeypatch):
    whole = diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]))
    monkeypatch.setattr(diffmod, "CHUNK_ELEMS", 300)      # windows of 256 elements (lcm of blocks)
    seen = []
    chunked = diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]), progress=lambda i, n, s: seen.append(i))
    for x, y in zip(whole.tensors, chunked.tensors):
        assert x.status == y.status
        for k in ("max_abs", "rmse", "rel_rmse", "cosine", "snr_db"):
            if getattr(x, k) is not None:
                assert getattr(y, k) == pytest.approx(getattr(x, k), rel=1e-9)
    assert seen == list(range(len(whole.tensors) + 1))


def test_same_file_is_identical_and_metadata_only(pair):
    m = ggscope.open(pair[0])
    r = diff_files(m, ggscope.open(pair[0]))
    assert r.identical and all(t.status == "identical" for t in r.tensors)
    r2 = diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]), metadata_only=True)
    assert r2.tensors == () and not r2.identical


def test_cancel(pair):
    ev = threading.Event()
    ev.set()
    with pytest.raises(DiffCancelled):
        diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]), cancel=ev)
    with pytest.raises(DiffCancelled):
        diff_files(ggscope.open(pair[0]), ggscope.open(pair[1]), cancel=lambda: True)


def test_equal_values_and_nonfinite(tmp_path):
    x = np.array([[0.5, -2.0, np.nan, 4.0]], dtype=np.float32)
    y = x.copy()
    y[0, 3] = np.inf
    pa = write_gguf_py(tmp_path / "a.gguf", tensors=[TensorSpec("x", T.F32, x), TensorSpec("n", T.F32, x)])
    pb = write_gguf_py(tmp_path / "b.gguf", tensors=[TensorSpec("x", T.F16, x.astype(np.float16)),
                                                       TensorSpec("n", T.F32, y)])
    r = diff_files(ggscope.open(pa), ggscope.open(pb))
    tx, tn = r.tensors
    assert tx.status == "equal" and tx.max_abs == 0.0 and tx.n_nonfinite == 1
    assert tn.status == "changed" and tn.n_nonfinite == 2 and tn.max_abs == 0.0


def test_truncated_file_reports_error_not_traceback(pair, tmp_path):
    data = open(pair[1], "rb").read()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:len(data) - 1000])   # into "reshaped", a tensor in both files
    r = diff_files(ggscope.open(pair[0]), ggscope.open(cut))
    assert any(t.status == "error" and "past the end" in t.error for t in r.tensors)


# ------------------------------------------------------------------ real files

def _rwkv(shared, name):
    p = shared / "rwkv" / f"tiny-rwkv-5v1-730K-{name}.bin"
    if not p.exists():
        pytest.skip(f"{p} not found")
    return ggscope.open(p)


@pytest.mark.parametrize("other, min_snr", [("FP16", 60.0), ("Q8_0", 35.0), ("Q5_1", 20.0)])
def test_rwkv_fp32_against_quantized(shared_fixtures, other, min_snr):
    a, b = _rwkv(shared_fixtures, "FP32"), _rwkv(shared_fixtures, other)
    r = diff_files(a, b)
    assert not r.identical
    assert [c.key for c in r.metadata.changed] == ["rwkv_cpp.data_type"]
    changed = [t for t in r.tensors if t.status == "changed"]
    assert changed and all(t.cosine > 0.99 and t.snr_db > min_snr for t in changed)
    assert all(t.status in ("identical", "changed") for t in r.tensors)
    # independent oracle for matrices: gguf-py decodes rwkv.cpp's ggml blocks
    qt = {"FP16": T.F16, "Q8_0": T.Q8_0, "Q5_1": T.Q5_1}[other]
    for td in changed[:3]:
        ta, tb = a.tensor(td.name), b.tensor(td.name)
        xa = np.frombuffer(ta.raw().tobytes(), dtype="<f4")
        raw = tb.raw()
        xb = raw.view("<f2") if qt == T.F16 else gg_dequantize(np.array(raw), qt)
        assert_metrics(td, oracle(xa, xb.ravel()))


def test_rwkv_fp32_against_itself(shared_fixtures):
    r = diff_files(_rwkv(shared_fixtures, "FP32"), _rwkv(shared_fixtures, "FP32"))
    assert r.identical


def test_legacy_gpt2_f32_against_f16(shared_fixtures):
    d = shared_fixtures / "ggml-legacy"
    a, b = ggscope.open(d / "gpt2-tiny-f32.bin"), ggscope.open(d / "gpt2-tiny-f16.bin")
    r = diff_files(a, b)
    assert not r.metadata.added and not r.metadata.removed
    assert {c.key for c in r.metadata.changed} <= {"ggml.ftype", "ggml.file_type"}
    assert {t.status for t in r.tensors} <= {"identical", "changed"}
    assert not [t for t in r.tensors if t.status in ("added", "removed")]
    for td in r.tensors:
        if td.status == "changed":
            assert td.type_b == "F16"
            xa = np.frombuffer(a.tensor(td.name).raw().tobytes(), "<f4")
            xb = np.frombuffer(b.tensor(td.name).raw().tobytes(), "<f2")
            assert_metrics(td, oracle(xa, xb))
            assert td.snr_db > 60


def test_cross_format_ggml_against_gguf(shared_fixtures, repo_fixtures):
    a = ggscope.open(shared_fixtures / "ggml-legacy" / "gpt2-tiny-f32.bin")
    b = ggscope.open(repo_fixtures / "TinyLlama-Test-164K-v1.0-Q8_0.gguf")
    r = diff_files(a, b)
    fields = {h.field for h in r.header}
    assert {"format", "version"} <= fields
    assert {t.status for t in r.tensors} == {"added", "removed"}
