"""Building a SentencePiece tokenizer from hostile and real vocabularies: ggscope beside llama.cpp.

Why: issue 23 -- ``run`` on a 2.6 MB GGUF whose SentencePiece vocabulary is a chain of
prefixes took 119 s and 5.9 GB, and one 320 KB piece 86-151 s, because the merge table
derived from the scores was quadratic.  ``ggscope.model.spm`` runs llama.cpp's own
algorithm, which needs no table.  This measures, per vocabulary, in a fresh child
process each (time and peak RSS of the child, under RLIMIT_AS so a runaway ends):

* ggscope: ``tokenizer.load(ggscope.open(f)).encode("Hello world")``;
* llama.cpp: ``llama_cpp.Llama(f, vocab_only=True).tokenize(b"Hello world")`` through
  llama-cpp-python (the peer; skipped when it is not given).

Vocabularies: a chain of prefixes "a", "aa", "aaa", ... of about 2.6 MB (every split of
a piece into two is a piece: the old table had n^2/2 merges); 256 byte pieces
plus one piece of 320 KB; the real LLaMA vocabulary of ../shared/fixtures/llama-vocab
when present.  Printed: seconds and MiB per tool, the ratio, and the load average.

Run: python benchmarks/tokenizer_build.py [--llama-cpp-python DIR --llama-lib DIR]
(DIR: the unpacked llama-cpp-python source and the directory of its libllama.so; or the
environment variables LLAMA_CPP_PYTHON and LLAMA_CPP_LIB_PATH.)
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

GGSCOPE = ("import sys, ggscope; from ggscope.model.tokenizer import load; "
           "print(load(ggscope.open(sys.argv[1])).encode('Hello world', add_bos=False))")
LLAMA = ("import sys; sys.path.insert(0, sys.argv[2]); import llama_cpp; "
         "m = llama_cpp.Llama(sys.argv[1], vocab_only=True, verbose=False); "
         "print(m.tokenize(b'Hello world', add_bos=False))")


def _vocab_file(path: Path, tokens: list[str], types: list[int]) -> Path:
    from gguf_writers import KV, GArray, V, write_gguf_py
    n = len(tokens)
    return write_gguf_py(path, kvs=[
        KV("llama.context_length", V.UINT32, 128), KV("llama.embedding_length", V.UINT32, 64),
        KV("llama.block_count", V.UINT32, 1), KV("llama.feed_forward_length", V.UINT32, 128),
        KV("llama.attention.head_count", V.UINT32, 4),
        KV("llama.attention.layer_norm_rms_epsilon", V.FLOAT32, 1e-5),
        KV("tokenizer.ggml.model", V.STRING, "llama"),
        KV("tokenizer.ggml.tokens", V.ARRAY, GArray(V.STRING, tuple(tokens))),
        KV("tokenizer.ggml.scores", V.ARRAY, GArray(V.FLOAT32, tuple(float(len(t)) for t in tokens))),
        KV("tokenizer.ggml.token_type", V.ARRAY, GArray(V.INT32, tuple(types))),
    ])


def vocabularies(tmp: Path) -> dict[str, Path]:
    byte_pieces = [f"<0x{b:02X}>" for b in range(256)]
    chain = ["\u2581"] + ["a" * k for k in range(1, 2280)]      # about 2.6 MB; every split a piece
    out = {
        "chain of prefixes (2.6 MB)": _vocab_file(tmp / "chain.gguf", ["<unk>", "<s>", "</s>"] + byte_pieces + chain,
                                                  [2, 3, 3] + [6] * 256 + [1] * len(chain)),
        "one 320 KB piece": _vocab_file(tmp / "long.gguf", ["<unk>", "<s>", "</s>"] + byte_pieces
                                        + ["\u2581", "a", "\u2581" + "a" * (320 << 10)], [2, 3, 3] + [6] * 256 + [1] * 3),
    }
    real = REPO / ".." / "shared" / "fixtures" / "llama-vocab" / "ggml-vocab-llama-spm.gguf"
    if real.is_file():
        out["LLaMA's own 32k vocabulary"] = real
    return out


def _limits(mib: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))
    return apply


_PEAK = "; import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def measure(code: str, args: list[str], env: dict, mib: int, timeout: float) -> tuple[float, str, str]:
    """(seconds, peak RSS of the child, its answer or why it failed)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code + _PEAK, *args], capture_output=True, text=True,
                              env=env, preexec_fn=_limits(mib), timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, "?", f"killed after {timeout:.0f} s"
    seconds = time.perf_counter() - t0
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return seconds, "?", (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:80]
    return seconds, f"{int(lines[-1]) / 1024:.0f} MiB", lines[0][:60]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp-python", default=os.environ.get("LLAMA_CPP_PYTHON"))
    ap.add_argument("--llama-lib", default=os.environ.get("LLAMA_CPP_LIB_PATH"))
    ap.add_argument("--memory-mib", type=int, default=8192)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if args.llama_lib:
        env["LLAMA_CPP_LIB_PATH"] = args.llama_lib
    with tempfile.TemporaryDirectory() as tmp:
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        for name, path in vocabularies(Path(tmp)).items():
            g = measure(GGSCOPE, [str(path)], env, args.memory_mib, args.timeout)
            print(f"{name} ({path.stat().st_size / 2**20:.1f} MiB file)")
            print(f"  ggscope   {g[0]:7.2f} s  {g[1]:>8}  {g[2]}")
            if args.llama_cpp_python:
                p = measure(LLAMA, [str(path), args.llama_cpp_python], env, args.memory_mib, args.timeout)
                print(f"  llama.cpp {p[0]:7.2f} s  {p[1]:>8}  {p[2]}")
                print(f"  ratio ggscope / llama.cpp: {g[0] / p[0]:.2f}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
