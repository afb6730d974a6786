"""Record what ggml-cpu's own kernels compute, so CI can hold ggscope's arithmetic to them.

Why: ggscope's default forward pass imitates llama.cpp's CPU backend (activations
rounded to the weight type's dot-product format, GELU through ggml's fp16 table), and
on a model as sensitive as gemma-3-270m one fp16 step in a table entry or one Q8_0
integer in a block is visible in the KL-divergence report.  CI never builds llama.cpp,
so this script asks the library itself -- libggml-cpu built from the llama.cpp that
llama-cpp-python 0.3.36 vendors -- and keeps the answers in
fixtures/perplexity/ggml-cpu-arithmetic.json:

* ``gelu_f16_table``: the SHA-256 of ``ggml_table_gelu_f16`` (65536 fp16 codes, filled
  by ``ggml_cpu_init``) and the codes of a few entries for a readable failure;
* ``q8_0`` / ``q8_K``: float32 rows (some built so that ``x*127/amax`` lands on or next
  to a .5 tie, where the reference's ``1/d`` and the x86 kernel's ``127/amax`` part) and
  the blocks ``quantize_row_q8_0`` / ``quantize_row_q8_K`` made of them.

Usage::

    python -m tools.record_ggml_arithmetic --lib DIR

DIR (or $GGML_CPU_LIB_DIR) holds libggml-cpu.so.  The rows are regenerated from a
fixed seed, so the record is deterministic for one library.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "perplexity" / "ggml-cpu-arithmetic.json"
PROBES = (0x3C00, 0xBC00, 0xC007, 0xBFFF, 0xC52E, 0x4000, 0x2E66, 0xA8F5)   # 1, -1, -2.014, ...


def rows(n_per_row: int, seed: int) -> np.ndarray:
    """Four rows: Gaussian, heavy-tailed, and two of .5 ties (x = amax*(k+0.5)/127)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n_per_row).astype(np.float32)
    b = (rng.standard_t(2, n_per_row) * 30).astype(np.float32)
    ties = []
    for amax in (np.float32(158.71214), np.float32(9.6071005)):
        k = rng.integers(-126, 126, n_per_row).astype(np.float32) + np.float32(0.5)
        t = (amax * k / np.float32(127)).astype(np.float32)
        t[::32] = amax                                         # every block's largest |x|
        ties.append(t)
    return np.stack([a, b, *ties]).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.environ.get("GGML_CPU_LIB_DIR"),
                    help="directory of libggml-cpu.so (or $GGML_CPU_LIB_DIR)")
    args = ap.parse_args(argv)
    if not args.lib:
        ap.error("give --lib DIR or set GGML_CPU_LIB_DIR")
    lib = ctypes.CDLL(str(Path(args.lib) / "libggml-cpu.so"))
    lib.ggml_cpu_init()
    table = np.ctypeslib.as_array((ctypes.c_uint16 * 65536).in_dll(lib, "ggml_table_gelu_f16")).copy()
    record = {
        "oracle": "libggml-cpu from llama.cpp as vendored in llama-cpp-python 0.3.36 (native build)",
        "gelu_f16_table": {"sha256": hashlib.sha256(table.astype("<u2").tobytes()).hexdigest(),
                           "probes": {f"{c:04x}": f"{int(table[c]):04x}" for c in PROBES}},
    }
    for kind, n, block_bytes, fn in (("q8_0", 256, 34, lib.quantize_row_q8_0),
                                     ("q8_K", 256, 292, lib.quantize_row_q8_K)):
        x = rows(n, seed=28)
        out = []
        for row in x:
            buf = (ctypes.c_uint8 * (n // (32 if kind == "q8_0" else 256) * block_bytes))()
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            fn(row.ctypes.data, ctypes.addressof(buf), n)
            out.append(bytes(buf).hex())
        record[kind] = {"seed": 28, "n_per_row": n, "rows": [r.tobytes().hex() for r in x],
                        "blocks": out}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
