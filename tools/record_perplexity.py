"""Record what llama-perplexity reports, so CI can hold ggscope's --corpus report to it.

Why: CI never builds llama.cpp.  This script runs the oracle -- llama-perplexity built
from the llama.cpp that llama-cpp-python 0.3.36 vendors (tools/perplexity) -- on model
pairs and keeps its output as small text files under fixtures/perplexity/:

    <name>.base.txt        llama-perplexity -m BASE -f TEXT --kl-divergence-base F -c N --chunks K
    <name>.kld.txt         llama-perplexity -m QUANT --kl-divergence-base F --kl-divergence
    <name>.kld-fa-off.txt  the same with -fa off: llama.cpp's other attention path, whose
                           distance from the default shows how far llama.cpp agrees with itself
    <name>.json            the pair, the command lines and the parsed final block

and, with --keep-base, the --kl-divergence-base file itself (<name>.kld, for the
small pairs: the reader's test reads the oracle's own bytes).

Usage::

    python -m tools.record_perplexity --bin DIR --corpus fixtures/perplexity/corpus.txt \\
        --pair NAME BASE QUANT [--ctx 128] [--chunks 2] [--keep-base] [--threads 2]

DIR (or $LLAMA_PERPLEXITY_BIN) holds llama-perplexity.  The report's parser is
``parse_report`` (used by the tests too).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "perplexity"

_PAIR = r"\s*([-\d.naif]+)\s*±\s*([-\d.naif]+)"
_LINES = {
    "ppl_quant": r"Mean PPL\(Q\)\s*:" + _PAIR,
    "ppl_base": r"Mean PPL\(base\)\s*:" + _PAIR,
    "ln_ppl_ratio": r"Mean ln\(PPL\(Q\)/PPL\(base\)\)\s*:" + _PAIR,
    "ppl_ratio": r"Mean PPL\(Q\)/PPL\(base\)\s*:" + _PAIR,
    "ppl_diff": r"Mean PPL\(Q\)-PPL\(base\)\s*:" + _PAIR,
    "kld_mean": r"Mean    KLD:" + _PAIR,
    "dp_mean_pct": r"Mean    Δp:" + _PAIR + r" %",
    "dp_rms_pct": r"RMS Δp\s*:" + _PAIR + r" %",
    "same_top_p_pct": r"Same top p:" + _PAIR + r" %",
}
_LABELS = {"max": "Maximum", "99.9": r"99\.9%  ", "99.0": r"99\.0%  ", "95.0": r"95\.0%  ",
           "90.0": r"90\.0%  ", "75.0": r"75\.0%  ", "median": "Median ", "25.0": r"25\.0%  ",
           "10.0": r"10\.0%  ", "5.0": r" 5\.0%  ", "1.0": r" 1\.0%  ", "0.1": r" 0\.1%  ",
           "min": "Minimum"}
_KLD_PCT = ("max", "99.9", "99.0", "95.0", "90.0", "median", "10.0", "5.0", "1.0", "0.1", "min")
_BLOCK_START = "====== Perplexity statistics ======"


def final_block(text: str) -> list[str]:
    """The lines of llama-perplexity's final block, from its first heading to "Same top p",
    its log lines left out ([] when the run printed none: fewer than 100 scored tokens, or
    output cut short)."""
    lines = [ln for ln in text.splitlines() if not re.match(r"^\d+\.\d+\.\d+\.?\d* [IWE] ", ln)]
    ends = [i for i, ln in enumerate(lines) if ln.startswith("Same top p:")]
    if _BLOCK_START not in lines or not ends:
        return []
    return lines[lines.index(_BLOCK_START):ends[-1] + 1]


def parse_report(text: str) -> dict:
    """The final block of llama-perplexity --kl-divergence, named as ggscope's --json:
    every figure it prints (the Δp lines and the PPL ratio, difference and correlation
    only where the text has them, as the first records' parsed blocks did not keep them)."""
    out: dict = {}
    for key, pattern in _LINES.items():
        m = re.search(pattern, text)
        if m is None:
            if key in ("ppl_ratio", "ppl_diff", "dp_mean_pct"):
                continue
            raise ValueError(f"no {key!r} line in the report")
        out[key] = {"value": float(m.group(1)), "uncertainty": float(m.group(2))}
    if m := re.search(r"Cor\(ln\(PPL\(Q\)\), ln\(PPL\(base\)\)\):\s*([-\d.naif]+)%", text):
        out["cor_ln_ppl_pct"] = float(m.group(1))
    out["kld_percentiles"] = {}
    for key in _KLD_PCT:
        m = re.search(_LABELS[key] + r" KLD:\s*([-\d.]+)", text)
        if m is None:
            raise ValueError(f"no {key!r} KLD percentile line in the report")
        out["kld_percentiles"][key] = float(m.group(1))
    dp = {key: re.search(_LABELS[key] + r" Δp:\s*([-\d.]+)%", text) for key in _LABELS}
    if all(dp.values()):
        out["dp_percentiles_pct"] = {key: float(m.group(1)) for key, m in dp.items()}
    m = re.search(r"computing over (\d+) chunks, n_ctx=(\d+)", text)
    if m:
        out["n_chunk"], out["n_ctx"] = int(m.group(1)), int(m.group(2))
    return out


def _run(cmd: list[str], report: bool = False) -> str:
    """The command's output; with ``report`` until it holds the whole final block
    (llama.cpp's logger prints from a thread of its own and now and then loses the last
    lines at exit: measured on about one run in five on 2 cores)."""
    for _ in range(5):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        text = done.stdout + done.stderr
        if not report or "Same top p:" in text:
            return text
    sys.exit(f"{' '.join(cmd)}: no complete report in five runs")


def _public(cmd: list[str], paths: dict[str, str]) -> list[str]:
    """The command line with this machine's paths replaced by their roles."""
    names = {v: k for k, v in paths.items()}
    return [names.get(c, os.path.basename(c) if os.path.isabs(c) else c) for c in cmd]


def _report_only(text: str) -> str:
    """The oracle's per-chunk table and final block (its log lines name this machine)."""
    keep = [ln for ln in text.splitlines()
            if not re.match(r"^\d+\.\d+\.\d+\.\d+ [IWE] ", ln)]
    return "\n".join(keep).strip() + "\n"


def record(bin_dir: str, name: str, base: str, quant: str, corpus: str, ctx: int,
           chunks: int, threads: int, keep_base: bool) -> dict:
    exe = str(Path(bin_dir) / "llama-perplexity")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base_file = str(Path(tmp) / f"{name}.kld")
        roles = {"BASE": base, "QUANT": quant, "TEXT": corpus, "LOGITS.kld": base_file}
        common = ["-c", str(ctx), "--chunks", str(chunks), "-t", str(threads)]
        c1 = [exe, "-m", base, "-f", corpus, "--kl-divergence-base", base_file, *common]
        t1 = _run(c1)
        c2 = [exe, "-m", quant, "-f", corpus, "--kl-divergence-base", base_file,
              "--kl-divergence", *common]
        t2 = _run(c2, report=True)
        t3 = _run([*c2, "-fa", "off"], report=True)
        (OUT / f"{name}.base.txt").write_text(_report_only(t1))
        (OUT / f"{name}.kld.txt").write_text(_report_only(t2))
        (OUT / f"{name}.kld-fa-off.txt").write_text(_report_only(t3))
        if keep_base:
            shutil.copyfile(base_file, OUT / f"{name}.kld")
    rec = {"name": name, "base": os.path.basename(base), "quant": os.path.basename(quant),
           "corpus": os.path.basename(corpus), "ctx": ctx, "chunks": chunks,
           "oracle": "llama-perplexity from llama.cpp as vendored in llama-cpp-python 0.3.36",
           "commands": [_public(c1, roles), _public(c2, roles)],
           "report": parse_report(t2), "report_fa_off": parse_report(t3)}
    (OUT / f"{name}.json").write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n")
    return rec


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.environ.get("LLAMA_PERPLEXITY_BIN"),
                   help="directory holding llama-perplexity (or $LLAMA_PERPLEXITY_BIN)")
    p.add_argument("--corpus", required=True)
    p.add_argument("--pair", nargs=3, action="append", required=True,
                   metavar=("NAME", "BASE", "QUANT"))
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--chunks", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--keep-base", action="store_true",
                   help="also keep the --kl-divergence-base file (small models only)")
    args = p.parse_args(argv)
    if not args.bin:
        p.error("give --bin DIR or set LLAMA_PERPLEXITY_BIN")
    for name, base, quant in args.pair:
        rec = record(args.bin, name, base, quant, args.corpus, args.ctx, args.chunks,
                     args.threads, args.keep_base)
        r = rec["report"]
        print(f"{name}: PPL(Q) {r['ppl_quant']['value']} PPL(base) {r['ppl_base']['value']} "
              f"KLD {r['kld_mean']['value']} same top {r['same_top_p_pct']['value']} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
