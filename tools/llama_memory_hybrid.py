"""Recipes of hybrid attention + recurrent models with real widths, for the llama.cpp memory records.

Why: ``tools/record_llama_memory.py --hybrid`` records what llama.cpp allocates for hybrid
models (llama_memory_hybrid: a KV cache over the attention layers, a recurrent state over
the others), and no small public file of most of these architectures exists.  Each recipe
here lists exactly the tensors the architecture's ``load_arch_tensors`` creates (llama.cpp
as vendored in llama-cpp-python 0.3.36, ``src/models/<arch>.cpp``), at the widths given, so
llama.cpp loads the zero-filled file built from it (``tools.llama_memory_recipe.build``).

Contract: ``hybrid(arch, n_layer, ...) -> recipe`` (the ``recipe`` object of a record:
metadata, tensors with ggml type and shape, alignment); raises ``ValueError`` for an
architecture neither written here nor fillable by tools/loader_corpus.
"""
from __future__ import annotations

_GGUF_TYPE = {"uint32": "UINT32", "int32": "INT32", "uint64": "UINT64", "uint16": "UINT16", "float32": "FLOAT32",
              "float64": "FLOAT64", "bool": "BOOL", "string": "STRING"}


def _ffn(i: int, n_embd: int, n_ff: int) -> list:
    b = f"blk.{i}."
    return [(b + "ffn_gate.weight", (n_embd, n_ff)), (b + "ffn_down.weight", (n_ff, n_embd)),
            (b + "ffn_up.weight", (n_embd, n_ff))]


def _lfm2_tensors(md: dict, n_layer: int, n_embd: int, n_ff: int, n_vocab: int, n_head: int, kv: list) -> list:
    """src/models/lfm2.cpp load_arch_tensors: short-convolution or attention operator, dense FFN."""
    l_cache = md["lfm2.shortconv.l_cache"][0]
    head = n_embd // n_head
    ts = [("token_embd.weight", (n_embd, n_vocab)), ("token_embd_norm.weight", (n_embd,))]
    for i in range(n_layer):
        b = f"blk.{i}."
        ts += [(b + "ffn_norm.weight", (n_embd,))] + _ffn(i, n_embd, n_ff) + [(b + "attn_norm.weight", (n_embd,))]
        if kv[i]:
            ts += [(b + "attn_q_norm.weight", (head,)), (b + "attn_k_norm.weight", (head,)),
                   (b + "attn_q.weight", (n_embd, n_embd)), (b + "attn_k.weight", (n_embd, head * kv[i])),
                   (b + "attn_v.weight", (n_embd, head * kv[i])), (b + "attn_output.weight", (n_embd, n_embd))]
        else:
            ts += [(b + "shortconv.conv.weight", (l_cache, n_embd)), (b + "shortconv.in_proj.weight", (n_embd, 3 * n_embd)),
                   (b + "shortconv.out_proj.weight", (n_embd, n_embd))]
    return ts


def _moe_ffn(i: int, n_embd: int, n_ff_exp: int, n_expert: int, n_ff_shexp: int) -> list:
    """src/models/qwen3next.cpp load_block_trunk: the router, the experts (separate gate and
    up, create_tensor_gate_up_exps) and the gated shared expert."""
    b = f"blk.{i}."
    return [(b + "ffn_gate_inp.weight", (n_embd, n_expert)), (b + "ffn_down_exps.weight", (n_ff_exp, n_embd, n_expert)),
            (b + "ffn_gate_exps.weight", (n_embd, n_ff_exp, n_expert)),
            (b + "ffn_up_exps.weight", (n_embd, n_ff_exp, n_expert)),
            (b + "ffn_gate_inp_shexp.weight", (n_embd,)), (b + "ffn_gate_shexp.weight", (n_embd, n_ff_shexp)),
            (b + "ffn_up_shexp.weight", (n_embd, n_ff_shexp)), (b + "ffn_down_shexp.weight", (n_ff_shexp, n_embd))]


def _qwen35_tensors(md: dict, n_layer: int, n_embd: int, n_ff: int, n_vocab: int, n_head: int, head: int,
                    kv: int, ssm: dict, arch: str = "qwen35") -> list:
    """src/models/qwen35.cpp load_arch_tensors (no MTP block): gated-delta-net layers, with
    every full_attention_interval-th layer a gated-query attention layer.  qwen3next
    (src/models/qwen3next.cpp) is the same trunk with beta and alpha in one projection
    (``ssm_ba``, 2 x dt_rank rows) and a mixture of experts with a shared expert;
    qwen35moe (src/models/qwen35moe.cpp) is qwen35 with that mixture of experts."""
    d_state, n_group, dt_rank, d_conv = (ssm["ssm.state_size"], ssm["ssm.group_count"], ssm["ssm.time_step_rank"],
                                         ssm["ssm.conv_kernel"])
    key_dim, value_dim = d_state * n_group, d_state * dt_rank
    interval = md.get(f"{arch}.full_attention_interval", (4,))[0]
    ts = [("token_embd.weight", (n_embd, n_vocab)), ("output_norm.weight", (n_embd,))]
    for i in range(n_layer):
        b = f"blk.{i}."
        ts += [(b + "attn_norm.weight", (n_embd,)), (b + "post_attention_norm.weight", (n_embd,))]
        if (i + 1) % interval == 0:
            ts += [(b + "attn_q.weight", (n_embd, head * n_head * 2)), (b + "attn_k.weight", (n_embd, head * kv)),
                   (b + "attn_v.weight", (n_embd, head * kv)), (b + "attn_output.weight", (head * n_head, n_embd)),
                   (b + "attn_q_norm.weight", (head,)), (b + "attn_k_norm.weight", (head,))]
        else:
            ts += [(b + "attn_qkv.weight", (n_embd, 2 * key_dim + value_dim)), (b + "attn_gate.weight", (n_embd, value_dim)),
                   (b + "ssm_conv1d.weight", (d_conv, 2 * key_dim + value_dim)), (b + "ssm_dt.bias", (dt_rank,)),
                   (b + "ssm_a", (dt_rank,))]
            ts += ([(b + "ssm_ba.weight", (n_embd, 2 * dt_rank))] if arch == "qwen3next" else
                   [(b + "ssm_beta.weight", (n_embd, dt_rank)), (b + "ssm_alpha.weight", (n_embd, dt_rank))])
            ts += [(b + "ssm_norm.weight", (d_state,)), (b + "ssm_out.weight", (value_dim, n_embd))]
        if arch in ("qwen3next", "qwen35moe"):
            ts += _moe_ffn(i, n_embd, md[f"{arch}.expert_feed_forward_length"][0], md[f"{arch}.expert_count"][0],
                           md[f"{arch}.expert_shared_feed_forward_length"][0])
        else:
            ts += _ffn(i, n_embd, n_ff)
    return ts


def _plamo2_tensors(n_layer: int, n_embd: int, n_ff: int, n_vocab: int, n_head: list, kv: list, head: int,
                    ssm: dict) -> list:
    """src/models/plamo2.cpp load_arch_tensors: a Mamba mixer (head_count_kv 0) or a fused-QKV
    attention mixer, then the post-mixer norm and a fused gate/up FFN in every layer (the
    norms without a ``.weight`` suffix where load_arch_tensors names them so)."""
    d_conv, d_state, n_heads, d_inner = (ssm["ssm.conv_kernel"], ssm["ssm.state_size"], ssm["ssm.time_step_rank"],
                                         ssm["ssm.inner_size"])
    dt_dim = max(64, n_embd // 16)
    ts = [("token_embd.weight", (n_embd, n_vocab)), ("output_norm.weight", (n_embd,))]
    for i in range(n_layer):
        b = f"blk.{i}."
        ts += [(b + "attn_norm.weight", (n_embd,))]
        if kv[i] == 0:
            ts += [(b + "ssm_in.weight", (n_embd, 2 * d_inner)), (b + "ssm_conv1d.weight", (d_conv, d_inner)),
                   (b + "ssm_x.weight", (d_inner, dt_dim + 2 * d_state)), (b + "ssm_dt.weight", (dt_dim, n_heads)),
                   (b + "ssm_dt.bias", (n_heads,)), (b + "ssm_a", (n_heads,)), (b + "ssm_d", (n_heads,)),
                   (b + "ssm_out.weight", (d_inner, n_embd)), (b + "ssm_dt_norm", (dt_dim,)),
                   (b + "ssm_b_norm", (d_state,)), (b + "ssm_c_norm", (d_state,))]
        else:
            ts += [(b + "attn_qkv.weight", (n_embd, (n_head[i] + 2 * kv[i]) * head)),
                   (b + "attn_q_norm.weight", (head, n_head[i])), (b + "attn_k_norm.weight", (head, kv[i])),
                   (b + "attn_output.weight", (n_head[i] * head, n_embd))]
        ts += [(b + "post_attention_norm", (n_embd,)), (b + "ffn_norm.weight", (n_embd,)),
               (b + "ffn_down.weight", (n_ff, n_embd)), (b + "ffn_up.weight", (n_embd, 2 * n_ff)),
               (b + "post_ffw_norm", (n_embd,))]
    return ts


def _minimax01_tensors(md: dict, n_layer: int, n_embd: int, n_ff: int, n_vocab: int, n_head: int, kv: int,
                       head: int) -> list:
    """src/models/minimax-01.cpp load_arch_tensors: lightning-attention layers (fused QKV, an
    output gate and a norm over the heads) with every full_attention_interval-th layer a
    softmax-attention one, a mixture of experts in every layer."""
    interval = md["minimax-01.full_attention_interval"][0]
    n_expert = md["minimax-01.expert_count"][0]
    ts = [("token_embd.weight", (n_embd, n_vocab)), ("output_norm.weight", (n_embd,)),
          ("output.weight", (n_embd, n_vocab))]
    for i in range(n_layer):
        b = f"blk.{i}."
        ts += [(b + "attn_norm.weight", (n_embd,))]
        if (i + 1) % interval == 0:
            ts += [(b + "attn_q.weight", (n_embd, head * n_head)), (b + "attn_k.weight", (n_embd, head * kv)),
                   (b + "attn_v.weight", (n_embd, head * kv))]
        else:
            ts += [(b + "attn_norm_2.weight", (head * n_head,)), (b + "attn_qkv.weight", (n_embd, 3 * head * n_head)),
                   (b + "attn_gate.weight", (n_embd, head * n_head))]
        ts += [(b + "attn_output.weight", (head * n_head, n_embd)), (b + "ffn_norm.weight", (n_embd,)),
               (b + "ffn_gate_inp.weight", (n_embd, n_expert)), (b + "ffn_gate_exps.weight", (n_embd, n_ff, n_expert)),
               (b + "ffn_down_exps.weight", (n_ff, n_embd, n_expert)),
               (b + "ffn_up_exps.weight", (n_embd, n_ff, n_expert))]
    return ts


def _kimi_linear_tensors(md: dict, n_layer: int, n_embd: int, n_ff: int, n_vocab: int, n_head: int, kv: list,
                        a: str = "kimi-linear") -> list:
    """src/models/kimi-linear.cpp load_arch_tensors: KDA layers (head_count_kv 0: q/k/v with
    their short convolutions, the f/g low-rank gates, beta, A, the gated output norm) and MLA
    layers with the split K/V up-projections (the MLA KV cache), a dense FFN in the leading
    layers and experts with a shared expert after.  bailingmoe3 (src/models/bailingmoe3.cpp)
    is the same with full-rank f/g gates, 4-D convolutions and a per-head gate on MLA."""
    kda, d_conv, lora = md[f"{a}.kda.head_dim"][0], md[f"{a}.ssm.conv_kernel"][0], md[f"{a}.attention.kv_lora_rank"][0]
    k_mla, v_mla, rope = (md[f"{a}.attention.key_length_mla"][0], md[f"{a}.attention.value_length_mla"][0],
                          md[f"{a}.rope.dimension_count"][0])
    n_expert, n_ff_exp, dense = (md[f"{a}.expert_count"][0], md[f"{a}.expert_feed_forward_length"][0],
                                 md[f"{a}.leading_dense_block_count"][0])
    n_ff_sh = n_ff_exp * max(1, md[f"{a}.expert_shared_count"][0])
    ts = [("token_embd.weight", (n_embd, n_vocab)), ("output_norm.weight", (n_embd,)),
          ("output.weight", (n_embd, n_vocab))]
    for i in range(n_layer):
        b = f"blk.{i}."
        ts += [(b + "attn_norm.weight", (n_embd,))]
        if kv[i] == 0:
            bm = a == "bailingmoe3"
            ts += [(b + f"ssm_conv1d_{x}.weight", (d_conv, 1, kda * n_head) + ((1,) if bm else ())) for x in "qkv"]
            ts += [(b + f"attn_{x}.weight", (n_embd, kda * n_head)) for x in "qkv"]
            if bm:
                ts += [(b + "ssm_f_a.weight", (n_embd, kda * n_head)), (b + "ssm_beta.weight", (n_embd, n_head)),
                       (b + "ssm_a", (1, n_head)), (b + "ssm_dt.bias", (kda * n_head,)),
                       (b + "ssm_g_a.weight", (n_embd, kda * n_head))]
            else:
                ts += [(b + "ssm_f_a.weight", (n_embd, kda)), (b + "ssm_f_b.weight", (kda, kda * n_head)),
                       (b + "ssm_beta.weight", (n_embd, n_head)), (b + "ssm_a", (1, n_head)),
                       (b + "ssm_dt.bias", (kda * n_head,)), (b + "ssm_g_a.weight", (n_embd, kda)),
                       (b + "ssm_g_b.weight", (kda, kda * n_head))]
            ts += [(b + "ssm_norm.weight", (kda,)), (b + "attn_output.weight", (kda * n_head, n_embd))]
        else:
            ts += [(b + "attn_kv_a_norm.weight", (lora,)), (b + "attn_q.weight", (n_embd, n_head * k_mla)),
                   (b + "attn_kv_a_mqa.weight", (n_embd, lora + rope)),
                   (b + "attn_k_b.weight", (k_mla - rope, lora, n_head)),
                   (b + "attn_v_b.weight", (lora, v_mla, n_head)),
                   (b + "attn_output.weight", (n_head * v_mla, n_embd))]
            if a == "bailingmoe3":
                ts += [(b + "attn_gate.weight", (n_embd, n_head))]
        ts += [(b + "ffn_norm.weight", (n_embd,))]
        if i < dense:
            ts += _ffn(i, n_embd, n_ff)
        else:
            ts += [(b + "ffn_gate_inp.weight", (n_embd, n_expert)),
                   (b + "ffn_gate_exps.weight", (n_embd, n_ff_exp, n_expert)),
                   (b + "ffn_down_exps.weight", (n_ff_exp, n_embd, n_expert)),
                   (b + "ffn_up_exps.weight", (n_embd, n_ff_exp, n_expert)),
                   (b + "ffn_gate_shexp.weight", (n_embd, n_ff_sh)), (b + "ffn_down_shexp.weight", (n_ff_sh, n_embd)),
                   (b + "ffn_up_shexp.weight", (n_embd, n_ff_sh)), (b + "exp_probs_b.bias", (n_expert,))]
    return ts


def hybrid(arch: str, n_layer: int, head_count_kv: list[int] | None = None, n_embd: int = 64, n_head: int = 4,
           n_ff: int = 96, n_vocab: int = 300, ssm: dict | None = None, extra: dict | None = None,
           wtype: str = "Q8_0") -> dict:
    """A recipe for a hybrid attention + recurrent model (the tensors ``load_tensors`` creates
    for it, from tools/loader_corpus's table-driven builder, with the layers' kinds set by
    ``head_count_kv`` (0: recurrent) and the widths given), weights ``wtype`` where a matrix
    row allows it, F32 elsewhere (norms, convolutions, SSM A/D)."""
    from tools import loader_corpus as lc
    u = "uint32"
    over = {"block_count": (n_layer, u), "embedding_length": (n_embd, u), "attention.head_count": (n_head, u),
            "feed_forward_length": (n_ff, u)}
    if head_count_kv is not None:
        over["attention.head_count_kv"] = (list(head_count_kv), "array[int32]")
    for k, v in {**(ssm or {}), **(extra or {})}.items():
        over[k] = v if isinstance(v, tuple) else ((list(v), "array[int32]") if isinstance(v, list) else (v, u))
    if arch in ("qwen35", "qwen35moe", "qwen3next"):
        head = (extra or {}).get("attention.key_length", n_embd // n_head)
        md = {"general.architecture": (arch, "string"), "general.name": (f"tiny {arch}", "string"),
              f"{arch}.context_length": (131072, u), f"{arch}.attention.layer_norm_rms_epsilon": (1e-6, "float32"),
              f"{arch}.rope.dimension_count": (head // 4, u),
              **({f"{arch}.rope.dimension_sections": ([head // 16, head // 16, head // 16, 0], "array[int32]")}
                 if arch != "qwen3next" else {}),
              **{f"{arch}.{k}": v for k, v in over.items()}}
        ts = _qwen35_tensors(md, n_layer, n_embd, n_ff, n_vocab, n_head, head, (extra or {})["attention.head_count_kv"],
                             ssm, arch)
    elif arch == "minimax-01":
        head = (extra or {})["attention.key_length"]
        md = {"general.architecture": (arch, "string"), "general.name": (f"tiny {arch}", "string"),
              "minimax-01.context_length": (131072, u),
              "minimax-01.attention.layer_norm_rms_epsilon": (1e-5, "float32"),
              "minimax-01.residual_scale": (1.0, "float32"),
              **{f"minimax-01.{k}": v for k, v in over.items()}}
        ts = _minimax01_tensors(md, n_layer, n_embd, n_ff, n_vocab, n_head, (extra or {})["attention.head_count_kv"],
                                head)
    elif arch in ("kimi-linear", "bailingmoe3"):
        md = {"general.architecture": (arch, "string"), "general.name": (f"tiny {arch}", "string"),
              f"{arch}.context_length": (131072, u), f"{arch}.attention.layer_norm_rms_epsilon": (1e-5, "float32"),
              **{f"{arch}.{k}": v for k, v in over.items()}}
        ts = _kimi_linear_tensors(md, n_layer, n_embd, n_ff, n_vocab, n_head, head_count_kv, arch)
    elif arch == "plamo2":
        head = (extra or {})["attention.key_length"]
        n_heads = [n_head if k else 0 for k in head_count_kv]
        over["attention.head_count"] = (n_heads, "array[int32]")
        md = {"general.architecture": (arch, "string"), "general.name": (f"tiny {arch}", "string"),
              "plamo2.context_length": (131072, u), "plamo2.attention.layer_norm_rms_epsilon": (1e-6, "float32"),
              **{f"plamo2.{k}": v for k, v in over.items()}}
        ts = _plamo2_tensors(n_layer, n_embd, n_ff, n_vocab, n_heads, head_count_kv, head, ssm)
    elif arch == "lfm2":
        md = {"general.architecture": (arch, "string"), "general.name": (f"tiny {arch}", "string"),
              "lfm2.context_length": (131072, u), "lfm2.attention.layer_norm_rms_epsilon": (1e-5, "float32"),
              **{f"lfm2.{k}": v for k, v in over.items()}}
        ts = _lfm2_tensors(md, n_layer, n_embd, n_ff, n_vocab, n_head, head_count_kv)
    else:
        base = lc.base_model(arch, over)
        if base is None:
            raise ValueError(f"tools/loader_corpus cannot fill a {arch} model")
        md, ts = base
        md[f"{arch}.context_length"] = (131072, u)
        if arch == "jamba":         # dense FFN in every layer (n_expert = 0), src/models/jamba.cpp
            ts = ts + [t for i in range(n_layer) for t in _ffn(i, n_embd, n_ff)]
        ts = [(n, (n_embd, n_vocab) if n in ("token_embd.weight", "output.weight") else ne) for n, ne in ts]
        # the optional convolution bias every real Mamba-2 layer has: the graph adds it
        # unconditionally (src/models/mamba-base.cpp build_mamba2_layer)
        names = {n for n, _ in ts}
        ts += [(n.replace(".weight", ".bias"), ne[1:]) for n, ne in ts
               if n.endswith("ssm_conv1d.weight") and n.replace(".weight", ".bias") not in names]
    meta = {}
    for k, (v, t) in md.items():
        if t.startswith("array["):
            meta[k] = {"type": "array", "sub": _GGUF_TYPE[t[6:-1]], "value": list(v)}
        else:
            meta[k] = {"type": _GGUF_TYPE[t], "value": v}
    meta.update({"tokenizer.ggml.model": {"type": "STRING", "value": "llama"},
                 "tokenizer.ggml.tokens": {"type": "vocab", "n": n_vocab},
                 "tokenizer.ggml.scores": {"type": "vocab", "n": n_vocab},
                 "tokenizer.ggml.token_type": {"type": "vocab", "n": n_vocab}})
    flat = ("ssm_conv1d", "shortconv.conv", "ssm_a", "ssm_d", "ssm_dt.weight", "attn_q_norm", "attn_k_norm")
    tensors = [[n, wtype if len(ne) >= 2 and ne[0] % 32 == 0 and not any(f in n for f in flat) else "F32", list(ne)]
               for n, ne in ts]
    return {"metadata": meta, "tensors": tensors, "alignment": 32}
