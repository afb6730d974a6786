"""Where llama.cpp puts the weights: the mapped file range, the repacked copies, offloaded layers.

Why: ``load_tensors`` prints one ``model buffer size`` line per buffer type, and the
numbers are not the file size.  With mmap (the default) the CPU buffer is a view of the
file from the first to the last byte of the tensors it holds, per file
(``llama_model_loader::get_mapping_range``, src/llama-model-loader.cpp); weights that
ggml-cpu's extra buffer type repacks (``CPU_REPACK``) are copied out, their size
``ggml_nbytes`` padded to ``TENSOR_ALIGNMENT`` (32) each, as
``ggml_backend_alloc_ctx_tensors_from_buft`` lays them out.  Which weights repack is
``ggml_repack_get_optimal_repack_type`` (ggml/src/ggml-cpu/repack.cpp): a matrix used by
MUL_MAT (2-D) or MUL_MAT_ID (3-D experts) whose type has a kernel for the CPU's features
and whose row count ``ne[1]`` divides the interleave.  The CPU is an input (``features``):
the local CPU by default, another machine's by name.  Offloaded layers (``--ngl N``: the
last N blocks, the output layer when N exceeds the block count, llama-model.cpp's
``dev_layer`` / ``dev_output``) go to a device buffer of their padded sizes.

Contract: ``model_buffers(tensors, n_layer, features, ngl) -> list[(name, bytes)]`` in
llama.cpp's print order (CPU_Mapped first).  ``tensors`` is ``(name, type, shape, file
index, offset, nbytes)``; offsets are absolute (only differences matter).  Reads headers
only.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["REPACK", "FEATURES", "local_features", "model_buffers", "repacks", "pad"]

ALIGN = 32                          # TENSOR_ALIGNMENT, ggml/src/ggml-impl.h

# ggml type -> ((required feature, ne[1] multiple), ...) in repack.cpp's order of preference;
# "avx2" is ggml_cpu_has_avx2, "avx512" ggml_cpu_has_avx512, "i8mm"/"dotprod" NEON with them.
REPACK: dict[str, tuple[tuple[str, int], ...]] = {
    "Q4_0": (("avx2", 8), ("i8mm", 4), ("dotprod", 4)),
    "Q4_K": (("avx2", 8), ("i8mm", 8), ("dotprod", 8)),
    "Q2_K": (("avx512", 8),),
    "Q5_K": (("i8mm", 8), ("dotprod", 8)),
    "Q6_K": (("i8mm", 8), ("dotprod", 8)),
    "IQ4_NL": (("avx2", 8), ("dotprod", 4)),
    "MXFP4": (("avx2", 8), ("dotprod", 4)),
    "Q8_0": (("i8mm", 4), ("dotprod", 4)),
    "Q1_0": (("i8mm", 4), ("dotprod", 4)),
}
FEATURES = ("avx2", "avx512", "i8mm", "dotprod")
# weights that are not the src0 of a matrix multiplication (GET_ROWS, SSM_CONV, SSM_SCAN, ...)
_NOT_MATMUL = re.compile(r"(^|\.)(token_embd|pos_embd|token_types|per_layer_token_embd|ssm_a|ssm_conv1d|ssm_d)\.")


def local_features() -> frozenset[str]:
    """The repack-relevant features of this machine's CPU (Linux /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return frozenset()
    flags = set(text.split())
    out = set()
    if "avx2" in flags:
        out.add("avx2")
    if "avx512f" in flags:
        out.add("avx512")
    if "asimddp" in flags:
        out.add("dotprod")
    if "i8mm" in flags:
        out.add("i8mm")
    return frozenset(out)


def pad(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


def repacks(name: str, type_: str, shape: tuple[int, ...], features: frozenset[str]) -> bool:
    """True when ggml-cpu keeps a repacked copy of this weight."""
    if _NOT_MATMUL.search(name) or not name.endswith(".weight"):
        return False
    dims = len(shape)
    while dims > 1 and shape[dims - 1] == 1:
        dims -= 1
    if dims not in (2, 3) or (dims == 3) != ("_exps." in name or name.endswith("_exps.weight")):
        return False
    for feature, multiple in REPACK.get(type_, ()):
        if feature in features:
            return shape[1] % multiple == 0
    return False


_BLOCK = re.compile(r"^blk\.(\d+)\.")


def model_buffers(tensors, n_layer: int, features: frozenset[str], ngl: int = 0) -> list[tuple[str, int]]:
    """The model buffers llama.cpp prints (see the module docstring)."""
    ranges: dict[int, list[int]] = {}
    repack = device = 0
    first_gpu = n_layer - min(ngl, n_layer)
    for name, type_, shape, idx, offset, nbytes in tensors:
        m = _BLOCK.match(name)
        il = int(m.group(1)) if m else None
        on_gpu = ngl > 0 and ((il is not None and il >= first_gpu) or
                              (il is None and ngl > n_layer and not name.startswith(("token_embd.", "pos_embd."))))
        if on_gpu:
            device += pad(nbytes)
        elif repacks(name, type_, shape, features):
            repack += pad(nbytes)
        else:
            r = ranges.setdefault(idx, [offset, offset + nbytes])
            r[0], r[1] = min(r[0], offset), max(r[1], offset + nbytes)
    out = [("CPU_Mapped", sum(b - a for a, b in ranges.values()))]
    if repack:
        out.append(("CPU_REPACK", repack))
    if device:
        out.append(("GPU", device))
    return out
