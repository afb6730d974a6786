"""Tiny control vectors and importance matrices, and what llama.cpp's readers say of each.

Why: GG1124-GG1127 (ggscope.rules.sidecar_data) are written from common/common.cpp,
common/imatrix-loader.cpp, tools/quantize/quantize.cpp and src/llama-quant.cpp; the honest
check is the real readers.  ``cases()`` makes, deterministically (gguf-py's GGUFWriter,
fixed values), control vectors as llama-cvector-generator writes them and importance
matrices as llama-imatrix writes them, valid and broken one way each, for the bundled
example model (64 wide, 2 layers).

``python -m tools.record_sidecar_data --bin DIR --work DIR`` (DIR: a llama.cpp build's
bin folder holding llama-completion and llama-quantize) runs
``llama-completion -m MODEL --control-vector FILE`` and
``llama-quantize --allow-requantize --imatrix FILE MODEL OUT Q4_K_M`` on each case and
writes fixtures/sidecar_data/verdicts.json: ``loads``, ``refuses`` (the reader's error line,
or a non-zero exit) or ``crash`` (a signal), with llama.cpp's line.  CI only reads the
record: tests/rules/test_sidecar_data_agreement.py regenerates the files and compares.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFWriter

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
VERDICTS = ROOT / "fixtures" / "sidecar_data" / "verdicts.json"
Q = "blk.0.attn_q.weight"


def _f32(n, v: float = 0.5) -> np.ndarray:
    return np.full(n, v, np.float32)


def cases() -> list[dict]:
    """Each case: name, kind (control-vector / imatrix), tensors [(name, array)], keys."""
    cv = [("ok", [("direction.1", _f32(64))]),
          ("two-layers", [("direction.1", _f32(64)), ("direction.2", _f32(64, -0.5))]),
          ("layer-zero", [("direction.0", _f32(64))]),
          ("f16", [("direction.1", np.full(64, 0.5, np.float16))]),
          ("two-dims", [("direction.1", np.full((2, 64), 0.5, np.float32))]),
          ("widths-differ", [("direction.1", _f32(64)), ("direction.2", _f32(32))]),
          ("bad-name", [("dir.1", _f32(64))]),
          ("suffix-after-index", [("direction.1.weight", _f32(64))]),
          ("empty", []),
          ("narrow", [("direction.1", _f32(32))]),
          ("beyond-layers", [("direction.1", _f32(64)), ("direction.5", _f32(64))])]
    meta = {"imatrix.datasets": ["wiki.txt"], "imatrix.chunk_count": 10, "imatrix.chunk_size": 512}
    pair = [(Q + ".in_sum2", _f32(64, 2.0)), (Q + ".counts", _f32(1, 4.0))]
    im = [("ok", pair, meta),
          ("sums-only", pair[:1], meta),
          ("f16-sums", [(Q + ".in_sum2", np.full(64, 2.0, np.float16)), pair[1]], meta),
          ("no-metadata", pair, {}),
          ("chunk-count-int32", pair, {**meta, "imatrix.chunk_count": ("int32", 10)}),
          ("size-mismatch", [(Q + ".in_sum2", _f32(32, 2.0)), pair[1]], meta),
          ("other-model", [("foo.weight.in_sum2", _f32(64)), ("foo.weight.counts", _f32(1))], meta),
          ("empty", [], meta)]
    return ([{"name": f"control-vector.{n}", "kind": "control-vector", "tensors": t, "keys": {}} for n, t in cv]
            + [{"name": f"imatrix.{n}", "kind": "imatrix", "tensors": t, "keys": k} for n, t, k in im])


def write(case: dict, path: Path) -> Path:
    """The case's file, as llama-cvector-generator / llama-imatrix lay it out."""
    w = GGUFWriter(str(path), "controlvector" if case["kind"] == "control-vector" else None)
    if case["kind"] == "control-vector":
        w.add_string("controlvector.model_hint", "llama")
        w.add_int32("controlvector.layer_count", len(case["tensors"]))
    else:
        w.add_type("imatrix")
    for key, value in case["keys"].items():
        if isinstance(value, list):
            w.add_array(key, value)
        elif isinstance(value, tuple):
            w.add_int32(key, value[1])
        else:
            w.add_uint32(key, value)
    for name, arr in case["tensors"]:
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_all(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {c["name"]: write(c, folder / f"{c['name']}.gguf") for c in cases()}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


_REFUSAL = re.compile(r"(invalid \(\S+\) direction tensor \S+|invalid/unparsable direction tensor layer index"
                      r"|direction tensor in \S+ does not match previous dimensions|no direction tensors found"
                      r"|no valid control vector files passed|n_embd does not match model|failed to load imatrix"
                      r"|missing imatrix metadata|imatrix size \d+ is different[^\n]*|GGML_ASSERT\([^\n]*)")


def oracle(case: dict, path: Path, bindir: Path, work: Path) -> dict:
    if case["kind"] == "control-vector":
        cmd = [str(bindir / "llama-completion"), "-m", str(MODEL), "--control-vector", str(path), "-n", "1",
               "-p", "hi", "--no-warmup", "-no-cnv", "--chat-template", "chatml", "-t", "1"]
    else:
        cmd = [str(bindir / "llama-quantize"), "--allow-requantize", "--imatrix", str(path), str(MODEL),
               str(work / "quantized.gguf"), "Q4_K_M", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)
    out = (p.stdout + p.stderr).replace(str(path), path.name)     # no path of the recording machine
    m = _REFUSAL.search(out)
    if p.returncode < 0 or p.returncode == 134:
        return {"verdict": "crash", "error": m.group(1) if m else f"killed by signal {-p.returncode}"}
    if m or p.returncode:
        return {"verdict": "refuses", "error": m.group(1) if m else f"exit {p.returncode}"}
    return {"verdict": "loads", "error": ""}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.record_sidecar_data", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, required=True, help="a llama.cpp build's bin folder (llama-completion, "
                                                            "llama-quantize)")
    ap.add_argument("--work", type=Path, required=True, help="folder to write the files into")
    args = ap.parse_args(argv)
    paths = write_all(args.work)
    out = {}
    for case in cases():
        path = paths[case["name"]]
        out[case["name"]] = {**oracle(case, path, args.bin, args.work), "sha256": sha256(path)}
        print(f"{case['name']}: {out[case['name']]['verdict']} {out[case['name']]['error']}", file=sys.stderr)
    VERDICTS.parent.mkdir(parents=True, exist_ok=True)
    VERDICTS.write_text(json.dumps({"model_sha256": sha256(MODEL), "cases": out,
                                    "oracle": "llama-completion --control-vector and llama-quantize --imatrix of "
                                              "llama.cpp 0c1e570, as vendored in llama-cpp-python 0.3.36"},
                                   indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
