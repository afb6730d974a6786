"""Deep rules GG1001-GG1002: NaN/Inf planted in gguf-py-written tensors."""
import numpy as np
from gguf_writers import T, TensorSpec, quantized_tensor

from _helpers import findings, gguf


def test_nan_in_float_tensor(tmp_path):
    a = np.ones(64, np.float16)
    a[17] = np.nan
    p = gguf(tmp_path, tensors=[TensorSpec("w", T.F16, a), TensorSpec("ok", T.F32, np.ones(8, np.float32))])
    assert "GG1001" not in {f.code for f in findings(p)}             # only with --deep
    fs = [f for f in findings(p, deep=True) if f.code == "GG1001"]
    assert len(fs) == 1 and "1 NaN/Inf" in fs[0].message and "element 17" in fs[0].message


def test_block_scales(tmp_path):
    q = quantized_tensor("q", T.Q8_0, (64, 2), np.random.default_rng(1))
    data = q.data.copy()
    data.reshape(-1)[34 * 2:34 * 2 + 2] = np.frombuffer(np.float16(np.inf).tobytes(), np.uint8)  # block 2's d
    zero = np.zeros_like(q.data)
    p = gguf(tmp_path, tensors=[TensorSpec("q", T.Q8_0, data), TensorSpec("z", T.Q8_0, zero), q.__class__("ok", T.Q8_0, q.data)])
    fs = {(f.code, f.severity.value, f.message.split("'")[1]) for f in findings(p, deep=True) if f.code.startswith("GG10")}
    assert ("GG1002", "error", "q") in fs and ("GG1002", "warning", "z") in fs
    assert not [x for x in fs if x[2] == "ok"]
