"""Per-tensor statistics: ggscope's ``tensor_stats`` vs gguf-py's dequantize + numpy.

Why: the issue's goal is "at least 4x gguf-py for every listed type, statistics
included".  Both sides get the same realistic quantized tensor (a normal matrix
quantized by ``gguf.quants.quantize`` where gguf-py can; Q4_K by the fixture quantizer in
``fixtures/make_fixtures.py``; Q6_K and IQ4_XS as blocks whose code bytes are random and
whose f16 scales come from the block maxima of real normal data -- random bytes would
give NaN scales).  gguf-py's side is ``dequantize`` followed by numpy ``min``, ``max``,
``mean`` and ``std``; ggscope's side computes more (abs-mean, zeros, NaN/Inf counts, a
64-bin histogram, block-scale distribution).  Each type runs in its own child process,
both sides in the same run, median of 5; peak RSS is the child's after ggscope's runs.

    python benchmarks/dequant.py [--rows 4096] [--cols 4096] [--repeat 5] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import median_s  # noqa: E402

TYPES = ("Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS", "F16", "BF16")


def realistic(qname: str, x: np.ndarray) -> np.ndarray:
    """``x`` (rows, cols) float32 encoded as ``qname`` blocks: (rows, bytes per row) uint8."""
    from gguf import GGMLQuantizationType as Q
    from gguf.constants import GGML_QUANT_SIZES
    from gguf.quants import quantize
    qt = Q[qname]
    if qname == "Q4_K":
        sys.path.insert(0, str(REPO / "fixtures"))
        from make_fixtures import quantize_q4_k
        return quantize_q4_k(x)
    if qname in ("Q6_K", "IQ4_XS"):
        elems, nbytes = GGML_QUANT_SIZES[qt]
        rng = np.random.default_rng(1)
        n_blocks = x.size // elems
        blocks = rng.integers(0, 256, size=(n_blocks, nbytes), dtype=np.uint8)
        amax = np.abs(x.reshape(n_blocks, elems)).max(axis=1)
        # d as ggml's quantizers choose it: Q6_K d = amax / (32 * 127) times the scale
        # (int8 scales 16..127 here), IQ4_XS d = amax / 127 / 32-ish; both f16.
        if qname == "Q6_K":
            blocks[:, 192:208] = rng.integers(16, 128, size=(n_blocks, 16), dtype=np.int8).view(np.uint8)
            d = (amax / (32 * 127)).astype(np.float16)
            blocks[:, 208:210] = d.view(np.uint8).reshape(-1, 2)
        else:
            d = (-amax / 127).astype(np.float16)
            blocks[:, 0:2] = d.view(np.uint8).reshape(-1, 2)
        return blocks.reshape(x.shape[0], -1)
    return quantize(x, qt)


def write_gguf(path: Path, qname: str, x: np.ndarray) -> None:
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFWriter
    data = realistic(qname, x)
    g = GGUFWriter(str(path), "llama")
    g.add_tensor("w", data, raw_dtype=Q[qname])
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()



def child(qname: str, rows: int, cols: int, repeat: int, threads: int) -> dict:
    import ggscope
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32) * 0.02
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{qname}.gguf"
        write_gguf(path, qname, x)
        del x
        mf = ggscope.open(str(path))
        t = mf.tensor("w")
        raw = t.raw()
        t.stats(threads=threads)                                   # warm the page cache
        ours = median_s(lambda: t.stats(threads=threads), repeat)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        def theirs_once():
            v = dequantize(raw, Q[qname])
            return v.min(), v.max(), v.mean(), v.std()
        theirs = median_s(theirs_once, repeat)
        s = t.stats(threads=threads)
        ref = theirs_once()
        assert abs(s["mean"] - ref[2]) <= 1e-5 * ref[3] + 1e-12 and abs(s["std"] / ref[3] - 1) < 1e-4, (s, ref)
        mf.close()
    n = rows * cols
    return {"type": qname, "elements": n, "ggscope": n / ours / 1e9, "gguf_py": n / theirs / 1e9,
            "ratio": theirs / ours, "rss_mb": rss}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--types", nargs="*", default=list(TYPES))
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.rows, a.cols, a.repeat, a.threads)))
        return 0
    print(f"{'type':8} {'elements':>10} {'ggscope G/s':>12} {'gguf-py G/s':>12} {'ratio':>7} {'peak RSS MB':>12}")
    for q in a.types:
        out = subprocess.run([sys.executable, __file__, "--child", q, "--rows", str(a.rows), "--cols",
                              str(a.cols), "--repeat", str(a.repeat), "--threads", str(a.threads)],
                             capture_output=True, text=True, env=os.environ)
        if out.returncode:
            print(f"{q:8} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(out.stdout)
        print(f"{q:8} {r['elements']:>10} {r['ggscope']:>12.3f} {r['gguf_py']:>12.3f} "
              f"{r['ratio']:>6.1f}x {r['rss_mb']:>12.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
