"""The hyperparameters a few architectures read beyond the common ones, as llama.cpp reads them.

Why a module of its own: ``traits.read_config`` reads what every decoder shares -- widths,
heads, norms' epsilon, rope base and scaling -- and turns each architecture's own keys
into ``Config`` fields through the functions here: which layers slide
(``load_swa_pattern``), which rotary pairs M-RoPE leaves still for text, Mistral 3's
attention temperature and YaRN log multiplier, Granite's multipliers, how experts are
routed and which layers have them, Llama 4's attention.  Each cites the
llama.cpp source it follows (as vendored in llama-cpp-python 0.3.36).

Contract: each takes the file (for its path in messages), ``meta`` -- ``traits._Meta``,
typed reads of ``<arch>.<key>`` with defaults -- and what it needs of the config read so
far; it returns values or fills ``extra`` (``Config`` fields by name), and raises
``WeightError`` (one line) where llama.cpp refuses the file.
"""
from __future__ import annotations

import numpy as np

from ggscope.forward import WeightError

__all__ = ["layers", "experts", "optional_tensor", "layer_shapes", "xielu", "llama4", "moe_lead", "mrope_unsupported", "reads", "reads_eps", "swa_layers", "mrope_still", "temperature", "scales"]


def reads(arch: str, kv: str) -> bool:
    """Whether llama.cpp's loader for ``arch`` reads the key ``kv`` (an LLM_KV_ name without
    the prefix) in its load_arch_hparams (``ggscope.facts.llama_arch``, generated from
    them).  An architecture the table does not know is taken to read it."""
    from ggscope.facts.llama_arch import ARCHS  # lazy: the generated table loads only for GGUF decoders
    spec = ARCHS.get(arch)
    return spec is None or any(h.kv == kv for h in spec.hparams)


def optional_tensor(arch: str, tensor: str) -> bool:
    """Whether llama.cpp's loader for ``arch`` creates ``tensor`` (an LLM_TENSOR_ name without
    the prefix) TENSOR_NOT_REQUIRED wherever it creates it (``ggscope.facts.llama_arch``):
    ernie4_5-moe's ffn_gate_exps, whose absence build_moe_ffn meets with silu(up)."""
    from ggscope.facts.llama_arch import ARCHS  # lazy, as in reads
    spec = ARCHS.get(arch)
    found = [t for t in spec.tensors if t.tensor == tensor] if spec is not None else []
    return bool(found) and not any(t.required for t in found)


def reads_eps(arch: str, norm: str) -> bool:
    """Whether llama.cpp reads the norms' epsilon of ``arch`` from the file.  One that
    does not runs with llama_hparams' zero-initialised 0.0 -- qwen2vl at the pinned
    version, whose loader lost the fall-through to qwen2's that read it -- and so does
    this pass."""
    return reads(arch, "ATTENTION_LAYERNORM_EPS" if norm == "layer" else "ATTENTION_LAYERNORM_RMS_EPS")


def swa_layers(meta, pattern: int, n_layer: int) -> tuple[bool, ...]:
    """Which layers slide: llama.cpp's load_swa_pattern -- the file's
    ``attention.sliding_window_pattern`` as a per-layer array, else as the period n (its
    default the architecture's), layer il sliding iff il % n < n - 1 (every layer for 0)."""
    raw = meta.raw("attention.sliding_window_pattern")
    if isinstance(raw, (list, tuple, np.ndarray)):
        return tuple(bool(raw[il]) if il < len(raw) else False for il in range(n_layer))
    p = meta.int("attention.sliding_window_pattern", pattern, minimum=0)
    return tuple(p == 0 or il % p < p - 1 for il in range(n_layer))


def mrope_still(model, meta, kind: str, n_rot: int, head: int) -> tuple[bool, ...]:
    """The rotary pairs M-RoPE leaves unrotated for text (ggml-cpu ops.cpp
    ggml_mrope_cache_init): a text token's positions are (p, p, p, 0) (llama-graph.cpp
    llm_graph_input_pos), so pair i, in sector i % sum(sections), turns by p -- as NeoX
    rope -- unless the sector falls to the 4th position; in "imrope" (interleaved, qwen3vl)
    sector s takes t, h, w when s % 3 is 0, 1, 2 and s < 3·sections[s % 3], else the 4th.
    rope.dimension_sections is 4 numbers, or one for all four (get_key_or_arr)."""
    raw = meta.raw("rope.dimension_sections")
    if raw is None:
        raise WeightError(f"{model.path}: metadata {meta.prefix}.rope.dimension_sections missing "
                          "(llama.cpp requires it)")
    try:
        sec = [int(v) for v in raw] if isinstance(raw, (list, tuple, np.ndarray)) else [int(raw)] * 4
    except (TypeError, ValueError):
        sec = []
    if len(sec) != 4 or min(sec) < 0 or not any(sec[:3]) or sum(sec) > head:
        raise WeightError(f"{model.path}: rope.dimension_sections must be 4 counts, one of the "
                          f"first three positive, summing to at most {head} (got {raw!r})")
    total = sum(sec)
    still = []
    for i in range(n_rot // 2):
        sector = i % total
        if kind == "imrope":
            still.append(not sector < 3 * sec[sector % 3])
        else:
            still.append(sector >= sec[0] + sec[1] + sec[2])
    return tuple(still)


def temperature(model, meta, extra: dict, yarn, freq_scale: float,
                 attn_factor: float) -> float:
    """mistral3.cpp: q × log(floor(pos / n_ctx_orig_yarn) + 1)·temperature_scale + 1 when the
    file sets attention.temperature_scale; and with YaRN, llama-context.cpp's
    yarn_attn_factor for a rope.scaling.yarn_log_multiplier (mscale_all_dims) m:
    get_mscale(f, 1) / get_mscale(f, m) / (1 + 0.1·logf(f)) × rope_attn_factor, in float.
    Returns the rope's attn_factor."""
    temp = meta.float("attention.temperature_scale", 0.0)
    if temp:
        floor = meta.int("rope.scaling.original_context_length", meta.int("context_length", 0, 0), 0)
        if not floor:
            raise WeightError(f"{model.path}: attention temperature needs n_ctx_orig_yarn, which "
                              "is 0 (llama.cpp refuses the file)")
        extra.update(attn_temp=(temp, floor))
    log_mul = meta.float("rope.scaling.yarn_log_multiplier", 0.0)
    if yarn is not None and yarn[0] != 0.0 and log_mul:
        f32 = np.float32
        f = f32(1) / f32(freq_scale)
        def mscale(m):
            return f32(1) if f <= 1 else f32(0.1) * f32(m) * f32(np.log(np.float64(f))) + f32(1)
        yarn_af = mscale(1.0) / mscale(log_mul)
        yarn_af = yarn_af * (f32(1) / (f32(1) + f32(0.1) * f32(np.log(np.float64(f)))))
        attn_factor = float(yarn_af * f32(attn_factor))
    return attn_factor


def scales(model, meta, extra: dict, n_layer: int, n_embd: int) -> None:
    """granite.cpp's multipliers: ``logit_scale`` required (llama.cpp refuses a file
    without it), the others optional and 0 (off) when absent; ``rope.scaling.finetuned``
    false turns rope off in every layer (granite's rope_pattern).  minicpm.cpp runs the
    same graph with defaults of its own for files without the keys -- embedding 12,
    residual 1.4f/sqrtf(n_layer), logit 256.0f/n_embd -- and reads no attention.scale."""
    f32 = np.float32
    minicpm = model.metadata.get("general.architecture") == "minicpm"
    if meta.raw("logit_scale") is None and not minicpm:
        raise WeightError(f"{model.path}: metadata {meta.prefix}.logit_scale missing (llama.cpp "
                          "requires it)")
    defaults = (12.0, float(f32(1.4) / np.sqrt(f32(n_layer))) if n_layer else 0.0,
                float(f32(256.0) / f32(n_embd)) if n_embd else 1.0) if minicpm else (0.0, 0.0, 1.0)
    logit = meta.float("logit_scale", defaults[2])
    if logit == 0.0:
        raise WeightError(f"{model.path}: metadata {meta.prefix}.logit_scale must not be 0")
    extra.update(logit_mult=float(f32(1) / f32(logit)),
                 embed_mult=meta.float("embedding_scale", defaults[0]),
                 residual_scale=meta.float("residual_scale", defaults[1]),
                 kq_scale=0.0 if minicpm else meta.float("attention.scale", 0.0))
    finetuned = meta.raw("rope.scaling.finetuned")      # granite.cpp only, not granite-moe.cpp
    if model.metadata.get("general.architecture") == "granite" and finetuned is not None and not finetuned:
        extra.update(no_rope=(True,) * n_layer)


def mrope_unsupported(model, meta, nextn_ok: bool = False) -> None:
    """glm4.cpp / glm4-moe.cpp / hunyuan-vl.cpp variants the reference pass does not
    compute, refused in one line rather than run as the plain text model: M-RoPE
    (rope.dimension_sections with its first two positive: llama_hparams::use_mrope --
    GLM-4V, GLM-4.5V, HunyuanVL) and, unless ``nextn_ok`` (glm4moe: the trunk skips them,
    ``Traits.nextn``), next-token-prediction layers (nextn_predict_layers)."""
    raw = meta.raw("rope.dimension_sections")
    sec = list(raw) if isinstance(raw, (list, tuple, np.ndarray)) else [raw, raw] if raw is not None else []
    if len(sec) >= 2 and int(sec[0] or 0) > 0 and int(sec[1] or 0) > 0:
        raise WeightError(f"{model.path}: {meta.prefix} with M-RoPE (rope.dimension_sections) is "
                          "not implemented by the reference forward pass")
    if not nextn_ok and meta.int("nextn_predict_layers", 0, minimum=0):
        raise WeightError(f"{model.path}: {meta.prefix} with next-token-prediction layers "
                          "(nextn_predict_layers) is not implemented by the reference forward pass")


def llama4(model, meta, extra: dict, n_layer: int, base: float) -> None:
    """llama4.cpp load_arch_hparams: a file without attention.sliding_window (or with a
    non-zero one) has chunked attention of 8192 positions on layers 0-2 of each 4
    (load_swa_pattern(4), or the file's per-layer pattern), those layers' rope base
    rope.freq_base_swa (default the base), rope off on every 4th layer (hparams'
    n_no_rope_layer_step 4) and there the attention temperature log(floor((pos + 1) /
    8192) + 1)·0.1 + 1; q and k RMS-normalised after rope unless 128 experts (the
    Maverick type).  A sliding_window of 0 turns rope off on the last layer
    (n_no_rope_layer_step = n_layer) with no temperature to scale it by: llama.cpp's
    llm_graph_input_attn_temp asserts f_attn_temp_scale != 0 and aborts -- refused here
    in one line.  Expert count 0 is refused as llama.cpp's loader refuses it."""
    if not meta.int("expert_count", 0, minimum=0):
        raise WeightError(f"{model.path}: llama4 model cannot have zero experts (llama.cpp "
                          "refuses the file)")
    raw = meta.raw("attention.sliding_window")
    if raw is not None and meta.int("attention.sliding_window", 0, minimum=0) == 0:
        raise WeightError(f"{model.path}: llama4 with attention.sliding_window 0 leaves its last "
                          "layer without rope or temperature, which llama.cpp aborts on")
    extra.update(n_swa=8192, swa_layers=swa_layers(meta, 4, n_layer), swa_chunked=True,
                 swa_rope_base=meta.float("rope.freq_base_swa", base),
                 no_rope=tuple((il + 1) % 4 == 0 for il in range(n_layer)),
                 attn_temp=(0.1, 8192, 1.0), temp_nope_only=True,
                 qk_l2=meta.int("expert_count", 0, minimum=0) != 128)


def moe_lead(model, meta, n_layer: int) -> int:
    """ernie4-5.cpp: the loader gives experts to every layer from leading_dense_block_count
    on, the graph routes layer il only if also (il + 1) % interleave_moe_layer_step == 0
    (the key required) -- any other step would run a dense FFN the loader never created,
    so a file with one is refused in one line.  Returns the dense lead."""
    step = meta.int("interleave_moe_layer_step", minimum=0)
    lead = meta.int("leading_dense_block_count", 0, minimum=0)
    if step == 0 or any((il + 1) % step for il in range(lead, n_layer)):
        raise WeightError(f"{model.path}: {meta.prefix}.interleave_moe_layer_step {step} leaves "
                          f"layers from {lead} on that llama.cpp loads with experts but runs dense")
    return lead


def experts(model, meta, t, arch: str, legacy: bool, n_layer: int, n_vocab: int, extra: dict) -> None:
    """How the file's experts are routed, as the architecture's loader reads it: deepseek2's
    keys (gating function -- its default when absent or 0 the architecture's,
    ``Traits.moe_gating_none`` --, weights norm and scale, dense lead: deepseek2, glm4moe,
    dots1), only the weights' norm and scale (bailingmoe), or the row's constants; the
    expert counts and groups (llama_model_base::load_hparams: expert_group_count and
    expert_group_used_count, DeepSeek-V3's n_group and topk_group)."""
    if t.moe_keys:
        func = meta.int("expert_gating_func", 0, minimum=0)
        if func == 0:                       # none: the loader's default (deepseek2: old V2 files)
            none = t.moe_gating_none
            if not none:                    # dots1: build_moe_ffn aborts on gating func none
                raise WeightError(f"{model.path}: metadata {meta.prefix}.expert_gating_func missing "
                                  "or 0, which llama.cpp aborts on")
            if arch == "deepseek2" and n_layer in (47, 48) and n_vocab == 154880:
                none = "sigmoid"            # deepseek2.cpp: GLM 4.7 Lite
            func = 2 if none == "sigmoid" else 1
        extra.update(moe_gating="sigmoid" if func == 2 else "softmax",
                     moe_norm=bool(meta.raw("expert_weights_norm") or False),
                     moe_scale=meta.float("expert_weights_scale", 0.0),
                     n_dense_lead=meta.int("leading_dense_block_count", 0, minimum=0))
        if func not in (0, 1, 2):
            raise WeightError(f"{model.path}: expert_gating_func {func} is not softmax (1) or sigmoid (2)")
    elif t.moe_weight_keys:                 # bailingmoe.cpp: norm and scale only, softmax always
        extra.update(moe_norm=bool(meta.raw("expert_weights_norm") or False),
                     moe_scale=meta.float("expert_weights_scale", 0.0), moe_gating=t.moe_gating)
    else:
        extra.update(moe_norm=t.moe_norm, moe_gating=t.moe_gating)
    if not legacy and meta.raw("expert_count"):
        extra.update(n_expert=meta.int("expert_count"), n_expert_used=meta.int("expert_used_count"))
        if extra["n_expert_used"] > extra["n_expert"]:
            raise WeightError(f"{model.path}: expert_used_count exceeds expert_count")
        groups = meta.int("expert_group_count", 0, minimum=0)   # build_moe_ffn's group-limited top-k
        if groups > 1:
            used = meta.int("expert_group_used_count", 0, minimum=0)
            if extra["n_expert"] % groups or not 0 < used <= groups:
                raise WeightError(f"{model.path}: {extra['n_expert']} experts do not split into "
                                  f"expert_group_count {groups} groups with {used} of them used")
            extra.update(moe_groups=(groups, used))


def xielu(model, n_layer: int) -> tuple[tuple[float, float, float, float], ...]:
    """apertus.cpp: xielu.alpha_n / alpha_p / beta / eps (global keys, no architecture
    prefix), each one number or one per layer (get_key_or_arr, required), turned into what
    ggml_xielu stores: (beta + softplus(alpha_n), softplus(alpha_p), beta, eps), softplus
    ggml_compute_softplus_f32 -- x past 20 itself, else logf(1 + expf(x)) -- in float."""
    f32 = np.float32
    cols = []
    for key in ("alpha_n", "alpha_p", "beta", "eps"):
        raw = model.metadata.get(f"xielu.{key}")
        vals = list(raw) if isinstance(raw, (list, tuple, np.ndarray)) else \
            [raw] * n_layer if raw is not None else []
        try:
            vals = [f32(v) for v in vals]
        except (TypeError, ValueError):
            vals = []
        if len(vals) < n_layer or not all(np.isfinite(vals)):
            raise WeightError(f"{model.path}: metadata xielu.{key} missing, not numbers, or shorter "
                              f"than the {n_layer} layers (llama.cpp requires it)")
        cols.append(vals[:n_layer])

    def softplus(x):
        return x if x > f32(20) else f32(np.log(f32(1) + f32(np.exp(x))))
    return tuple((float(f32(b + softplus(an))), float(softplus(ap)), float(b), float(e))
                 for an, ap, b, e in zip(*cols))


_KEYS = ("attention.head_count", "attention.head_count_kv", "feed_forward_length")


def layer_shapes(model, meta, n_layer: int) -> tuple[tuple[int, int, int], ...]:
    """deci.cpp: each layer's (n_head, n_head_kv, n_ff) -- a number for every layer, or one
    per layer (llama.cpp's get_key_or_arr; n_head_kv defaults to n_head); run by
    ``layer_shapes.block``."""
    cols = []
    for key in _KEYS:
        raw = meta.raw(key)
        if raw is None and key.endswith("_kv"):
            cols.append(list(cols[0]))
            continue
        vals = list(raw) if isinstance(raw, (list, tuple, np.ndarray)) else [raw] * n_layer
        try:
            vals = [int(v) for v in vals]
        except (TypeError, ValueError):
            vals = []
        if len(vals) != n_layer or min(vals, default=0) < 0:
            raise WeightError(f"{model.path}: metadata {meta.prefix}.{key} must be a count or "
                              f"{n_layer} counts, one per layer (got {raw!r})")
        cols.append(vals)
    shapes = tuple(zip(*cols))
    for il, (h, hkv, _) in enumerate(shapes):
        if hkv > h or (hkv and h % hkv):
            raise WeightError(f"{model.path}: layer {il} has {h} heads and {hkv} KV heads, "
                              "which do not group evenly")
    return shapes


def layers(model, meta, t, n_layer: int, extra: dict) -> None:
    """What differs by layer, or by the number of layers, for the rows that say so:
    baichuan.cpp's model type by block count (only the 7B's 32 layers rope, only the 13B's
    40 have ALiBi, max bias 8), ernie4_5-moe's routed layers (``moe_lead``), deci's shapes
    (``layer_shapes``) and apertus's xIELU parameters (``xielu``)."""
    if t.rope_n_layers and n_layer not in t.rope_n_layers:
        extra.update(no_rope=(True,) * n_layer)
    if n_layer in t.alibi_n_layers:
        extra.update(alibi=8.0)
    if t.moe_step:
        extra.update(n_dense_lead=moe_lead(model, meta, n_layer))
    if t.layer_shapes:
        extra.update(layer_shapes=layer_shapes(model, meta, n_layer))
    if t.act == "xielu":
        extra.update(xielu=xielu(model, n_layer))
