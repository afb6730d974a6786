"""The mean of a quantized tensor to float64 accuracy, whatever the threads.

Why: pass two summed ``v - centre`` in float32.  With the centre one constant, that
subtraction rounds the same way for every value of a binade, so its errors add up
instead of cancelling: on normal weights quantized to Q8_0 or Q5_1 (a mean below 1e-3
of the standard deviation, as weight matrices have) the mean came out 1e-4 to 1e-3 off
in relative terms, shown wrong in its third or fourth digit by ``ggscope stats``, and
another thread count (another centre, sampled per chunk) gave another wrong mean.  Now the values themselves
are summed and the centre comes off in float64 (csrc/_cstats_piece.h ``add_piece``).
The oracle is numpy's float64 mean of gguf-py's dequantization.
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.stats import cstats
from ggscope.stats.tensors import tensor_stats

gguf = pytest.importorskip("gguf")
pytestmark = pytest.mark.skipif(not cstats.available(), reason="the compiled statistics kernels are not built")


def _normal_weights(path, layout: str, n_rows: int = 512, cols: int = 4096):
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize, quantize
    from gguf_writers import TensorSpec, write_gguf_py
    x = (np.random.default_rng(7).standard_normal((n_rows, cols)) * 0.02).astype(np.float32)
    raw = quantize(x, Q[layout])
    write_gguf_py(path, tensors=[TensorSpec("w", Q[layout], raw)])
    return ggscope.open(path).tensor("w"), dequantize(raw, Q[layout]).astype(np.float64)


@pytest.mark.parametrize("layout", ["Q8_0", "Q4_0", "Q5_1"])
def test_the_mean_of_normal_weights_is_exact_to_float64_accuracy(tmp_path, layout):
    t, want = _normal_weights(tmp_path / f"{layout}.gguf", layout)
    exact = want.mean()
    assert abs(exact) < 1e-3 * want.std()                  # the hard case: a mean near 0
    means = []
    for threads in (1, 2):
        s = tensor_stats(t, threads=threads)
        # within 1e-8 standard deviations (0.2 ulp of a typical weight); it was up to 8e-7
        assert abs(s["mean"] - exact) <= 1e-8 * want.std()
        assert s["std"] == pytest.approx(want.std(), rel=1e-7)
        means.append(s["mean"])
    assert abs(means[0] - means[1]) <= 1e-9 * want.std()
