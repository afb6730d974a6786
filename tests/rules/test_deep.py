"""Deep rules GG1001-GG1002: NaN/Inf planted in gguf-py-written tensors."""
import os

import numpy as np
import pytest
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
    fs = {(f.code, f.severity.value, f.message.split('"')[1]) for f in findings(p, deep=True) if f.code in ("GG1001", "GG1002")}
    assert ("GG1002", "error", "q") in fs and ("GG1002", "warning", "z") in fs
    assert not [x for x in fs if x[2] == "ok"]


def _sparse_gguf(path, tensors):
    """A GGUF v3 header for ``tensors`` [(name, ggml type id, ne0, ne1, nbytes)], then a hole."""
    import struct

    def s(x):
        return struct.pack("<Q", len(x)) + x.encode()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0)
    off = 0
    for name, code, ne0, ne1, nbytes in tensors:
        head += s(name) + struct.pack("<IQQIQ", 2, ne0, ne1, code, off)
        off += nbytes
    head += b"\0" * (-len(head) % 32)
    path.write_bytes(head)
    import os
    os.truncate(path, len(head) + off)
    return path


CHILD = """
import json, sys
from ggscope.core import progress
from ggscope.validate import validate_file
seen = []

class Recorder:
    def __init__(self, desc, total):
        self.desc, self.total = desc, total
    def advance(self, n):
        raise AssertionError("--deep reports absolute counts")
    def update(self, done, total=None, desc=None):
        self.desc, self.total = desc or self.desc, total or self.total
        seen.append((done, self.total, self.desc))
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        pass

with progress.use(Recorder):
    fs = validate_file(sys.argv[1], select=("GG1001", "GG1002"), deep=True)
# VmHWM, not getrusage: ru_maxrss keeps the forked parent's (pytest's) size across exec
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(json.dumps({"rss_mib": hwm / 1024,
                  "codes": sorted(f.code for f in fs), "last": seen[-1] if seen else None,
                  "monotone": all(a[0] <= b[0] for a, b in zip(seen, seen[1:]) if a[2] == b[2])}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak RSS is read from /proc (Linux)")
def test_deep_memory_is_bounded_by_chunks_not_tensors(tmp_path):
    """--deep streams: a 512 MiB F16 and a 142 MB Q8_0 tensor (a sparse file) are checked
    in well under their size of RSS (before: every page read stayed mapped, ~700 MB), and
    the progress task (``ggscope.core.progress``) sees every element."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    path = _sparse_gguf(tmp_path / "sparse.gguf", [("w", 1, 8192, 32768, 8192 * 32768 * 2),
                                                    ("q", 8, 8192, 16384, 8192 * 16384 // 32 * 34)])
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                         env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}, cwd=str(repo), timeout=600)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["codes"] == ["GG1002"]               # all-zero Q8_0 scales: the warning, nothing else
    assert got["rss_mib"] < 300, got
    done, total, desc = got["last"]
    assert done == total == 8192 * 16384 and desc.startswith("GG1002") and got["monotone"]


def test_progress_bar_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    """validate --deep draws a progress bar on a terminal (file-provided names escaped)
    and adds nothing to stderr when it is piped."""
    import io
    import sys

    from ggscope.cli import main
    a = np.ones(4096, np.float16)
    a[7] = np.nan
    p = gguf(tmp_path, tensors=[TensorSpec("w\x1b]0;t\x07[bold]", T.F16, a)])
    assert main(["validate", "--deep", "--select", "GG1001", str(p)]) == 1
    piped = capsys.readouterr().err
    assert "━" not in piped and "\r" not in piped and "GG1001 non-finite" not in piped

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    main(["validate", "--deep", "--select", "GG1001", str(p)])
    drawn = term.getvalue()
    assert "GG1001 non-finite-values" in drawn and "\\x1b]0;t\\x07[bold]" in drawn
    assert "\x07" not in drawn


@pytest.mark.parametrize("endian", ["little", "big"])
def test_nonfinite_in_every_float_type_across_chunks(tmp_path, monkeypatch, endian):
    """Counts and the first index are exact for F32, F64 and BF16 (raw), in either byte
    order, when the values sit in later chunks of several threads; a huge finite F64 is
    finite (no float32 rounding to Inf)."""
    from ggscope.rules import deep
    monkeypatch.setattr(deep, "CHUNK_ELEMS", 64)
    f32 = np.ones(1000, np.float32)
    f32[[700, 130, 999]] = [np.inf, np.nan, -np.inf]
    f64 = np.full(1000, 1e300)
    f64[513] = np.nan
    bf = np.ones(1000, np.float32)
    bf[[200, 201]] = [np.nan, -np.inf]
    order = "<" if endian == "little" else ">"
    bf16 = (bf.astype(order + "f4").view(order + "u4") >> 16).astype(order + "u2").view(np.uint8)
    p = gguf(tmp_path, endian=endian, tensors=[TensorSpec("a", T.F32, f32), TensorSpec("b", T.F64, f64),
                                               TensorSpec("c", T.BF16, bf16)])
    got = {f.message.split('"')[1]: f.message for f in findings(p, deep=True, select=("GG1001",))}
    assert set(got) == {"a", "b", "c"}
    assert "3 NaN/Inf values, the first at element 130" in got["a"]
    assert "1 NaN/Inf values, the first at element 513" in got["b"]
    assert "2 NaN/Inf values, the first at element 200" in got["c"]
