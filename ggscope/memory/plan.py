"""What llama.cpp allocates for a model and a context: one engine over the header.

Why: "will it fit" is answered by llama.cpp only after loading the model on the real
devices.  Every buffer it allocates is arithmetic over the header, so ggscope predicts
them before anything is loaded, line by line under the names llama.cpp prints (llama.cpp
as vendored in llama-cpp-python 0.3.36):

* model buffers - ``ggscope.memory.weights`` (``load_tensors: ... model buffer size``).
* output buffer - ``llama_context::output_reserve`` (src/llama-context.cpp): logits of
  ``n_vocab`` floats for ``max(1, n_seq_max)`` outputs at creation.
* KV cache - ``llama_kv_cache``'s constructor (src/llama-kv-cache.cpp): per layer a K
  tensor ``[n_embd_k_gqa(il), kv_size, n_stream]`` of the K cache type and a V tensor
  ``[n_embd_v_gqa, ...]`` (without flash attention V is transposed and every layer uses
  ``n_embd_v_gqa_max``; MLA caches no V), ``ggml_row_size`` bytes per row, each tensor
  padded to 32 in the buffer.  ``kv_size`` is the context padded to 256
  (``llama_context``: ``GGML_PAD(n_ctx, 256)``, per sequence when not unified).  Models
  with sliding-window layers get two caches (src/llama-kv-cache-iswa.cpp): the full layers
  at ``kv_size``, the windowed layers at ``GGML_PAD(min(kv_size, n_swa + n_ubatch), 256)``
  or ``kv_size`` with ``swa_full`` (llama.cpp's default: true).  Layers past
  ``n_layer_kv_from_start`` (Gemma 3n, Gemma 4) share earlier layers' KV and add none.
* recurrent state - ``llama_memory_recurrent`` (src/llama-memory-recurrent.cpp): per layer
  ``n_embd_r`` and ``n_embd_s`` f32 rows for ``max(1, n_seq_max)`` cells (``RS buffer``).
  Hybrid models (``llama_memory_hybrid``, src/llama-memory-hybrid.cpp; ``_iswa`` with a
  window) get both: a KV cache over the layers its attention filter keeps (at
  ``n_ctx_seq`` cells) and the recurrent state over the recurrent layers; which layers
  are which is ``ggscope.memory.hparams`` (``recr``/``attn``).
* compute buffer - ``ggscope.memory.compute``: on the CPU ggml-alloc replayed over the
  reserve graph where ``ggscope.memory.graph`` describes it, else the plan of peaks.

Contract: ``plan(mf, Options) -> Plan`` (frozen): ``buffers`` (``Buffer(kind, name,
nbytes, cache, how)``; ``how`` says whether a compute buffer is replayed or planned),
``kv`` (per cache: cells, layers, K and V bytes), the byte totals
``model_bytes``, ``kv_bytes``/``k_bytes``/``v_bytes``, ``recurrent_bytes``,
``output_bytes``, ``compute_bytes``, ``total_bytes``.  ``max_context(mf, Options, budget)``
and ``max_layers(...)`` answer the converse.  Raises ``ValueError`` (one sentence) for a
header llama.cpp could not size, and for a cache configuration ``llama_init_from_model``
refuses (src/llama-context.cpp: K and V types differing on an MLA model, a quantized V
cache without flash attention, a quantized cache whose blocks do not divide a head size;
more than LLAMA_MAX_SEQ sequences, or more sequences than the batch holds - an abort there).
Never reads tensor data.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ggscope.facts.ggml_types import tensor_nbytes
from ggscope.memory import compute as _compute
from ggscope.memory import hparams as _hp
from ggscope.memory.weights import device_layers, local_features, model_buffers, pad

__all__ = ["Options", "Buffer", "Cache", "Plan", "plan", "default_plan", "max_context", "max_layers", "CACHE_TYPES"]

# the cache types llama.cpp's --cache-type-k/-v accept (common/arg.cpp kv_cache_types)
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
DEFAULT_CTX = 4096


@dataclass(frozen=True)
class Options:
    ctx: int = DEFAULT_CTX        # 0: the model's training context (llama.cpp's n_ctx = 0)
    batch: int = 2048             # llama.cpp's defaults (common/common.h)
    ubatch: int = 512
    parallel: int = 1             # n_seq_max
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    flash_attn: bool = False
    swa_full: bool = True         # llama_context_default_params: swa_full = true
    ngl: int = 0                  # layers offloaded (llama.cpp's -ngl: the output layer counts as one)
    device: str = "GPU"           # the offload device's buffer name in the plan
    kv_unified: bool = False
    features: frozenset[str] | None = None   # CPU features for repacking; None: this machine's


@dataclass(frozen=True)
class Buffer:
    kind: str                     # "model", "output", "kv", "rs", "compute"
    name: str                     # buffer type as llama.cpp prints it ("CPU_Mapped", "CPU")
    nbytes: int
    cache: str = ""               # for kind "kv": the Cache it belongs to
    how: str = ""                 # for kind "compute": "replay" (ggml-alloc replayed) or "peaks"


@dataclass(frozen=True)
class Cache:
    name: str                     # "kv", "kv (swa)"
    cells: int
    layers: int
    k_bytes: int
    v_bytes: int
    buffer_bytes: int


@dataclass(frozen=True)
class Plan:
    arch: str
    n_ctx: int
    n_batch: int
    n_ubatch: int
    buffers: tuple[Buffer, ...]
    caches: tuple[Cache, ...] = field(default=())

    def _sum(self, kind: str) -> int:
        return sum(b.nbytes for b in self.buffers if b.kind == kind)

    @property
    def model_bytes(self) -> int:
        return self._sum("model")

    @property
    def kv_bytes(self) -> int:
        return self._sum("kv")

    @property
    def k_bytes(self) -> int:
        return sum(c.k_bytes for c in self.caches)

    @property
    def v_bytes(self) -> int:
        return sum(c.v_bytes for c in self.caches)

    @property
    def recurrent_bytes(self) -> int:
        return self._sum("rs")

    @property
    def output_bytes(self) -> int:
        return self._sum("output")

    @property
    def compute_bytes(self) -> int:
        return self._sum("compute")

    @property
    def total_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    def device_bytes(self, device: str) -> int:
        """The bytes of the buffers on ``device`` (an offload device's share of the total)."""
        return sum(b.nbytes for b in self.buffers if b.name == device)

    def as_dict(self) -> dict:
        return {"arch": self.arch, "n_ctx": self.n_ctx, "n_batch": self.n_batch, "n_ubatch": self.n_ubatch,
                "model_bytes": self.model_bytes, "kv_bytes": self.kv_bytes, "k_bytes": self.k_bytes,
                "v_bytes": self.v_bytes, "recurrent_bytes": self.recurrent_bytes, "output_bytes": self.output_bytes,
                "compute_bytes": self.compute_bytes, "total_bytes": self.total_bytes,
                "buffers": [{"kind": b.kind, "name": b.name, "bytes": b.nbytes,
                             **({"cache": b.cache} if b.cache else {}), **({"derived_by": b.how} if b.how else {})}
                            for b in self.buffers],
                "kv_caches": [{"name": c.name, "cells": c.cells, "layers": c.layers, "k_bytes": c.k_bytes,
                               "v_bytes": c.v_bytes, "buffer_bytes": c.buffer_bytes} for c in self.caches]}


LLAMA_MAX_SEQ = 256              # src/llama-cparams.h


def _pad256(n: int) -> int:
    return (n + 255) // 256 * 256


def _row(type_: str, n: int) -> int:
    return tensor_nbytes(type_.upper(), [n])


def _cache(hp: _hp.HParams, layers: list[int], cells: int, streams: int, o: Options, name: str) -> Cache:
    v_trans = not o.flash_attn
    v_max = max((hp.n_embd_v_gqa(il) for il in range(hp.n_layer)), default=0)
    kb = vb = buf = 0
    for il in layers:
        k = _row(o.cache_type_k, hp.n_embd_k_gqa(il)) * cells * streams
        kb += k
        buf += pad(k)
        if not hp.mla:
            v = _row(o.cache_type_v, v_max if v_trans else hp.n_embd_v_gqa(il)) * cells * streams
            vb += v
            buf += pad(v)
    return Cache(name, cells, len(layers), kb, vb, buf)


# the cache types ggml_is_quantized, all with 32-value blocks (ggml_blck_size)
_QUANTIZED = {"q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}


def _refusals(hp: _hp.HParams, o: Options) -> None:
    """The cache configurations llama_init_from_model refuses (src/llama-context.cpp):
    different K and V types for an MLA model, a quantized V cache without flash attention,
    and with flash attention a quantized cache whose 32-value blocks do not divide a
    layer's head size."""
    if hp.mla and o.cache_type_k != o.cache_type_v:
        raise ValueError(f"llama.cpp refuses different K ({o.cache_type_k}) and V ({o.cache_type_v}) cache types "
                         "for this MLA model")
    if o.cache_type_v in _QUANTIZED and not o.flash_attn:
        raise ValueError(f"llama.cpp refuses a quantized V cache ({o.cache_type_v}) without flash attention")
    if o.flash_attn:
        for kind, type_, heads in (("K", o.cache_type_k, (hp.head_k, hp.head_k_swa)),
                                   ("V", o.cache_type_v, (hp.head_v, hp.head_v_swa))):
            used = {heads[1] if hp.is_swa[il] else heads[0] for il in range(hp.n_layer)}
            bad = sorted(h for h in used if h % 32)
            if type_ in _QUANTIZED and bad:
                raise ValueError(f"llama.cpp refuses a {type_} {kind} cache: its 32-value blocks do not divide "
                                 f"the {kind} head size {bad[0]}")


def _header(mf):
    meta = mf.metadata
    shapes = {t.name: tuple(t.shape) for t in mf.tensors}
    return _hp.read(meta, shapes)


def plan(mf, o: Options = Options(), hp: _hp.HParams | None = None) -> Plan:
    """The buffers llama.cpp allocates for ``mf`` under ``o`` (see the module docstring)."""
    if o.cache_type_k not in CACHE_TYPES or o.cache_type_v not in CACHE_TYPES:
        raise ValueError(f"cache types are {', '.join(CACHE_TYPES)}")
    if min(o.batch, o.ubatch, o.parallel) < 1 or o.ctx < 0 or o.ngl < 0:
        raise ValueError("batch, ubatch and parallel must be positive, ctx and ngl not negative")
    hp = hp or _header(mf)
    _refusals(hp, o)
    n_seq = max(1, o.parallel)
    n_ctx = _pad256(o.ctx or hp.n_ctx_train or DEFAULT_CTX)
    if o.kv_unified:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = _pad256(n_ctx // n_seq)
        n_ctx = n_ctx_seq * n_seq
    # causal attention: the batch is limited by the context as given, before llama_context
    # pads it to 256 and to a multiple of the sequences (src/llama-context.cpp)
    n_batch = min(o.ctx or hp.n_ctx_train or DEFAULT_CTX, o.batch)
    n_ubatch = min(n_batch, o.ubatch)
    if n_seq > LLAMA_MAX_SEQ:
        raise ValueError(f"llama.cpp refuses more than {LLAMA_MAX_SEQ} sequences (n_seq_max {n_seq})")
    if n_seq > n_batch:
        # llama_context's constructor reserves one output per sequence, at most n_outputs_max
        # (= n_batch by default): output_reserve(n_seq_max) fails its GGML_ASSERT - an abort
        raise ValueError(f"llama.cpp aborts with more sequences ({n_seq}) than the batch holds ({n_batch}): "
                         "its output buffer is reserved for one output per sequence, at most n_batch")
    streams = 1 if o.kv_unified else n_seq
    features = local_features() if o.features is None else o.features

    files: dict[int, int] = {}
    rows = []
    for t in mf.tensors:
        idx = files.setdefault(id(t.file) if t.file is not None else 0, len(files))
        rows.append((t.name, t.type, tuple(t.shape), idx, t.offset, t.nbytes))
    bufs = [Buffer("model", n, b) for n, b in model_buffers(rows, hp.n_layer, features, o.ngl, hp.arch, o.device)]
    first_dev, _ = device_layers(hp.n_layer, o.ngl)
    bufs.append(Buffer("output", "CPU", pad(hp.n_vocab * 4 * n_seq)))

    cache_layers: list[tuple[Cache, list[int]]] = []
    rs_layers: list[int] = []
    if hp.arch not in _hp.NO_MEMORY:
        rs_layers = [il for il in range(hp.n_layer) if hp.recr[il]]
        kv_layers = [il for il in range(hp.kv_layers) if hp.attn[il]]
        if kv_layers and hp.swa_any:
            full = [il for il in kv_layers if not hp.is_swa[il]]
            swa = [il for il in kv_layers if hp.is_swa[il]]
            window = hp.n_swa * (n_seq if o.kv_unified else 1) + n_ubatch
            size_swa = n_ctx_seq if o.swa_full else _pad256(min(n_ctx_seq, window))
            cache_layers = [(_cache(hp, full, n_ctx_seq, streams, o, "kv"), full),
                            (_cache(hp, swa, size_swa, streams, o, "kv (swa)"), swa)]
        elif kv_layers:
            cache_layers = [(_cache(hp, kv_layers, n_ctx_seq, streams, o, "kv"), kv_layers)]
    caches = [c for c, _ in cache_layers]
    # one buffer per cache and buffer type, "CPU" before the device (ctx_map's name order);
    # with offload_kqv (the default) a layer's KV and state live where its weights do
    for c, layers in cache_layers:
        if c.layers:
            for name, part in (("CPU", [il for il in layers if il < first_dev]),
                               (o.device, [il for il in layers if il >= first_dev])):
                if part:
                    bufs.append(Buffer("kv", name, _cache(hp, part, c.cells, streams, o, c.name).buffer_bytes, c.name))
    for name, part in (("CPU", [il for il in rs_layers if il < first_dev]),
                       (o.device, [il for il in rs_layers if il >= first_dev])):
        if part:
            # llama_memory_recurrent: max(1, n_seq_max) cells (n_rs_seq = 0 rollback snapshots)
            bufs.append(Buffer("rs", name, sum(pad(4 * hp.n_embd_r * n_seq) + pad(4 * hp.n_embd_s * n_seq)
                                               for _ in part)))
    if o.ngl == 0:
        replay = _compute.replay_bytes(hp, mf.metadata, frozenset(t.name for t in mf.tensors), caches, n_ubatch,
                                       n_seq, o.flash_attn, o.cache_type_k, o.cache_type_v, o.kv_unified)
        bufs.append(Buffer("compute", "CPU", replay, how="replay") if replay is not None else
                    Buffer("compute", "CPU", max(_compute.peaks(hp, caches, n_ubatch, n_seq, o.flash_attn)),
                           how="peaks"))
    else:
        output_peak = _compute.peaks(hp, caches, n_ubatch, n_seq, o.flash_attn)[1]
        # one compute buffer per backend, the device's first (sched_reserve's order), each
        # the peak of the blocks it runs; the output (logits and one row of n_embd) runs on
        # the device
        cpu_layers, dev_layers = range(min(first_dev, hp.n_layer)), range(min(first_dev, hp.n_layer), hp.n_layer)
        cpu_peak = _compute.peaks(hp, caches, n_ubatch, n_seq, o.flash_attn, cpu_layers)[0]
        dev_peak = _compute.peaks(hp, caches, n_ubatch, n_seq, o.flash_attn, dev_layers)[0]
        bufs.append(Buffer("compute", o.device, max(output_peak - 4 * n_ubatch * hp.n_embd, dev_peak), how="peaks"))
        bufs.append(Buffer("compute", "CPU", cpu_peak if len(cpu_layers) else
                           _compute.inputs_bytes(hp, caches, n_ubatch, o.flash_attn), how="peaks"))
    # every cache llama.cpp creates, an empty one too (lfm2's base cache beside its windowed one)
    return Plan(hp.arch, n_ctx, n_batch, n_ubatch, tuple(bufs), tuple(caches))


def max_context(mf, o: Options, budget: int) -> int:
    """The largest context (a multiple of 256) whose total fits ``budget`` bytes, 0 if none."""
    hp = _header(mf)
    lo, hi = 0, max(1, hp.n_ctx_train or 1 << 20) // 256
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if plan(mf, replace(o, ctx=mid * 256), hp).total_bytes <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo * 256


def max_layers(mf, o: Options, budget: int) -> int:
    """The most layers (``--ngl``, the output layer counting as one) whose buffers on the
    device - offloaded weights, their layers' KV cache and recurrent state, the device's
    compute buffer - fit ``budget`` bytes; 0 if not even the output layer fits."""
    hp = _header(mf)
    best = 0
    for ngl in range(1, hp.n_layer + 2):
        if plan(mf, replace(o, ngl=ngl), hp).device_bytes(o.device) <= budget:
            best = ngl
        else:
            break
    return best


def default_plan(mf) -> Plan | None:
    """The plan at llama.cpp's defaults (context 4096) for ``info`` and the browser, or None
    for a file llama.cpp's loader does not size (not GGUF, no architecture, a bad header)."""
    if getattr(mf, "format", None) != "gguf" or getattr(mf, "damage", None) is not None:
        return None
    try:
        return plan(mf, Options(flash_attn=True, swa_full=False))
    except (ValueError, KeyError, TypeError, OverflowError):
        return None
