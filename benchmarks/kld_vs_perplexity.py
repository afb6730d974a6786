"""Corpus KL divergence: ``ggscope diff --corpus`` vs llama.cpp's ``llama-perplexity``.

Why: issue 28 item 5 -- the forward pass evaluates a chunk as one batch, so two
128-token chunks of the real Gemma 3 270M through both models take at most a minute on
two cores.  Both sides do the same work on the same files, text, context, chunk count
and threads: evaluate the base over the text and keep its log-probabilities, then the
quantization against them (llama-perplexity: ``-m BASE --kl-divergence-base F`` then
``-m QUANT --kl-divergence-base F --kl-divergence``; ggscope: ``diff BASE QUANT
--corpus TEXT --kl-divergence-base F``, one process).  Figures per side: best wall time
of ``--repeat`` rounds (each round runs both sides, so a busy spell on the shared
machine hits both), tokens evaluated per second (2 models x chunks x ctx), and the
ratio (>1 = ggscope faster).  ggscope's numpy uses ``--threads`` BLAS threads
(OMP_NUM_THREADS / OPENBLAS_NUM_THREADS), its compiled ggml kernels split each product
over ggscope.source.stream.THREADS (2) threads, llama-perplexity ``-t``.  The load average is
printed before and after; the reports' PPL(Q) and Mean KLD lines are printed side by side.
A third side, "ggscope numpy", is ggscope with its compiled ggml kernels turned off
(GGSCOPE_GGML_KERNELS=0: numpy's sums, not ggml's bits): what the kernels change in
speed and in the figures.

    python benchmarks/kld_vs_perplexity.py --tool PATH/llama-perplexity BASE QUANT \\
        --corpus fixtures/perplexity/corpus.txt [--ctx 128] [--chunks 2] [--threads 2] [--repeat 2]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _timed(cmd: list[str], env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-1500:]}")
    return dt, done.stdout


def _kld(text: str) -> str:
    m = re.search(r"Mean    KLD:\s*(\S+)\s*±\s*(\S+)", text)
    return f"{m.group(1)} ± {m.group(2)}" if m else "?"


def _ppl_q(text: str) -> str:
    m = re.search(r"Mean PPL\(Q\)\s*:\s*(\S+)", text)
    return m.group(1) if m else "?"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base")
    p.add_argument("quant")
    p.add_argument("--tool", required=True, help="llama-perplexity built from the pinned llama.cpp")
    p.add_argument("--corpus", default=str(REPO / "fixtures" / "perplexity" / "corpus.txt"))
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--chunks", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    common = ["-c", str(args.ctx), "--chunks", str(args.chunks), "-t", str(args.threads)]
    best = {"ggscope": float("inf"), "ggscope numpy": float("inf"), "llama-perplexity": float("inf")}
    reports = {}
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            f = str(Path(tmp) / "base.kld")
            t1, _ = _timed([args.tool, "-m", args.base, "-f", args.corpus,
                            "--kl-divergence-base", f, *common], env)
            t2, out = _timed([args.tool, "-m", args.quant, "-f", args.corpus,
                              "--kl-divergence-base", f, "--kl-divergence", *common], env)
            best["llama-perplexity"] = min(best["llama-perplexity"], t1 + t2)
            reports["llama-perplexity"] = out
            for side, kernels in (("ggscope", "1"), ("ggscope numpy", "0")):
                t3, out = _timed([sys.executable, "-m", "ggscope.cli", "diff", args.base, args.quant,
                                  "--corpus", args.corpus, "--ctx", str(args.ctx), "--chunks",
                                  str(args.chunks), "--kl-divergence-base", str(Path(tmp) / "g.kld")],
                                 dict(env, GGSCOPE_GGML_KERNELS=kernels))
                best[side] = min(best[side], t3)
                reports[side] = out
    print(f"load average after:  {os.getloadavg()}")
    tokens = 2 * args.chunks * args.ctx
    print(f"{'side':18} {'seconds':>8} {'tokens/s':>9}  {'PPL(Q)':>9}  Mean KLD")
    for side, t in best.items():
        print(f"{side:18} {t:8.2f} {tokens / t:9.1f}  {_ppl_q(reports[side]):>9}  {_kld(reports[side])}")
    print(f"ratio ggscope / llama-perplexity (tokens/s): "
          f"{best['llama-perplexity'] / best['ggscope']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
