"""How fast ``ggscope validate`` is: a folder of small files, and one big header.

1. A folder of 100 small GGUF files written by gguf-py's GGUFWriter (a few metadata
   entries and 4 small F32/F16 tensors each).  Reported as files per second for
   ``validate_file`` in-process (one process, serial) and for the command line
   ``ggscope validate --jobs 1`` and ``--jobs 2`` (worker processes), median of runs.
2. A Llama-3-sized header (``open_header.write_header``: 128k tokens, 280k merges,
   291 tensor infos).  Budget: validating it without --deep costs no more than opening
   it, so the time of ``ggscope.open`` is compared with ``ggscope.open`` + ``validate``.

Run: python benchmarks/validate_folder.py [--runs 3] [--files 100]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def write_folder(folder: Path, n: int) -> list[Path]:
    import numpy as np
    from gguf import GGUFWriter

    rng = np.random.default_rng(7)
    paths = []
    for i in range(n):
        p = folder / f"small-{i:03d}.gguf"
        w = GGUFWriter(str(p), "llama")
        w.add_name(f"small-{i}")
        w.add_context_length(128)
        w.add_embedding_length(16)
        w.add_block_count(1)
        w.add_feed_forward_length(32)
        w.add_head_count(2)
        w.add_rope_dimension_count(8)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_uint32("general.quantization_version", 2)
        w.add_tensor("token_embd.weight", rng.standard_normal((32, 16)).astype(np.float32))
        w.add_tensor("blk.0.attn_norm.weight", np.ones(16, np.float32))
        w.add_tensor("blk.0.attn_q.weight", rng.standard_normal((16, 16)).astype(np.float16))
        w.add_tensor("output.weight", rng.standard_normal((32, 16)).astype(np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        paths.append(p)
    return paths


def _median(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_folder(paths: list[Path], runs: int) -> None:
    from ggscope.cli import main
    from ggscope.validate.runner import validate_file

    def in_process():
        for p in paths:
            validate_file(str(p))

    def cli(jobs: int):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["validate", "--format", "json", "--jobs", str(jobs), *map(str, paths)])

    in_process()                                  # import and compile the specs once
    n = len(paths)
    for label, fn in (("validate_file, in-process", in_process),
                      ("ggscope validate --jobs 1", lambda: cli(1)),
                      ("ggscope validate --jobs 2", lambda: cli(2))):
        s = _median(fn, runs)
        print(f"{label:28s} {n} files in {s * 1e3:7.1f} ms = {n / s:7.0f} files/s  (median of {runs})")


def bench_header(tmp: Path, runs: int) -> None:
    import ggscope
    from ggscope.validate.runner import validate
    from open_header import write_header

    path = tmp / "llama3-header.gguf"
    write_header(path)
    ggscope.open(path).close()

    def open_only():
        ggscope.open(path).close()

    found = []

    def open_validate():
        mf = ggscope.open(path)
        found[:] = validate(mf)
        mf.close()

    t_open = _median(open_only, runs)
    t_both = _median(open_validate, runs)
    print(f"Llama-3-sized header ({path.stat().st_size:,} bytes): ggscope.open {t_open * 1e3:.1f} ms, "
          f"open + validate {t_both * 1e3:.1f} ms -> validate adds {(t_both - t_open) * 1e3:.1f} ms "
          f"({t_both / t_open:.2f}x open); {len(found)} findings")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=100)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_folder(Path(tmp), args.files)
        bench_folder(paths, args.runs)
        bench_header(Path(tmp), args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
