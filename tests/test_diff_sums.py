"""diff_sums.pair_sums on both engines (C built at install, numba) against numpy float64
arithmetic written out here."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ggscope.diff import sums as diff_sums
from ggscope.diff.sums import pair_sums
from gguf_writers import T, TensorSpec, write_gguf_py


def _engines():
    """Both engines; the C one is built by every install with a C compiler (setup.py),
    so its absence fails where a compiler is present instead of skipping silently."""
    yield pytest.param("numba", id="numba")
    yield pytest.param("c", id="c", marks=pytest.mark.skipif(
        diff_sums._cpairs is None and shutil.which("cc") is None, reason="no C compiler: ggscope._cpairs not built"))


@pytest.fixture(params=list(_engines()))
def engine(request, monkeypatch):
    monkeypatch.setenv("GGSCOPE_KERNELS", request.param)
    assert diff_sums.engine() == request.param
    return request.param


def test_the_extension_is_built_where_a_compiler_is():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on PATH")
    assert diff_sums._cpairs is not None, "ggscope.diff._cpairs not built into this tree: pip install -e . (or python setup.py build_ext --inplace), see setup.py"


def test_the_compiled_engine_is_the_default_where_built(monkeypatch):
    monkeypatch.delenv("GGSCOPE_KERNELS", raising=False)
    if diff_sums._cpairs is None:
        pytest.skip("ggscope.diff._cpairs not built")
    assert diff_sums.engine() == "c"


def test_without_the_extension_numba_serves(monkeypatch):
    """An install without a C compiler: numba's loops, whatever GGSCOPE_KERNELS says."""
    monkeypatch.setattr(diff_sums, "_cpairs", None)
    monkeypatch.delenv("GGSCOPE_KERNELS", raising=False)
    assert diff_sums.engine() == "numba"
    x, y = _data(3000, np.float32, np.float32)
    _check(pair_sums(x, y), _reference(x, y))
    monkeypatch.setenv("GGSCOPE_KERNELS", "c")
    assert diff_sums.engine() == "numba"


def _reference(x, y):
    x64, y64 = x.astype(np.float64).ravel(), y.astype(np.float64).ravel()
    fin = np.isfinite(x64) & np.isfinite(y64)
    a, b = x64[fin], y64[fin]
    with np.errstate(over="ignore", invalid="ignore"):
        d = b - a
        sums = ((a * a).sum(), (b * b).sum(), (a * b).sum(), (d * d).sum())
    same = (np.isnan(x64) & np.isnan(y64)) | (x64 == y64)
    return (*sums, np.abs(d).max() if d.size else 0.0,
            int(fin.sum()), int((~fin).sum()), int((~fin & ~same).sum()))


def _check(got, want):
    assert len(got) == 8
    assert [type(v) for v in got] == [float] * 5 + [int] * 3
    assert got[5:] == want[5:]
    assert got[4] == want[4]                  # max |b - a| exactly
    for g, w in zip(got[:4], want[:4]):
        if np.isfinite(w):
            assert g == pytest.approx(w, rel=1e-12, abs=1e-300)
        else:                                 # Inf, or NaN from Inf + -Inf
            assert g == w or (np.isnan(g) and np.isnan(w))


def _data(n, tx, ty, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(tx)
    y = (x + rng.standard_normal(n) * 0.01).astype(ty)
    return x, y


PLANTS = ["none", "nan", "inf", "same-nan", "opposite-inf", "nan-vs-inf", "overflow", "every-piece", "last"]


def _plant(x, y, plant):
    if plant == "nan":
        x[17], y[90_000] = np.nan, np.nan
    elif plant == "inf":
        y[5] = np.inf
    elif plant == "same-nan":
        x[8] = y[8] = np.nan
        x[9] = y[9] = -np.inf
        x[10] = y[10] = np.inf
    elif plant == "opposite-inf":             # both non-finite, not the same: a mismatch
        x[11], y[11] = np.inf, -np.inf
    elif plant == "nan-vs-inf":
        x[12], y[12] = np.nan, np.inf
        x[13], y[13] = -np.inf, np.nan
    elif plant == "overflow":                 # finite in float64, inf as a float32 difference
        x[4], y[4] = 3e38, -3e38
    elif plant == "every-piece":              # a NaN in many pieces, the largest difference beside one
        x[::1999] = np.nan
        y[3001] = x[3001] + 7.5
    elif plant == "last":                     # the last, partial piece alone holds the NaN
        y[-1] = np.nan


@pytest.mark.parametrize("tx,ty", [(np.float32, np.float32), (np.float32, np.float64),
                                   (np.float64, np.float32), (np.float64, np.float64)],
                         ids=["f32-f32", "f32-f64", "f64-f32", "f64-f64"])
@pytest.mark.parametrize("plant", PLANTS)
def test_pair_sums_match_float64(engine, plant, tx, ty):
    x, y = _data(100_003, tx, ty)
    _plant(x, y, plant)
    _check(pair_sums(x, y), _reference(x, y))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 2047, 2048, 2049, 4097, 65_537])
def test_lengths(engine, n):
    x, y = _data(n, np.float32, np.float32, seed=n)
    got = pair_sums(x, y)
    _check(got, _reference(x, y))
    if n == 0:
        assert got == (0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0)
    if n >= 7:                                # a NaN pair in the tail behind whole pieces
        x[n - 2] = np.nan
        _check(pair_sums(x, y), _reference(x, y))


def test_all_non_finite(engine):
    x = np.array([np.nan, np.inf, -np.inf, 1.0, np.nan], np.float32)
    y = np.array([np.nan, np.inf, np.inf, np.nan, 2.0], np.float32)
    assert pair_sums(x, y) == (0.0, 0.0, 0.0, 0.0, 0.0, 0, 5, 3)


def test_float64_values_past_float32(engine):
    """F64 tensors: squares and differences of finite values that overflow float64 are
    summed as float64 does (Inf), not counted as non-finite pairs."""
    x, y = _data(5000, np.float64, np.float64)
    x[100], y[100] = 1e300, 1e300             # a*a overflows, b-a = 0
    x[3000], y[3000] = 1e308, -1e308          # b-a overflows (and a*b: Inf + -Inf, NaN)
    with np.errstate(over="ignore", invalid="ignore"):
        got = pair_sums(x, y)
    _check(got, _reference(x, y))
    assert got[4] == np.inf and got[5:] == (5000, 0, 0)


def test_largest_difference_is_exact_among_float32_ties(engine):
    """Pairs with one float32 |b-a| but different float64 |b-a|: the float64 one wins."""
    x = np.zeros(4096, np.float32)
    y = np.zeros(4096, np.float32)
    x[10], y[10] = np.float32(1.0), np.float32(1.0) + np.float32(2.0 ** -23)
    x[3000], y[3000] = np.float32(2.0 ** -30), np.float32(1.0) + np.float32(2.0 ** -23)
    _check(pair_sums(x, y), _reference(x, y))


def test_shapes_and_layouts(engine):
    """2-D and strided inputs; chunks of different lengths are refused."""
    x, y = _data(6000, np.float32, np.float32)
    _check(pair_sums(x.reshape(60, 100), y.reshape(60, 100)), _reference(x, y))
    _check(pair_sums(x[::3], y[1::3]), _reference(x[::3], y[1::3]))
    with pytest.raises(ValueError, match="differ in length"):
        pair_sums(x, y[:-1])


def test_other_float_dtypes(engine):
    """Big-endian and float16 chunks are read as the native floats they hold; integers are refused."""
    x, y = _data(3000, np.float32, np.float32)
    _check(pair_sums(x.astype(">f4"), y.astype(">f8")), _reference(x, y.astype(np.float64)))
    h = y.astype(np.float16)
    _check(pair_sums(x, h), _reference(x, h.astype(np.float32)))
    with pytest.raises(TypeError, match="float32 or float64"):
        pair_sums(x, np.zeros(3000, np.int32))


def test_a_diff_does_not_load_numba(tmp_path):
    """A one-shot ``ggscope diff`` of two files costs no numba import when the extension
    is built (issue 18: every command starting at once)."""
    if diff_sums.engine() != "c":
        pytest.skip("ggscope.diff._cpairs not built or turned off")
    rng = np.random.default_rng(5)
    w = rng.standard_normal((64, 256)).astype(np.float32)
    a = write_gguf_py(tmp_path / "a.gguf", tensors=[TensorSpec("w", T.F32, w)])
    b = write_gguf_py(tmp_path / "b.gguf", tensors=[TensorSpec("w", T.F16, w.astype(np.float16))])
    code = ("import sys, io, contextlib, json\n"
            "from ggscope.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    rc = main(['diff', '--json', {str(a)!r}, {str(b)!r}])\n"
            "print('numba' in sys.modules, rc)\n"
            "print(out.getvalue())\n")
    env = dict(os.environ)
    env.pop("GGSCOPE_KERNELS", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    first, rest = r.stdout.split("\n", 1)
    assert first.split()[0] == "False"
    assert "max_abs" in rest                  # the values were compared, not only the bytes
