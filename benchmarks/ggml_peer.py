"""The C peer of the benchmarks: ggml built from its source as a user of ggml on this
machine builds it, and the statistics harness (ggml_stats.c) linked against it.

Why apart: stats_vs_ggml.py, validate_vs_c.py and diff_memory.py measure against the same
build (one build directory per source and flags, reused across runs and scripts); how
it is made is one mechanism.

Contract: ``build_harness(ggml, work)`` is (the harness's path, "") or (None, why not);
nothing is written outside ``work``.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# How a user of ggml on this machine builds it: Release, tuned for this CPU -- both
# ggml-base (ggml-quants.c's to_float, which GGML_NATIVE alone leaves at the compiler's
# baseline) and the CPU backend (GGML_NATIVE: its F16/BF16 row conversions).
QUIET = ("-DGGML_OPENMP=OFF", "-DGGML_BUILD_TESTS=OFF", "-DGGML_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TESTS=OFF",
         "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_CURL=OFF")
GGML_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DCMAKE_C_FLAGS=-march=native",
              "-DCMAKE_CXX_FLAGS=-march=native", *QUIET)
# ``--old-peer``: the peer before issue 27 -- cmake's defaults (ggml-base at the compiler's
# baseline) and every type through to_float
OLD_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", *QUIET)


def build_harness(ggml: str | None, work: Path, flags: tuple[str, ...] = GGML_FLAGS,
                  tag: str = "native") -> tuple[Path | None, str]:
    """(path of the built harness, "") or (None, why not).  ``ggml`` is a ggml checkout,
    a llama.cpp checkout (its ggml/ is built through llama.cpp's top level, as llama.cpp
    builds it) or a git directory of either (its HEAD is extracted)."""
    if not ggml:
        return None, "no ggml source (--ggml or $GGML_SRC)"
    for tool in ("cmake", "cc"):
        if shutil.which(tool) is None:
            return None, f"no {tool} on PATH"
    src = Path(ggml)
    if not (src / "CMakeLists.txt").is_file():
        try:
            commit = subprocess.run(["git", f"--git-dir={src}", "rev-parse", "HEAD"], check=True,
                                    capture_output=True, text=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None, f"{src} is neither a ggml checkout nor a git directory"
        tree = work / f"ggml-{commit[:12]}"
        if not (tree / "CMakeLists.txt").is_file():
            tree.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", f"--git-dir={src}", "archive", "HEAD"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        src = tree
    # a ggml/ directory inside llama.cpp (no ggml.pc.in of its own) builds through its parent
    if (src / "ggml" / "include" / "ggml.h").is_file():
        top, inc = src, src / "ggml" / "include"
    elif not (src / "ggml.pc.in").is_file() and (src.parent / "ggml" / "include" / "ggml.h").is_file():
        top, inc = src.parent, src / "include"
    else:
        top, inc = src, src / "include"
    key = hashlib.sha1((str(top.resolve()) + " ".join(flags)).encode()).hexdigest()[:12]
    build = work / f"build-{tag}-{key}"
    libdir = next((p.parent for p in build.glob("**/libggml-cpu.so")), None) if build.is_dir() else None
    if libdir is None:
        log(f"building ggml-base and ggml-cpu ({tag}) from {top} in {build} (minutes, once)")
        try:
            subprocess.run(["cmake", "-S", str(top), "-B", str(build), *flags], check=True, capture_output=True)
            subprocess.run(["cmake", "--build", str(build), "--target", "ggml-base", "ggml-cpu", "-j2"],
                           check=True, capture_output=True)
        except subprocess.CalledProcessError as exc:
            return None, f"cmake failed: {exc.stderr.decode(errors='replace')[-400:]}"
        libdir = next((p.parent for p in build.glob("**/libggml-cpu.so")), None)
        if libdir is None:
            return None, f"no libggml-cpu.so under {build} after the build"
    exe = build / "ggml_stats"
    try:
        subprocess.run(["cc", "-O3", "-march=native", "-ffast-math", "-o", str(exe), str(HERE / "ggml_stats.c"),
                        f"-I{inc}", f"-L{libdir}", "-lggml-cpu", "-lggml-base", "-lm", f"-Wl,-rpath,{libdir}"],
                       check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        return None, f"compiling the harness failed: {exc.stderr.decode(errors='replace')[-400:]}"
    return exe, ""
