"""Record llama.cpp's logits on the tiny models of ``tools.arch_models``, as fixtures.

Why: tests/forward/test_more_archs.py holds ggscope's forward pass to what llama.cpp
computes for each architecture, but CI never builds llama.cpp.  This script runs it
once -- llama.cpp as vendored in llama-cpp-python 0.3.36, through that binding -- and
writes what it said to ``fixtures/arch_logits/``: per architecture and encoding an
``.npz`` of the logits for ``arch_models.SEQ`` ([len(SEQ), n_vocab] float32) with an F32
KV cache (``f32kv``) and with llama.cpp's default F16 one (``f16kv``), and one
``records.json`` with each model's sha256 (a test knows the model it wrote again is the
one recorded) and how llama.cpp was run.

Each run is a child process (a llama.cpp abort kills the child, not the recorder):
``Llama(model, n_ctx=128, logits_all=True, n_threads=1, n_threads_batch=1, seed=0)``,
``eval(SEQ)``, the scores of every position -- the settings of the shared fixtures'
make_fixtures_arch.py.

Usage::

    python -m tools.record_arch_logits --lib DIR --binding DIR [--only ARCH ...]

``--lib``: the directory holding libllama.so (else ``$LLAMA_CPP_LIB_PATH``);
``--binding``: the llama-cpp-python 0.3.36 source tree holding the ``llama_cpp``
package (else ``$LLAMA_CPP_PYTHON``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "arch_logits"
ENCODINGS = ("F32", "Q8_0")


def _worker(model: str, kv: str, out: str) -> None:
    """In the child: load ``model`` with llama.cpp, evaluate SEQ, save the scores."""
    from llama_cpp import Llama
    from tools.arch_models import SEQ
    kw = dict(model_path=model, n_ctx=128, logits_all=True, n_threads=1, n_threads_batch=1,
              seed=0, verbose=False)
    if kv == "f32":
        kw.update(type_k=0, type_v=0)                                # GGML_TYPE_F32 cache
    llm = Llama(**kw)
    llm.eval(SEQ)
    np.save(out, np.array(llm.scores[:len(SEQ)], dtype=np.float32))


def _run(model: Path, kv: str, lib: str, binding: str, tmp: Path) -> np.ndarray:
    out = tmp / f"{model.stem}-{kv}.npy"
    env = dict(os.environ, LLAMA_CPP_LIB_PATH=lib,
               PYTHONPATH=os.pathsep.join([binding, str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "tools.record_arch_logits", "--worker",
                           str(model), kv, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not out.is_file():
        raise SystemExit(f"llama.cpp failed on {model.name} ({kv} cache), exit "
                         f"{proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return np.load(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.environ.get("LLAMA_CPP_LIB_PATH"),
                    help="directory of libllama.so (default: $LLAMA_CPP_LIB_PATH)")
    ap.add_argument("--binding", default=os.environ.get("LLAMA_CPP_PYTHON"),
                    help="llama-cpp-python 0.3.36 source tree (default: $LLAMA_CPP_PYTHON)")
    ap.add_argument("--only", nargs="*", help="architectures to record (default: all)")
    ap.add_argument("--worker", nargs=3, metavar=("MODEL", "KV", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(*args.worker)
        return 0
    if not (args.lib and args.binding):
        ap.error("give --lib and --binding (or set LLAMA_CPP_LIB_PATH and LLAMA_CPP_PYTHON)")
    from tools import arch_models
    OUT.mkdir(parents=True, exist_ok=True)
    index = OUT / "records.json"
    records = json.loads(index.read_text()) if index.is_file() else {}
    records.setdefault("models", {})
    records["how"] = ("llama.cpp as vendored in llama-cpp-python 0.3.36 through that binding: "
                      "Llama(n_ctx=128, logits_all=True, n_threads=1, n_threads_batch=1, seed=0), "
                      "eval(seq); f32kv: type_k = type_v = F32, f16kv: the default F16 cache")
    records["seq"] = arch_models.SEQ
    archs = args.only or list(arch_models.SPECS)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for arch in archs:
            for enc in ENCODINGS:
                model = arch_models.write(arch, enc, tmp / f"tiny-{arch}-{enc}.gguf")
                logits = {kv: _run(model, kv, args.lib, args.binding, tmp) for kv in ("f32", "f16")}
                np.savez_compressed(OUT / f"{arch}-{enc}.npz", f32kv=logits["f32"], f16kv=logits["f16"])
                records["models"][f"{arch}-{enc}"] = {
                    "sha256": arch_models.sha256(model), "shape": list(logits["f32"].shape),
                    "f16_vs_f32_cache": float(np.abs(logits["f32"] - logits["f16"]).max())}
                print(f"{arch} {enc}: {logits['f32'].shape}, |f32kv - f16kv| "
                      f"{records['models'][f'{arch}-{enc}']['f16_vs_f32_cache']:.2e}")
    index.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
