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

__all__ = ["HParams", "read", "SWA", "RECURRENT", "NO_MEMORY", "HYBRID", "HYBRID_UNMODELLED", "RECR_RULE",
           "KV_FROM_START", "LLAMA_MAX_LAYERS"]

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
# llama_memory_hybrid (src/llama-memory-hybrid.cpp) = a KV cache over the attention layers
# plus a recurrent state over the recurrent ones, each with its own layer filter.
HYBRID = frozenset({"jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
                    "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "glm5-next", "qwen35",
                    "qwen35moe", "qwen4exp", "deepseek4", "minimax-01"})
# Hybrids whose memory is another class (create_memory: glm5-next's and qwen4exp's indexer
# cache, llama_memory_hybrid_idx; deepseek4's llama_kv_cache_dsv4) or whose cache widths
# are overridden in code (kimi-k3): plan() says so rather than guess.
HYBRID_UNMODELLED = frozenset({"glm5-next", "qwen4exp", "deepseek4", "kimi-k3"})
# Which layers are recurrent (is_recr), per src/models/<arch>.cpp load_arch_hparams:
# "kv0": head_count_kv(il) == 0; "kv0ff0": and feed_forward_length(il) == 0 (nemotron_h);
# "all": every layer (falcon-h1: attention and SSM side by side in each block); a number:
# the full_attention_interval default (every n-th layer attends), unless the file gives
# attention.recurrent_layers as a per-layer array.
RECR_RULE: dict[str, str | int] = {
    "jamba": "kv0", "plamo2": "kv0", "granitehybrid": "kv0", "lfm2": "kv0", "lfm2moe": "kv0", "kimi-linear": "kv0",
    "bailingmoe3": "kv0", "nemotron_h": "kv0ff0", "nemotron_h_moe": "kv0ff0", "falcon-h1": "all",
    "qwen3next": 4, "qwen35": 4, "qwen35moe": 4, "minimax-01": 8}
# load_arch_hparams re-reads attention.key_length/value_length (src/models/plamo2.cpp)
KEY_LENGTH_ALWAYS = frozenset({"plamo2"})
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
    recr: tuple[bool, ...]            # per layer: the recurrent state's layer filter (all, for mamba/rwkv)
    attn: tuple[bool, ...]            # per layer: the KV cache's layer filter (besides kv_layers)
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

    @property
    def hybrid(self) -> bool:
        return self.arch in HYBRID


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
    # load_hparams reads the head sizes only when layer 0 has heads; plamo2's
    # load_arch_hparams reads them again whatever layer 0 is (its layer 0 is a Mamba layer)
    if h0 or arch in KEY_LENGTH_ALWAYS:
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
    n_nextn = _int(meta.get(k("nextn_predict_layers"), 0), "nextn_predict_layers")
    if n_nextn > n_layer:
        raise ValueError(f"{k('nextn_predict_layers')} = {n_nextn} exceeds the {n_layer} blocks")
    recr, attn = (arch in RECURRENT,) * n_layer, (arch not in RECURRENT,) * n_layer
    if arch in HYBRID:
        if arch in HYBRID_UNMODELLED:
            raise ValueError(f"the memory of {arch} (an indexer or compressed cache beside the recurrent state) is "
                             "not modelled yet")
        recr, attn, is_swa, n_swa = _hybrid_layers(meta, k, arch, n_layer, n_layer - n_nextn, n_head_kv,
                                                   _per_layer(meta, k("feed_forward_length"), n_layer, (0,) * n_layer))
    kv_layers = n_layer
    if arch in KV_FROM_START:
        try:
            kv_layers = _int(KV_FROM_START[arch](meta, n_layer, k), "shared_kv_layers")
        except (TypeError, OverflowError):
            raise ValueError(f"{k('attention.shared_kv_layers')} is not a number") from None
    mla = k("attention.key_length_mla") in meta and k("attention.value_length_mla") in meta

    n_embd_r = n_embd_s = d_inner = 0
    if arch in RECURRENT or arch in HYBRID:
        n_embd_r, n_embd_s, d_inner = _state_rows(meta, k, arch, n_embd, h0, head_k)
    n_ff_arr = _per_layer(meta, k("feed_forward_length"), n_layer, (0,) * n_layer)
    return HParams(arch=arch, n_layer=n_layer, n_embd=n_embd, n_vocab=n_vocab,
                   n_ctx_train=_int(meta.get(k("context_length"), 0), "context_length"),
                   n_head=n_head, n_head_kv=n_head_kv, head_k=head_k, head_v=head_v, head_k_swa=head_k_swa,
                   head_v_swa=head_v_swa, is_swa=is_swa, kv_layers=min(kv_layers, n_layer), n_swa=n_swa, mla=mla,
                   n_embd_r=n_embd_r, n_embd_s=n_embd_s, recr=recr, attn=attn,
                   d_inner=d_inner,
                   n_ff=max(n_ff_arr) if n_ff_arr else 0,
                   ffn_gated=any(n.endswith(("ffn_gate.weight", "ffn_gate_exps.weight")) for n in tensors or ()) or
                   _fused_up(tensors, n_ff_arr),
                   n_ff_exp=max(_per_layer(meta, k("expert_feed_forward_length"), n_layer, (0,) * n_layer), default=0),
                   n_expert_used=_int(meta.get(k("expert_used_count"), 0), "expert_used_count"))


def _hybrid_layers(meta, k, arch, n_layer, n_trunk, n_head_kv, n_ff):
    """(recr, attn, is_swa, n_swa) per layer for a hybrid: the is_recr pattern of the
    architecture's load_arch_hparams and the two layer filters of create_memory
    (src/llama-model.cpp): falcon-h1 gives every layer both; nemotron_h's attention layers
    are those neither recurrent nor MLP (n_ff == 0); qwen3next/qwen35/minimax-01 keep the
    MTP (nextn) layers out of both; the rest cache KV in every non-recurrent layer."""
    rule = RECR_RULE[arch]
    if rule == "all":
        recr = (True,) * n_layer
    elif rule == "kv0":
        recr = tuple(il < n_trunk and n_head_kv[il] == 0 for il in range(n_layer))
    elif rule == "kv0ff0":
        recr = tuple(il < n_trunk and n_head_kv[il] == 0 and n_ff[il] == 0 for il in range(n_layer))
    else:
        arr = meta.get(k("attention.recurrent_layers"))
        if arr is not None and (isinstance(arr, (list, tuple)) or hasattr(arr, "shape")):
            if len(arr) != n_layer:
                raise ValueError(f"attention.recurrent_layers has {len(arr)} entries for {n_layer} layers")
            recr = tuple(bool(x) for x in arr)
        elif arr is not None:                # get_key_or_arr: a scalar fills every layer
            recr = (bool(_int(arr, "attention.recurrent_layers")),) * n_layer
        else:
            interval = _int(meta.get(k("full_attention_interval"), rule), "full_attention_interval")
            if interval == 0:
                raise ValueError(f"{k('full_attention_interval')} is 0")
            recr = tuple(il < n_trunk and (il + 1) % interval != 0 for il in range(n_layer))
    if rule == "all":
        attn = (True,) * n_layer
    elif rule == "kv0ff0":
        attn = tuple(not recr[il] and n_ff[il] == 0 for il in range(n_layer))
    elif isinstance(rule, int):
        recr = tuple(r and il < n_trunk for il, r in enumerate(recr))
        attn = tuple(il < n_trunk and not recr[il] for il in range(n_layer))
    else:
        attn = tuple(not r for r in recr)
    is_swa, n_swa = (False,) * n_layer, 0
    if arch == "lfm2":                       # src/models/lfm2.cpp: a window on every attention layer
        window = meta.get(k("attention.sliding_window"))
        n_swa = _int(window, "sliding_window") if window is not None else 0
        if n_swa > 0:
            is_swa = tuple(not r for r in recr[:n_trunk]) + (False,) * (n_layer - n_trunk)
    return recr, attn, is_swa, n_swa


def _state_rows(meta, k, arch, n_embd, n_head0, head_k):
    """(n_embd_r, n_embd_s, d_inner): llama_hparams::n_embd_r / n_embd_s
    (src/llama-hparams.cpp), in its order of cases - rwkv's token shift and wkv state,
    lfm2's short-convolution cache, Kimi's KDA conv and delta state, MiniMax's
    lightning-attention state (head size from key_length), else Mamba's conv and scan."""
    wkv = _int(meta.get(k("wkv.head_size"), 0), "wkv.head_size")
    d_conv = _int(meta.get(k("ssm.conv_kernel"), 0), "ssm.conv_kernel")
    d_inner = _int(meta.get(k("ssm.inner_size"), 0), "ssm.inner_size")
    d_state = _int(meta.get(k("ssm.state_size"), 0), "ssm.state_size")
    n_group = _int(meta.get(k("ssm.group_count"), 0), "ssm.group_count")
    l_cache = _int(meta.get(k("shortconv.l_cache"), 0), "shortconv.l_cache")
    kda = _int(meta.get(k("kda.head_dim"), 0), "kda.head_dim")
    la = head_k if arch == "minimax-01" else 0
    if wkv:
        n_embd_r = _int(meta.get(k("token_shift_count"), 2), "token_shift_count") * n_embd
    elif l_cache:
        n_embd_r = n_embd * (l_cache - 1)
    elif kda:
        n_embd_r = 3 * (d_conv - 1 if d_conv > 0 else 3) * n_head0 * kda
    else:
        n_embd_r = (d_conv - 1 if d_conv > 0 else 0) * (d_inner + 2 * n_group * d_state)
    if wkv:
        n_embd_s = n_embd * wkv
    elif kda:
        n_embd_s = kda * kda * n_head0
    elif la:
        n_embd_s = la * la * n_head0
    else:
        n_embd_s = d_state * d_inner
    return n_embd_r, n_embd_s, d_inner
