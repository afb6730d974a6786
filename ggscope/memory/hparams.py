"""The hyperparameters llama.cpp sizes its memory from, read from a GGUF header.

Why: every buffer llama.cpp allocates beside the weights (KV cache, recurrent state,
output, compute) is a function of a few hyperparameters that ``llama_model::load_hparams``
derives from the file - some with per-architecture defaults that live in code, not in
the file (Gemma 2's 4096-token window, Gemma 3's every-sixth-layer-global pattern).
This module is that derivation, once, as data plus one reader.  Sources: llama.cpp as
vendored in llama-cpp-python 0.3.36, ``src/llama-model.cpp`` (``load_hparams``: head
counts as scalar or per-layer array, ``key_length``/``value_length`` defaulting to
``n_embd / n_head``, the ``_swa`` variants, ``load_swa_pattern``), ``src/models/*.cpp``
(each architecture's ``load_arch_hparams``: SWA defaults and patterns below),
``src/llama-hparams.cpp`` (``set_swa_pattern``, ``n_embd_r``/``n_embd_s``, ``is_mla``).

Contract: ``read(metadata, tensors) -> HParams`` (frozen), or raises ``ValueError`` with
one sentence when the header lacks what llama.cpp requires (architecture, block count,
embedding length) or claims a layer count beyond ``LLAMA_MAX_LAYERS``.  Nothing here
reads tensor data; per-layer arrays are bounded by the layer count.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HParams", "read", "SWA", "RECURRENT", "NO_MEMORY", "HYBRID", "KV_FROM_START", "LLAMA_MAX_LAYERS"]

LLAMA_MAX_LAYERS = 512            # src/llama-hparams.h

# arch -> (default pattern, dense_first, default n_swa or None when the key is required
# or the architecture only uses SWA when the key is present).  src/models/<arch>.cpp:
# load_swa_pattern(ml, n_pattern, dense_first); a sliding_window_pattern key (number or
# per-layer bool array) in the file wins, as in llama_model_base::load_swa_pattern.
SWA: dict[str, tuple[int, bool, int | None]] = {
    "gemma2": (2, False, 4096),
    "gemma3": (6, False, None),          # only when sliding_window > 0
    "gemma3n": (5, False, None),
    "gemma-embedding": (6, False, None),
    "cohere2": (4, False, None),
    "gpt-oss": (2, False, None),
    "exaone4": (4, False, 4096),         # only when sliding_window is present
    "exaone-moe": (4, False, 128),
    "olmo2": (4, False, None),           # only when sliding_window is present
    "afmoe": (4, False, None),
    "smallthinker": (4, True, 4096),     # only when sliding_window is present
    "plamo3": (8, False, None),
    "llama4": (4, False, 8192),          # chunked attention when no_rope_layer_step is set
    "gemma4": (-1, False, None),         # the per-layer pattern array is required
}
# llama_hparams::has_kv: layers from n_layer_kv_from_start on reuse earlier layers' KV
# (src/models/gemma3n.cpp: 20; src/models/gemma4.cpp: n_layer - shared_kv_layers).
KV_FROM_START = {"gemma3n": lambda meta, n_layer, k: 20,
                 "gemma4": lambda meta, n_layer, k: n_layer - int(meta.get(k("attention.shared_kv_layers"), 0))}
# llm_arch_is_hybrid (src/llama-arch.cpp): attention and recurrent layers in one model,
# llama_memory_hybrid - not modelled here; plan() says so rather than guess.
HYBRID = frozenset({"jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
                    "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "glm5-next", "qwen35",
                    "qwen35moe", "qwen4exp", "deepseek4", "minimax-01"})
# Architectures whose memory is llama_memory_recurrent alone (llm_arch_is_recurrent).
RECURRENT = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})
# llama_model::create_memory returns nullptr: encoders and diffusion models keep no cache.
NO_MEMORY = frozenset({"bert", "jina-bert-v2", "jina-bert-v3", "nomic-bert", "nomic-bert-moe", "neo-bert", "eurobert",
                       "wavtokenizer-dec", "modern-bert", "gemma-embedding", "dream", "llada", "llada-moe", "rnd1"})


@dataclass(frozen=True)
class HParams:
    arch: str
    n_layer: int                      # n_layer_all: block_count
    n_embd: int
    n_vocab: int
    n_ctx_train: int
    n_head: tuple[int, ...]           # per layer
    n_head_kv: tuple[int, ...]
    head_k: int                       # n_embd_head_k_full
    head_v: int
    head_k_swa: int
    head_v_swa: int
    is_swa: tuple[bool, ...]          # per layer
    kv_layers: int                    # has_kv(il) for il < kv_layers (n_layer_kv_from_start)
    n_swa: int
    mla: bool                         # is_mla(): V is not cached
    n_embd_r: int                     # recurrent state rows (0: none)
    n_embd_s: int
    d_inner: int                      # mamba's ssm.inner_size (0 otherwise)
    n_ff: int
    n_ff_exp: int                     # expert_feed_forward_length (MoE), 0 without
    ffn_gated: bool                   # a gate projection (SwiGLU/GeGLU) beside the up one
    n_expert_used: int

    def n_embd_k_gqa(self, il: int) -> int:
        return (self.head_k_swa if self.is_swa[il] else self.head_k) * self.n_head_kv[il]

    def n_embd_v_gqa(self, il: int) -> int:
        return (self.head_v_swa if self.is_swa[il] else self.head_v) * self.n_head_kv[il]

    @property
    def swa_any(self) -> bool:
        return any(self.is_swa)

    @property
    def recurrent(self) -> bool:
        return self.arch in RECURRENT


def _int(v, what: str) -> int:
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} is not a number") from None
    if n < 0 or n > 1 << 40:
        raise ValueError(f"{what} = {n} is out of range")
    return n


def _per_layer(meta: dict, key: str, n_layer: int, default: tuple[int, ...]) -> tuple[int, ...]:
    """get_key_or_arr: a scalar repeated over the layers, or an array of exactly n_layer."""
    if key not in meta:
        return default
    v = meta[key]
    if isinstance(v, (list, tuple)) or hasattr(v, "shape"):
        if len(v) != n_layer:
            raise ValueError(f"{key} has {len(v)} entries for {n_layer} layers")
        return tuple(_int(x, key) for x in v)
    return (_int(v, key),) * n_layer


def _fused_up(tensors, n_ff_arr) -> bool:
    """Phi-3's gate and up projections fused in one ffn_up of 2 x n_ff rows."""
    shape = (tensors or {}).get("blk.0.ffn_up.weight")
    return bool(shape and len(shape) >= 2 and n_ff_arr and n_ff_arr[0] and shape[1] == 2 * n_ff_arr[0])


def read(meta: dict, tensors: dict[str, tuple[int, ...]] | None = None) -> HParams:
    """The hyperparameters (see the module docstring); ``tensors`` maps name -> shape."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ValueError("the file names no general.architecture")

    def k(name: str) -> str:
        return f"{arch}.{name}"

    if k("block_count") not in meta or k("embedding_length") not in meta:
        raise ValueError(f"the file lacks {k('block_count')} or {k('embedding_length')}, which llama.cpp requires")
    n_layer = _int(meta[k("block_count")], k("block_count"))
    if n_layer > LLAMA_MAX_LAYERS:
        raise ValueError(f"{k('block_count')} = {n_layer} exceeds llama.cpp's {LLAMA_MAX_LAYERS} layers")
    n_embd = _int(meta[k("embedding_length")], k("embedding_length"))
    tokens = meta.get("tokenizer.ggml.tokens")
    n_vocab = len(tokens) if tokens is not None else _int(meta.get(k("vocab_size"), 0), k("vocab_size"))
    if not n_vocab and tensors and "token_embd.weight" in tensors and len(tensors["token_embd.weight"]) >= 2:
        n_vocab = int(tensors["token_embd.weight"][1])
    n_head = _per_layer(meta, k("attention.head_count"), n_layer, (0,) * n_layer)
    n_head_kv = _per_layer(meta, k("attention.head_count_kv"), n_layer, n_head)
    h0 = n_head[0] if n_head else 0
    head_k = head_v = n_embd // h0 if h0 else 0
    if h0:
        head_k = _int(meta.get(k("attention.key_length"), head_k), "key_length")
        head_v = _int(meta.get(k("attention.value_length"), head_v), "value_length")
    head_k_swa = _int(meta.get(k("attention.key_length_swa"), head_k), "key_length_swa")
    head_v_swa = _int(meta.get(k("attention.value_length_swa"), head_v), "value_length_swa")

    is_swa, n_swa = (False,) * n_layer, 0
    if arch in SWA:
        pattern, dense_first, default = SWA[arch]
        window = meta.get(k("attention.sliding_window"))
        n_swa = _int(window, "sliding_window") if window is not None else (default or 0)
        if n_swa > 0:
            pat = meta.get(k("attention.sliding_window_pattern"))
            if pat is not None and (isinstance(pat, (list, tuple)) or hasattr(pat, "shape")):
                if len(pat) != n_layer:
                    raise ValueError(f"sliding_window_pattern has {len(pat)} entries for {n_layer} layers")
                is_swa = tuple(bool(x) for x in pat)
            else:
                if pat is not None:
                    pattern = _int(pat, "sliding_window_pattern")
                if pattern < 0:
                    raise ValueError(f"{arch} needs {k('attention.sliding_window_pattern')} as a per-layer array")
                is_swa = tuple(pattern == 0 or (i % pattern != 0 if dense_first else i % pattern < pattern - 1)
                               for i in range(n_layer))
    if arch in HYBRID:
        raise ValueError(f"the memory of {arch} (attention and recurrent layers, llama_memory_hybrid) is not "
                         "modelled yet")
    kv_layers = n_layer
    if arch in KV_FROM_START:
        try:
            kv_layers = _int(KV_FROM_START[arch](meta, n_layer, k), "shared_kv_layers")
        except (TypeError, OverflowError):
            raise ValueError(f"{k('attention.shared_kv_layers')} is not a number") from None
    mla = k("attention.key_length_mla") in meta and k("attention.value_length_mla") in meta

    n_embd_r = n_embd_s = d_inner = 0
    if arch in RECURRENT:
        wkv = _int(meta.get(k("wkv.head_size"), 0), "wkv.head_size")
        if wkv:
            n_embd_r = _int(meta.get(k("token_shift_count"), 2), "token_shift_count") * n_embd
            n_embd_s = n_embd * wkv
        else:
            d_conv = _int(meta.get(k("ssm.conv_kernel"), 0), "ssm.conv_kernel")
            d_inner = _int(meta.get(k("ssm.inner_size"), 0), "ssm.inner_size")
            d_state = _int(meta.get(k("ssm.state_size"), 0), "ssm.state_size")
            n_group = _int(meta.get(k("ssm.group_count"), 0), "ssm.group_count")
            n_embd_r = (d_conv - 1 if d_conv > 0 else 0) * (d_inner + 2 * n_group * d_state)
            n_embd_s = d_state * d_inner
    n_ff_arr = _per_layer(meta, k("feed_forward_length"), n_layer, (0,) * n_layer)
    return HParams(arch=arch, n_layer=n_layer, n_embd=n_embd, n_vocab=n_vocab,
                   n_ctx_train=_int(meta.get(k("context_length"), 0), "context_length"),
                   n_head=n_head, n_head_kv=n_head_kv, head_k=head_k, head_v=head_v, head_k_swa=head_k_swa,
                   head_v_swa=head_v_swa, is_swa=is_swa, kv_layers=min(kv_layers, n_layer), n_swa=n_swa, mla=mla,
                   n_embd_r=n_embd_r, n_embd_s=n_embd_s,
                   d_inner=d_inner,
                   n_ff=max(n_ff_arr) if n_ff_arr else 0,
                   ffn_gated=any(n.endswith(("ffn_gate.weight", "ffn_gate_exps.weight")) for n in tensors or ()) or
                   _fused_up(tensors, n_ff_arr),
                   n_ff_exp=max(_per_layer(meta, k("expert_feed_forward_length"), n_layer, (0,) * n_layer), default=0),
                   n_expert_used=_int(meta.get(k("expert_used_count"), 0), "expert_used_count"))
