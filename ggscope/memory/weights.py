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
the local CPU by default, another machine's by name.  Offloaded layers (``--ngl N``:
llama-model.cpp's ``dev_layer`` / ``dev_output`` - the output layer first, then the last
N - 1 blocks; the input embeddings stay on the CPU, and tied embeddings put a copy of
``token_embd`` beside the output layer) go to one device buffer of their sizes, each
padded to the device's alignment.  The device is modelled as llama.cpp's RPC backend
over a CPU (32-byte alignment, ``get_alloc_size`` = ``ggml_nbytes``), which is how the
offload was verified (tests/memory, fixtures/llama_memory/*-rpc.json); CUDA pads
quantized rows to 512 columns and aligns to 128, so its buffer is a little larger.

Contract: ``model_buffers(tensors, n_layer, features, ngl) -> list[(name, bytes)]`` in
llama.cpp's print order (CPU_Mapped first).  ``tensors`` is ``(name, type, shape, file
index, offset, nbytes)``; offsets are absolute (only differences matter).  Reads headers
only.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["REPACK", "FEATURES", "local_features", "model_buffers", "device_layers", "repacks", "pad"]

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
# LLM_TENSOR_LAYER_INPUT (src/llama-arch.cpp LLM_TENSOR_INFOS): always on the CPU
_INPUT = ("token_embd.", "pos_embd.", "token_types.", "per_layer_token_embd.")
# non-block tensors of LLM_TENSOR_LAYER_REPEATING, created for layer 0 and duplicated into
# each other buffer type that holds a layer (rope_freqs: TENSOR_DUPLICATED for il != 0)
_REPEATING = ("token_embd_norm.", "rope_freqs.", "rope_factors_long.", "rope_factors_short.")


def device_layers(n_layer: int, ngl: int) -> tuple[int, bool]:
    """(first offloaded block, output layer offloaded): llama-model.cpp load_tensors'
    ``i_gpu_start = max(n_layer + 1 - ngl, 0)`` over blocks 0..n_layer, where index
    n_layer is the output layer - so ``--ngl 1`` offloads the output layer alone and
    ``--ngl n_layer + 1`` everything but the input embeddings."""
    first = max(n_layer + 1 - ngl, 0) if ngl > 0 else n_layer + 1
    return first, ngl > 0


def model_buffers(tensors, n_layer: int, features: frozenset[str], ngl: int = 0, arch: str = "",
                  device: str = "GPU", align: int = ALIGN) -> list[tuple[str, int]]:
    """The model buffers llama.cpp prints (see the module docstring); offloaded weights go
    to ``device``, each padded to its ``align``."""
    ranges: dict[int, list[int]] = {}
    repack = dev = 0
    first, out_dev = device_layers(n_layer, ngl)
    names = {t[0] for t in tensors}
    # token_embd_norm is lfm2's output norm (LLM_TENSOR_OUTPUT_NORM_LFM2)
    repeating = tuple(r for r in _REPEATING if not (arch == "lfm2" and r == "token_embd_norm."))
    for name, type_, shape, idx, offset, nbytes in tensors:
        m = _BLOCK.match(name)
        if m:
            on_dev, on_cpu = int(m.group(1)) >= first, int(m.group(1)) < first
        elif name.startswith(_INPUT):
            on_dev, on_cpu = False, True
            # tied embeddings: the output layer reads a duplicate of token_embd
            # (create_tensor(TOKEN_EMBD, TENSOR_DUPLICATED) as LLM_TENSOR_OUTPUT)
            if out_dev and name == "token_embd.weight" and "output.weight" not in names:
                dev += pad(nbytes, align)
        elif name.startswith(repeating):
            on_dev, on_cpu = first < n_layer, first > 0
        else:
            on_dev, on_cpu = out_dev, not out_dev
        if on_dev:
            dev += pad(nbytes, align)
        if not on_cpu:
            continue
        if repacks(name, type_, shape, features):
            repack += pad(nbytes)
        else:
            r = ranges.setdefault(idx, [offset, offset + nbytes])
            r[0], r[1] = min(r[0], offset), max(r[1], offset + nbytes)
    out = [("CPU_Mapped", sum(b - a for a, b in ranges.values()))]
    if repack:
        out.append(("CPU_REPACK", repack))
    if dev:
        out.append((device, dev))
    return out
