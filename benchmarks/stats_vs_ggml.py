"""Tensor statistics: ggscope (two threads, and one) vs ggml's native C (one thread) vs gguf-py.

Why: issue 27's goals -- ggscope's statistics of a tensor on two cores at least as fast
as ggml's own C decoding on one core, for every type people publish; one core within
0.8x of one C core; at least 10x gguf-py's ``dequantize`` + numpy.  All measure the same
32 Mi-element tensor in the same run: ggscope's ``tensor_stats`` (min, max, mean, std,
abs-mean, zeros, NaN/Inf counts, 64-bin histogram, block-scale summary) on a GGUF file;
ggml decoding the way its CPU backend does (``ggml_cpu_fp16_to_fp32`` /
``ggml_cpu_bf16_to_fp32`` for F16/BF16, ``to_float`` for the rest) plus a plain
min/max/sum/sum-of-squares loop in C (``ggml_stats.c``, chunks of 64 Ki elements in L2,
data already in memory); gguf-py's ``GGUFReader`` + ``dequantize`` + numpy
``min``/``max``/``mean``/``std``.  Figures are elements per second, best of ``--repeat``
rounds; each round runs every side once after a warm-up (the machine is shared: rounds
spread a busy spell over all sides, and the best run is the one least disturbed).  The
table also gives the file bytes ggscope reads per second and their share of the memory
bandwidth of its threads (one core's read bandwidth, measured at the start), and the
load average at start and end.

Which ggscope: the ``ggscope``, ``1 core`` and ``cpu/C`` columns run the route ``ggscope
stats`` runs -- the CLI's SIGBUS guard installed before the file is opened and the
statistics inside ``changes.reads_through_map``, so tensor bytes are views of the file's
map (no read(2) copy; ``ggscope.stats.chunks``); ``1c read`` and ``read/C`` run one core
on a library caller's route (no guard entered: read(2) into buffers), in the same child,
and the child stops if the two routes' results differ.  The data file is written in
large pieces, so its page cache holds large folios where the kernel makes them; a file
whose page cache is in 4 KiB pages costs the mapped route more page faults:
``--small-pages`` measures that case.

The peer is ggml as a user of it on this machine builds it: Release, ``-march=native``
for ggml-base (whose ggml-quants.c holds ``to_float``: ``GGML_NATIVE`` alone leaves it at
the compiler's baseline, SSE2) and ``GGML_NATIVE=ON`` for the CPU backend.

The tensor: normal float32 data quantized by ggml's own quantizer (the C harness; a
flat importance matrix for the IQ types that require one), 4 Mi elements tiled to the
full size; without a C compiler, by gguf-py where it can quantize.  The C side is built
from ggml's source with cmake: ``--ggml`` names a ggml or llama.cpp source checkout
(e.g. the llama.cpp vendored in llama-cpp-python 0.3.36) or a git directory (its HEAD is
extracted), default ``$GGML_SRC``; without it, or without cmake and a C compiler, the
ggml column is skipped and the reason printed.  Nothing of ggml is written into the
repository: sources, build and data go to ``--work`` (default a directory under the
system temp dir, reused across runs).

``--ceiling`` adds what two threads can reach here at best: two processes, each running
one thread's statistics of the tensor at the same time (``2 procs``, elements per
second of both together; ``2T/2P`` is the two-thread column against it).  A whole real
model (the per-call cost of its hundreds of small tensors): ``benchmarks/stats_model.py``.

    python benchmarks/stats_vs_ggml.py [--ggml DIR] [--types Q4_K,Q8_0] [--elems 33554432]
                                       [--repeat 3] [--threads 2] [--work DIR] [--before TREE]
                                       [--ceiling] [--small-pages]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TYPES = ("F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "Q5_0", "Q5_1", "Q4_1", "Q2_K", "Q3_K",
         "IQ4_XS", "IQ4_NL", "IQ3_S", "IQ2_XXS", "TQ1_0", "MXFP4")
COLS = 4096
TILE_ROWS = 1024                    # 4 Mi elements quantized, then tiled


from ggml_peer import GGML_FLAGS, OLD_FLAGS, build_harness, log  # noqa: E402 - benchmarks/ is on the path


# ---------------------------------------------------------------- the data

def ggml_name(qname: str) -> str:
    """ggml's type_name ("q4_K") of a type, from ggscope's one type table."""
    sys.path.insert(0, str(REPO))
    from ggscope.facts.ggml_types import TYPES_BY_NAME
    return TYPES_BY_NAME[qname].type_name


def tile_blocks(qname: str, harness: Path | None, work: Path) -> np.ndarray | None:
    """TILE_ROWS x COLS normal values as ``qname`` rows (uint8), or None when nothing here
    can quantize that type."""
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize
    x = np.random.default_rng(7).standard_normal((TILE_ROWS, COLS), dtype=np.float32) * np.float32(0.02)
    if qname == "F16":
        return x.astype(np.float16).view(np.uint8)
    if harness is not None:
        raw, out = work / "tile.f32", work / f"tile.{qname}"
        if not out.is_file():
            x.tofile(raw)
            subprocess.run([str(harness), "quantize", ggml_name(qname), str(TILE_ROWS), str(COLS), str(raw), str(out)],
                           check=True)
        return np.fromfile(out, np.uint8).reshape(TILE_ROWS, -1)
    try:
        return quantize(x, Q[qname])
    except NotImplementedError:
        return None


def write_gguf(path: Path, qname: str, tile: np.ndarray, elems: int) -> None:
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFWriter
    rows = elems // COLS
    data = np.tile(tile, (rows // TILE_ROWS, 1))
    g = GGUFWriter(str(path), "llama")
    g.add_tensor("w", data, raw_dtype=Q[qname])
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


def rewrite_in_pages(path: Path, page: int = 4096) -> None:
    """Write ``path`` again in ``page``-sized writes (a new file: its page cache is filled
    by those writes, page by page)."""
    data = path.read_bytes()
    path.unlink()
    with open(path, "wb", buffering=0) as fh:
        view = memoryview(data)
        for at in range(0, len(data), page):
            fh.write(view[at:at + page])


# ---------------------------------------------------------------- the Python sides (child process)

def best_time(fn, repeat: int) -> tuple[float, object]:
    out = fn()                               # warm-up: page cache, compiled kernels
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def child(path: str, repeat: int, threads: int, tree: str, peer: bool) -> dict:
    sys.path.insert(0, tree)
    import ggscope
    from ggscope.stats.tensors import tensor_stats

    import contextlib
    try:                                     # the route `ggscope stats` runs: the CLI installs the
        from ggscope.source.changes import guard_mapped_reads, reads_through_map   # guard first
    except ImportError:                      # (a --before tree without it: read(2) only)
        guard_mapped_reads, reads_through_map = (lambda: False), contextlib.nullcontext
    guard_mapped_reads()
    mf = ggscope.open(path)
    t = mf.tensor("w")

    def cpu_one() -> float:                  # one thread runs inline: this thread's CPU time
        c0 = time.thread_time()
        tensor_stats(t, threads=1)
        return time.thread_time() - c0
    with reads_through_map():                # (commands/stats.py enters it too)
        ours, s = best_time(lambda: tensor_stats(t, threads=threads), repeat)
        one, s_one = best_time(lambda: tensor_stats(t, threads=1), repeat)
        cpu1 = min(cpu_one() for _ in range(max(1, repeat)))
    # a library caller's route (no guard): read(2) into buffers, FileChanged on a change
    read1, r = best_time(lambda: tensor_stats(t, threads=1), repeat)
    if r != s_one:                           # one thread each: the same chunks, the same sums
        raise SystemExit(f"the two routes differ: {r} != {s_one}")
    out = {"ggscope": ours, "ggscope1": one, "cpu1": cpu1, "read1": read1, "n": t.n_elements, "bytes": t.nbytes,
           "ours": [s["min"], s["max"], s["mean"], s["std"]]}
    if not peer:
        return out

    from gguf import GGUFReader
    from gguf.quants import dequantize

    def peer():
        r = GGUFReader(path)
        rt = r.tensors[0]
        x = dequantize(rt.data, rt.tensor_type)
        return float(x.min()), float(x.max()), float(x.mean()), float(x.std())
    theirs, p = best_time(peer, repeat)
    mf.close()
    return {**out, "gguf_py": theirs, "peer": list(p)}


def solo(path: str, runs: int, tree: str) -> dict:
    """One process's share of the two-process ceiling: ``runs`` one-thread statistics of
    the tensor back to back (after a warm-up), started together with a twin."""
    sys.path.insert(0, tree)
    import ggscope
    from ggscope.stats.tensors import tensor_stats
    t = ggscope.open(path).tensor("w")
    tensor_stats(t, threads=1)                  # warm-up: page cache, tables
    t0 = time.perf_counter()
    for _ in range(runs):
        tensor_stats(t, threads=1)
    return {"seconds": time.perf_counter() - t0, "n": t.n_elements * runs}


def two_processes(path: Path, runs: int, tree: str) -> float:
    """Elements per second of two processes each running one thread's statistics at once:
    the most two threads can reach on this machine now (its cores, memory, other load)."""
    cmd = [sys.executable, __file__, "--solo", str(path), "--repeat", str(runs), "--tree", tree]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("a --solo child failed")
    return sum(o["n"] for o in outs) / max(o["seconds"] for o in outs)


def read_bandwidth() -> float:
    """Bytes per second one core reads from memory (a 512 MiB array summed as uint64 words,
    best of three): the ceiling a decoder that reads every byte once can approach."""
    a = np.ones(64 << 20, np.uint64)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t0)
    return a.nbytes / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ggml", default=os.environ.get("GGML_SRC"))
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--elems", type=int, default=32 << 20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ggscope-bench-ggml"))
    ap.add_argument("--before", help="another ggscope source tree (e.g. a worktree of an older commit) "
                                     "measured in the same run, as a column of its own")
    ap.add_argument("--numba", action="store_true",
                    help="also measure ggscope on its numba kernels (GGSCOPE_KERNELS=numba), as a column of its own: "
                         "the engine choice of issue 18, by measurement")
    ap.add_argument("--old-peer", action="store_true",
                    help="also measure the peer as this script built it before issue 27 (cmake defaults: "
                         "ggml-base at the baseline ISA, F16 through to_float), as a column of its own")
    ap.add_argument("--small-pages", action="store_true",
                    help="write the data file again 4 KiB at a time, so its page cache holds 4 KiB pages (as small "
                         "writes, or a kernel or file system without large folios, leave it): mapped reads then fault "
                         "more often than over the large folios a file written in large pieces gets")
    ap.add_argument("--ceiling", action="store_true",
                    help="also measure two processes each running one thread's statistics at once, as a column of "
                         "its own: the most two threads can give on this machine now")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--solo", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=str(REPO), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.repeat, a.threads, a.tree, a.tree == str(REPO))))
        return
    if a.solo:
        print(json.dumps(solo(a.solo, a.repeat, a.tree)))
        return
    if a.elems % (COLS * TILE_ROWS):
        ap.error(f"--elems must be a multiple of {COLS * TILE_ROWS}")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    harness, why = build_harness(a.ggml, work)
    old = None
    if harness is None:
        log(f"ggml C column skipped: {why}")
    else:
        if a.old_peer:
            old, why_old = build_harness(a.ggml, work, OLD_FLAGS, "default")
            if old is None:
                log(f"old peer column skipped: {why_old}")
        print(f"ggml C: {a.ggml}, built {' '.join(f for f in GGML_FLAGS if 'NATIVE' in f or 'FLAGS' in f or 'TYPE' in f)}; "
              f"F16/BF16 through ggml-cpu's row conversions, the rest through to_float")
    bw = read_bandwidth()
    print(f"memory read bandwidth, one core: {bw / 1e9:.1f} GB/s; load average at start {os.getloadavg()[0]:.2f}")
    before = f"{'before':>9} " if a.before else ""
    before += f"{'numba':>9} " if a.numba else ""
    before += f"{'C before':>9} " if old else ""
    ceiling_h = f"{'2 procs':>9} {'2T/2P':>6} " if a.ceiling else ""
    from ggscope.stats import cstats
    engine = "C kernels" if cstats.available() else "numba kernels (no ggscope._cstats built)"
    if cstats.available():
        engine += (", pass two of Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/IQ4_NL/IQ4_XS/Q8_0 on AVX-512"
                   if getattr(cstats._cstats, "vector_bins", lambda: False)() else ", portable pass two")
    log(f"ggscope column: {engine}")
    print(f"{'type':8} {before}{'ggscope':>9} {'1 core':>9} {'1c read':>9} {ceiling_h}{'ggml C':>9} {'gguf-py':>9}   "
          f"{'vs C':>6} {'core/C':>6} {'read/C':>6} {'cpu/C':>6} "
          f"{'vs gguf-py':>10} {'GB/s':>6} {'of bw':>6}  (elements/s; ggscope {a.threads} threads and 1, C 1 thread, "
          f"{a.elems / 2**20:.0f} Mi elements; ggscope, 1 core, cpu/C: the route `ggscope stats` runs "
          f"(SIGBUS guard on, tensor bytes read through the file's map); 1c read, read/C: one core on a library caller's route (read(2) "
          f"copies); cpu/C: one core against one by CPU time, blind to waiting for a core "
          f"on a busy machine; GB/s: file bytes ggscope reads per second on {a.threads} threads)")
    for qname in a.types.split(","):
        tile = tile_blocks(qname, harness, work)
        if tile is None:
            print(f"{qname:8} skipped: no quantizer for it here")
            continue
        path = work / f"{qname}.gguf"
        write_gguf(path, qname, tile, a.elems)
        if a.small_pages:
            rewrite_in_pages(path)
        def measure(tree: str, kernels: str = "") -> dict:
            env = dict(os.environ, GGSCOPE_KERNELS=kernels) if kernels else None
            return json.loads(subprocess.run([sys.executable, __file__, "--child", str(path), "--repeat", "1",
                                              "--threads", str(a.threads), "--tree", tree],
                                             check=True, capture_output=True, text=True, env=env).stdout)
        raw = work / f"{qname}.bin"
        if harness is not None:
            np.tile(tile, (a.elems // COLS // TILE_ROWS, 1)).tofile(raw)
        # rounds: every side once per round, so a busy spell of the machine hits all alike
        old_t, numba_t, ours_t, one_t, peer_t, c_t, oldc_t, cpu_t, ccpu_t = [], [], [], [], [], [], [], [], []
        read_t: list[float] = []
        two_p: list[float] = []
        for _ in range(a.repeat):
            if a.before:
                old_t.append(measure(a.before)["ggscope"])
            if a.numba:
                numba_t.append(measure(str(REPO), "numba")["ggscope"])
            res = measure(str(REPO))
            ours_t.append(res["ggscope"])
            one_t.append(res["ggscope1"])
            read_t.append(res["read1"])
            cpu_t.append(res["cpu1"])
            peer_t.append(res["gguf_py"])
            if a.ceiling:
                two_p.append(two_processes(path, 3, str(REPO)))
            n, nbytes = res["n"], res["bytes"]
            if harness is not None:
                c = json.loads(subprocess.run([str(harness), "stats", ggml_name(qname), str(n), str(raw), "2"],
                                              check=True, capture_output=True, text=True).stdout)
                c_t.append(c["seconds"])
                ccpu_t.append(c["cpu_seconds"])
                if old is not None:
                    oldc_t.append(json.loads(subprocess.run(
                        [str(old), "stats", ggml_name(qname), str(n), str(raw), "2", "to_float"],
                        check=True, capture_output=True, text=True).stdout)["seconds"])
                if [c["min"], c["max"]] != [np.float32(v) for v in res["ours"][:2]]:
                    log(f"{qname}: min/max differ: ggscope {res['ours'][:2]}, ggml {c['min']}, {c['max']}")
        raw.unlink(missing_ok=True)
        path.unlink()
        g, g1, p = n / min(ours_t), n / min(one_t), n / min(peer_t)
        cg = f"{n / min(c_t) / 1e9:8.2f}G" if c_t else f"{'-':>9}"
        vs_c = f"{g / (n / min(c_t)):5.2f}x" if c_t else f"{'-':>6}"
        core = f"{g1 / (n / min(c_t)):5.2f}x" if c_t else f"{'-':>6}"
        rd = n / min(read_t)
        rcore = f"{rd / (n / min(c_t)):5.2f}x" if c_t else f"{'-':>6}"
        cpu = f"{min(ccpu_t) / min(cpu_t):5.2f}x" if ccpu_t else f"{'-':>6}"
        before = f"{n / min(old_t) / 1e9:8.2f}G " if old_t else ""
        before += f"{n / min(numba_t) / 1e9:8.2f}G " if numba_t else ""
        before += f"{n / min(oldc_t) / 1e9:8.2f}G " if oldc_t else ""
        gbs = nbytes / min(ours_t)
        ceiling = f"{max(two_p) / 1e9:8.2f}G {g / max(two_p):6.2f} " if two_p else ""
        print(f"{qname:8} {before}{g / 1e9:8.2f}G {g1 / 1e9:8.2f}G {rd / 1e9:8.2f}G {ceiling}{cg} {p / 1e9:8.2f}G   "
              f"{vs_c} {core} {rcore} {cpu} {g / p:9.1f}x "
              f"{gbs / 1e9:6.2f} {gbs / (a.threads * bw):5.0%}", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
