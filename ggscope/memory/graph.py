"""The graph llama.cpp reserves its compute buffer for, as shapes, for ``ggscope.memory.galloc``.

Why: the compute buffer is ggml-alloc's plan of one graph - llama_context::graph_reserve
(src/llama-context.cpp) builds the model's graph for a micro-batch of ``n_ubatch`` tokens,
all of them outputs, over the whole cache (``n_kv`` = the cache size), and the scheduler
reserves for it.  Replaying the allocator needs that graph node for node: the same ops,
shapes, views and order (``ggml_build_forward_expand`` calls included).  This module writes
it with the ggml calls llama.cpp makes (llama.cpp as vendored in llama-cpp-python 0.3.36),
one builder with per-architecture switches (the table ``DECODER``):

* inputs - ``build_inp_embd`` (token ids and the embeddings input, both in the graph
  through ``ggml_build_forward_select``; embedding scales), ``build_inp_pos`` (four
  positions per token with multi-section RoPE), learned positions (GPT-2, MPT),
  ``build_inp_out_ids``, ``build_inp_mem_hybrid``'s recurrent-state input;
* the blocks of src/models/<arch>.cpp: "llama" (llama, qwen2, qwen3, qwen3moe, starcoder2,
  gpt2, mpt, granitehybrid, jamba, lfm2, gpt-oss, deepseek2 - norm, attention (or
  DeepSeek-2's latent attention, ``ggscope.memory.graph_mla``) or a recurrent mixer
  (Mamba-1, Mamba-2, LFM2's short convolution), the last layer's
  ``get_rows`` of the outputs, residual, norm, FFN, residual), "gemma" (post norms),
  "phi3" (its residual order), "falcon" (attention and FFN from one norm), "falcon-h1"
  (attention and Mamba-2 summed), "qwen35" (qwen3next, qwen35, qwen35moe: delta-net or
  gated attention, a post-attention norm, the outputs picked after the output norm),
  "rwkv6" (rwkv6 and rwkv7, ``ggscope.memory.graph_rwkv``), "minimax" (lightning or full
  attention, the residual taken from the norm and scaled, MoE),
  "mamba" (mamba, mamba2: the mixer and the residual, no FFN), "nemotron_h" (one mixer per
  layer - Mamba-2, attention without RoPE or a squared-ReLU FFN - and the residual);
* the FFN - ``build_ffn`` (SwiGLU/GeGLU with a parallel gate, fused gate-up SwiGLU, GELU
  without a gate, biases) or ``build_moe_ffn`` (``ggscope.memory.graph_moe``);
* the output norm (``result_norm``) and the logits (``result_output``; logit scale or
  soft-cap, output bias), the graph's outputs (``llm_graph_result::set_outputs``).

Attention is ``ggscope.memory.graph_attn``, Mamba-2 ``graph_ssm``, the gated delta net
``graph_gdn``.  Architectures not in the table keep ``ggscope.memory.compute``'s plan of
peaks.  Weights and caches are external tensors: only shapes are used, never data.

Contract: ``described(hp, names, meta) -> bool``; ``build(hp, meta, names, n_kv, n_ubatch,
n_seq, flash_attn, type_k, type_v, n_rs=, n_outputs=) -> Graph`` (``n_kv``: the cache's cells, or a dict of
cells by cache name, "kv" and "kv (swa)"); ``names`` is the set of tensor names in the file
(optional biases and norms are switched on by presence, as the loader does).
"""
from __future__ import annotations

from ggscope.memory import graph_ops as g
from ggscope.memory import graph_attn, graph_gdn, graph_mla, graph_moe, graph_rwkv, graph_ssm
from ggscope.memory.galloc import Graph

__all__ = ["DECODER", "described", "build"]

# architecture -> its switches: block (see the module docstring); qk_norm: Q/K RMS norms
# before RoPE ("2d": MPT's LayerNorm over rows); q_scale: Q scaled after RoPE; q_gate:
# Qwen3-Next / Qwen3.5's gated Q ("4d": via a 4-d reshape); gdn: the delta-net variant;
# norm: "NORM" for LayerNorm; gelu_ffn: FFN without a gate; act: the gated activation;
# rope: False (ALiBi, learned positions); rope_key: a file key that switches RoPE off;
# pos_embd: learned positions (always, or "if present"); pos_per_embd: positions per token;
# scales: granite's embedding / residual / logit multipliers; attn_softcap, logit_softcap:
# Gemma's soft-caps (True, or the key whose non-zero value switches it on); ffn_norm: the
# FFN norm's tensor name where it is not "ffn_norm.weight"; ungated: the activation of an
# FFN without a gate ("GELU", "RELU_SQR"); mamba: 1 for Mamba-1 mixers;
# residual_first: the residual is the first operand of the adds; moe_norm_w: False where
# build_moe_ffn is called without normalising the experts' weights; moe_gating, moe_act:
# gpt-oss's expert gating and activation; swa: the block may have sliding-window layers (two
# caches); outputs: "l_out" where the outputs are picked from the last layer's output;
# mixer: "shortconv" for LFM2's recurrent layers; output_norm: its tensor name if not the usual;
# mla: DeepSeek-2's latent attention (``ggscope.memory.graph_mla``); moe_gating "file": the
# gating function, weight norm and scale as the file (or llama.cpp's defaults) set them
DECODER: dict[str, dict] = {
    "llama": {"block": "llama"},
    "qwen2": {"block": "llama"},
    "qwen3": {"block": "llama", "qk_norm": True},
    "qwen3moe": {"block": "llama", "qk_norm": True},
    "granitehybrid": {"block": "llama", "scales": True, "rope_key": "rope.scaling.finetuned"},
    "falcon-h1": {"block": "falcon-h1", "ffn_norm": "ffn_norm"},      # tn(LLM_TENSOR_FFN_NORM, i): no ".weight"
    "qwen3next": {"block": "qwen35", "gdn": "qwen3next", "q_gate": "4d"},
    "phi3": {"block": "phi3", "q_scale": True},
    "starcoder2": {"block": "llama", "norm": "NORM", "ungated": "GELU"},
    "gpt2": {"block": "llama", "norm": "NORM", "ungated": "GELU", "rope": False, "pos_embd": True},
    "mpt": {"block": "llama", "norm": "NORM", "ungated": "GELU", "rope": False, "pos_embd": "if present",
            "qk_norm": "2d"},
    "falcon": {"block": "falcon", "norm": "NORM", "ungated": "GELU"},
    "gemma2": {"block": "gemma", "swa": True, "act": "GEGLU", "attn_softcap": True, "logit_softcap": True},
    "gemma3": {"block": "gemma", "swa": True, "act": "GEGLU", "qk_norm": True,
               "logit_softcap": "final_logit_softcapping"},
    "qwen35": {"block": "qwen35", "gdn": "qwen35", "q_gate": "3d", "pos_per_embd": 4},
    "qwen35moe": {"block": "qwen35", "gdn": "qwen35", "q_gate": "3d", "pos_per_embd": 4},
    "jamba": {"block": "llama", "rope": False, "mamba": 1, "residual_first": True, "moe_norm_w": False},
    "nemotron_h": {"block": "nemotron_h", "rope": False, "ungated": "RELU_SQR"},
    "gpt-oss": {"block": "llama", "swa": True, "ffn_norm": "post_attention_norm.weight", "outputs": "l_out",
                "moe_gating": "softmax_weight", "moe_norm_w": False, "moe_act": "SWIGLU_OAI"},
    "lfm2": {"block": "llama", "swa": True, "qk_norm": True, "residual_first": True, "mixer": "shortconv",
             "output_norm": "token_embd_norm.weight"},
    "deepseek2": {"block": "llama", "mla": True, "moe_gating": "file"},
    "rwkv6": {"block": "rwkv6", "norm": "NORM"},
    "rwkv7": {"block": "rwkv6", "norm": "NORM"},
    "minimax-01": {"block": "minimax"},
    "mamba": {"block": "mamba"},
    "mamba2": {"block": "mamba"},
}


LLAMA_MAX_EXPERTS = 512                    # src/llama-hparams.h


def described(hp, names, meta) -> bool:
    """True when ``build`` describes this model's graph: a table architecture without MLA,
    a sliding window only where the block has one, one head size, its layers' weights under
    the expected names, and sizes llama.cpp could build the graph from (positive, dividing
    as its asserts require; a hostile header falls back to the plan of peaks, never loops
    over a count it claims)."""
    if hp.arch in DECODER and DECODER[hp.arch]["block"] == "rwkv6":
        return (graph_rwkv.described(hp, names, meta) and min(hp.n_embd, hp.n_vocab, hp.n_ff) > 0
                and "output_norm.weight" in names)
    if hp.arch not in DECODER or (hp.mla and not DECODER[hp.arch].get("mla")) or not _sizes_ok(hp, meta):
        return False
    if DECODER[hp.arch].get("mla") and not (hp.mla and graph_mla.described(hp, names, meta)):
        return False
    if not hp.ffn_gated and not DECODER[hp.arch].get("ungated") and DECODER[hp.arch]["block"] != "mamba":
        return False
    if hp.swa_any and not DECODER[hp.arch].get("swa"):
        return False
    if hp.n_expert_used and not all(f"blk.{il}.ffn_gate_exps.weight" in names for il in range(hp.n_layer)
                                    if f"blk.{il}.ffn_gate_inp.weight" in names):
        return False
    if (hp.head_k != hp.head_v and not hp.mla) or hp.kv_layers != hp.n_layer:
        return False
    attn_layers = [il for il in range(hp.n_layer) if hp.attn[il]]
    if len({hp.n_head[il] for il in attn_layers}) > 1 or len({hp.n_head_kv[il] for il in attn_layers}) > 1:
        return False
    mixer = ("attn_qkv.weight" if "gdn" in DECODER[hp.arch] or DECODER[hp.arch]["block"] == "minimax"
             else "shortconv.in_proj.weight"
             if DECODER[hp.arch].get("mixer") == "shortconv" else "ssm_in.weight")
    need = [f"blk.{il}.{mixer}" for il in range(hp.n_layer) if hp.recr[il]]
    return (all(n in names for n in need) and DECODER[hp.arch].get("output_norm", "output_norm.weight") in names
            and (hp.mla or all(f"blk.{il}.attn_q.weight" in names or f"blk.{il}.attn_qkv.weight" in names
                               for il in attn_layers)))


def _sizes_ok(hp, meta) -> bool:
    try:
        if min(hp.n_embd, hp.n_vocab) <= 0 or (DECODER[hp.arch]["block"] != "mamba" and (hp.n_ff or hp.n_ff_exp) <= 0):
            return False
        n_ff = meta.get(f"{hp.arch}.feed_forward_length")     # one FFN width for every layer
        if n_ff is not None and not isinstance(n_ff, (int, float)) and len({int(x) for x in n_ff} - {0}) > 1:
            return False
        for il in range(hp.n_layer):
            if hp.attn[il] and not (hp.head_k > 0 and hp.n_head_kv[il] > 0 and hp.n_head[il] > 0
                                    and hp.n_head[il] % hp.n_head_kv[il] == 0):
                return False
        if hp.n_expert_used:
            n_exp = int(meta.get(f"{hp.arch}.expert_count", 0))
            if not (0 < hp.n_expert_used <= n_exp <= LLAMA_MAX_EXPERTS and (hp.n_ff_exp or hp.n_ff) > 0):
                return False
        if any(hp.recr) and DECODER[hp.arch].get("mixer") == "shortconv":
            if int(meta.get(f"{hp.arch}.shortconv.l_cache", 0)) < 2:
                return False
        elif any(hp.recr) and DECODER[hp.arch]["block"] == "minimax":
            pass                                          # lightning attention: the attention widths
        elif any(hp.recr):
            if "gdn" in DECODER[hp.arch]:
                p = graph_gdn.params(meta, hp.arch)
                ok = (p["d_conv"] >= 1 and p["n_k"] > 0 and p["n_v"] > 0 and p["d_state"] > 0 and p["d_inner"] > 0
                      and p["d_inner"] % p["n_v"] == 0 and p["n_v"] % p["n_k"] == 0)
            else:
                p = graph_ssm.ssm_params(meta, hp.arch)
                ok = (p["d_conv"] >= 1 and p["n_head"] > 0 and p["n_group"] > 0 and p["d_state"] > 0
                      and p["d_inner"] > 0 and (hp.arch == "mamba" or (p["d_inner"] % p["n_head"] == 0
                                                                       and p["d_inner"] % p["n_group"] == 0)))
            if not ok:
                return False
    except (TypeError, ValueError, OverflowError):
        return False
    return True


class _Builder:
    def __init__(self, hp, meta, names, n_kv, n_tokens, n_seq, flash_attn, type_k, type_v, n_rs, n_outputs, streams):
        self.hp, self.meta, self.names, self.fa = hp, meta, names, flash_attn
        self.n_kv = n_kv if isinstance(n_kv, dict) else {"kv": n_kv}     # cache name -> cells
        self.T, self.ns, self.n_rs, self.n_out = n_tokens, n_seq, n_rs, n_outputs
        self.streams = streams             # the attention's cache streams (1: a unified cache)
        self.iswa = "kv (swa)" in self.n_kv
        self.type_k, self.type_v = type_k, type_v
        self.spec = DECODER[hp.arch]
        self.block_norm = self.spec.get("norm", "RMS_NORM")
        self.gf = Graph()
        self.rs = None
        self.v_first = None                # RWKV-7: the first layer's V, read by every later layer
        self.attn_cache = {}               # cache name -> its attention inputs

    def key(self, name, default=0.0):
        return float(self.meta.get(f"{self.hp.arch}.{name}", default) or 0.0)

    def w(self, name, *ne):
        return g.weight(ne, name) if name in self.names else None

    def norm(self, x, w, bias=None, kind="RMS_NORM"):
        """build_norm: RMS norm (or LayerNorm, NORM), times the weight, plus the bias."""
        cur = g.dup(kind, x, (x,))
        cur = g.dup("MUL", cur, (cur, w)) if w is not None else cur
        return g.dup("ADD", cur, (cur, bias)) if bias is not None else cur

    def lin(self, w, x, b=None):
        cur = g.mul_mat(w, x)
        return g.dup("ADD", cur, (cur, b)) if b is not None else cur

    def scale(self, x, s):
        return g.dup("SCALE", x, (x,)) if s else x

    def build(self) -> Graph:
        hp, T, gf = self.hp, self.T, self.gf
        n_embd = hp.n_embd
        tokens = g.new_input((T,), g.I32, "inp_tokens")
        embd_in = g.new_input((n_embd, T), g.F32, "inp_embd")
        tok_embd = g.weight((n_embd, hp.n_vocab), "token_embd.weight")
        inpL = g.get_rows(tok_embd, tokens)
        gf.expand(inpL)                     # ggml_build_forward_select: both paths join the graph
        gf.expand(embd_in)
        if self.spec.get("scales"):
            inpL = self.scale(inpL, self.key("embedding_scale"))
        gf.expand(inpL)
        if self.spec["block"] == "rwkv6":                   # the token embeddings' LayerNorm
            inpL = self.norm(inpL, self.w("token_embd_norm.weight", n_embd), self.w("token_embd_norm.bias", n_embd),
                             "NORM")
        if self.spec["block"] == "gemma":                   # ggml_scale(inpL, sqrtf(n_embd))
            inpL = g.dup("SCALE", inpL, (inpL,))
        rope = self.spec.get("rope", True) and not (
            self.spec.get("rope_key") and not self.meta.get(f"{hp.arch}.{self.spec['rope_key']}", True))
        pos = g.new_input((T * self.spec.get("pos_per_embd", 1),), g.I32, "inp_pos")
        if self.spec.get("pos_embd") and (self.spec["pos_embd"] is True or "position_embd.weight" in self.names):
            # learned positions: get_rows, added
            p = g.get_rows(g.weight((n_embd, hp.n_ctx_train), "position_embd.weight"), pos)
            inpL = g.dup("ADD", inpL, (inpL, p))
        if any(hp.recr):
            self.rs = graph_ssm.rs_input(self.n_rs, self.ns)
            self.ssm = graph_ssm.ssm_params(self.meta, hp.arch)
            self.gdn = graph_gdn.params(self.meta, hp.arch)
        if self.spec.get("mla"):
            self.mla = graph_mla.params(self.meta, hp.arch)
        out_ids = g.new_input((self.n_out,), g.I32, "out_ids")
        res_scale = self.key("residual_scale") if self.spec.get("scales") else 0.0
        for il in range(hp.n_layer):
            b = f"blk.{il}."
            inpSA = inpL
            cur = self.norm(inpL, self.w(b + "attn_norm.weight", n_embd), self.w(b + "attn_norm.bias", n_embd),
                            self.block_norm)
            if self.spec["block"] == "falcon-h1":
                attn = graph_attn.attention(self, il, cur, pos if rope else None)
                cur = self.norm(inpL, self.w(b + "attn_norm.weight", n_embd))
                ssm = graph_ssm.mamba2(self, self.ssm, cur, il)
                cur = g.dup("ADD", attn, (attn, ssm))
                inpSA = g.dup("ADD", cur, (cur, inpSA))
                if il == hp.n_layer - 1:
                    cur, inpSA = g.get_rows(cur, out_ids), g.get_rows(inpSA, out_ids)
                ffn_inp = inpSA
                cur = self.ffn(b, self.norm(ffn_inp, self.w(b + self.spec["ffn_norm"], n_embd)))
                inpL = g.dup("ADD", cur, (cur, inpSA))
                continue
            if self.spec["block"] == "minimax":             # residual from the norm, scaled; MoE
                residual = cur
                cur = graph_gdn.lightning(self, cur, il) if hp.recr[il] else graph_attn.attention(self, il, cur, pos)
                if il == hp.n_layer - 1:
                    cur, residual = g.get_rows(cur, out_ids), g.get_rows(residual, out_ids)
                residual = g.dup("SCALE", residual, (residual,))
                ffn_inp = g.dup("ADD", cur, (cur, residual))
                residual = self.norm(ffn_inp, self.w(b + "ffn_norm.weight", n_embd))
                cur = self.ffn(b, residual)
                residual = g.dup("SCALE", residual, (residual,))
                inpL = g.dup("ADD", cur, (cur, residual))
                continue
            if self.spec["block"] == "rwkv6":
                inpL = graph_rwkv.layer(self, il, inpL, out_ids)
                continue
            if self.spec["block"] == "nemotron_h":          # one mixer per layer: Mamba-2, attention or FFN
                if hp.recr[il]:
                    cur = graph_ssm.mamba2(self, self.ssm, cur, il)
                elif hp.attn[il]:
                    cur = graph_attn.attention(self, il, cur, None)
                else:
                    cur = self.ffn(b, cur)
                inpL = g.dup("ADD", cur, (cur, inpSA))
                continue
            if self.spec["block"] == "mamba":               # src/models/mamba.cpp: mixer, residual
                cur = (graph_ssm.mamba2 if hp.arch == "mamba2" else graph_ssm.mamba1)(self, self.ssm, cur, il)
                if il == hp.n_layer - 1:
                    cur, inpL = g.get_rows(cur, out_ids), g.get_rows(inpL, out_ids)
                inpL = g.dup("ADD", cur, (cur, inpL))
                continue
            if self.spec["block"] == "falcon":              # attention and FFN both from the attn norm
                attn_norm = cur
                w2 = self.w(b + "attn_norm_2.weight", n_embd)
                if w2 is not None:
                    cur = self.norm(inpL, w2, self.w(b + "attn_norm_2.bias", n_embd), self.block_norm)
                cur = graph_attn.attention(self, il, cur, pos)
                if il == hp.n_layer - 1:
                    cur, inpL, attn_norm = (g.get_rows(t, out_ids) for t in (cur, inpL, attn_norm))
                ffn_inp = cur
                cur = self.ffn(b, attn_norm)
                cur = g.dup("ADD", cur, (cur, ffn_inp))
                inpL = g.dup("ADD", cur, (cur, inpL))
                continue
            if self.spec["block"] == "phi3":
                residual = inpL
                cur = graph_attn.attention(self, il, cur, pos)
                if il == hp.n_layer - 1:
                    cur, residual = g.get_rows(cur, out_ids), g.get_rows(residual, out_ids)
                residual = g.dup("ADD", cur, (cur, residual))
                cur = self.norm(residual, self.w(b + "ffn_norm.weight", n_embd), self.w(b + "ffn_norm.bias", n_embd))
                cur = self.ffn(b, cur)
                inpL = g.dup("ADD", residual, (residual, cur))
                continue
            if self.spec["block"] == "gemma":
                cur = graph_attn.attention(self, il, cur, pos)
                if il == hp.n_layer - 1:
                    cur, inpL = g.get_rows(cur, out_ids), g.get_rows(inpL, out_ids)
                cur = self.norm(cur, self.w(b + "post_attention_norm.weight", n_embd))
                sa_out = g.dup("ADD", cur, (cur, inpL))
                cur = self.ffn(b, self.norm(sa_out, self.w(b + "ffn_norm.weight", n_embd)))
                cur = self.norm(cur, self.w(b + "post_ffw_norm.weight", n_embd))
                inpL = g.dup("ADD", cur, (cur, sa_out))
                continue
            if self.spec["block"] == "qwen35":
                gf.expand(cur)
                cur = (graph_gdn.gdn(self, cur, il, self.spec["gdn"]) if hp.recr[il] else
                       graph_attn.attention(self, il, cur, pos))
                cur = g.dup("ADD", cur, (cur, inpSA))
                residual = cur
                cur = self.ffn(b, self.norm(cur, self.w(b + "post_attention_norm.weight", n_embd)))
                inpL = g.dup("ADD", cur, (cur, residual))
                continue
            if hp.recr[il] and self.spec.get("mixer") == "shortconv":
                cur = graph_ssm.shortconv(self, cur, il)
            elif hp.recr[il]:
                cur = (graph_ssm.mamba1 if self.spec.get("mamba") == 1 else graph_ssm.mamba2)(self, self.ssm, cur, il)
            elif self.spec.get("mla"):
                cur = graph_mla.mla(self, il, cur, pos)
            else:
                cur = graph_attn.attention(self, il, cur, pos if rope else None)
            if il == hp.n_layer - 1 and self.spec.get("outputs") != "l_out":
                cur, inpSA = g.get_rows(cur, out_ids), g.get_rows(inpSA, out_ids)
            cur = self.scale(cur, res_scale)
            first = self.spec.get("residual_first")          # jamba adds (residual, x): in-place order
            ffn_inp = g.dup("ADD", inpSA, (inpSA, cur)) if first else g.dup("ADD", cur, (cur, inpSA))
            cur = self.ffn(b, self.norm(ffn_inp, self.w(b + self.spec.get("ffn_norm", "ffn_norm.weight"), n_embd),
                                        self.w(b + "ffn_norm.bias", n_embd), self.block_norm))
            cur = self.scale(cur, res_scale)
            inpL = g.dup("ADD", ffn_inp, (ffn_inp, cur)) if first else g.dup("ADD", cur, (cur, ffn_inp))
        if self.spec.get("outputs") == "l_out":            # gpt-oss: t_h_nextn, then the outputs picked
            inpL.set_output()
            inpL = g.get_rows(inpL, out_ids)
        cur = self.norm(inpL, self.w(self.spec.get("output_norm", "output_norm.weight"), n_embd),
                        self.w("output_norm.bias", n_embd), self.block_norm)
        cur.set_output()                                    # result_norm (t_embd, or t_h_nextn)
        if self.spec["block"] in ("qwen35", "nemotron_h"):   # embeddings_nextn_masked = false
            cur = g.get_rows(cur, out_ids)
            cur.set_output()
        out_w = self.w("output.weight", n_embd, hp.n_vocab) or tok_embd
        logits = g.mul_mat(out_w, cur, "result_output")
        out_b = self.w("output.bias", hp.n_vocab)
        if out_b is not None:
            logits = g.dup("ADD", logits, (logits, out_b))
        if self.spec.get("scales"):
            logits = self.scale(logits, self.key("logit_scale"))
        cap = self.spec.get("logit_softcap")
        if cap is True or (cap and self.key(cap)):          # f_final_logit_softcapping
            logits = g.unary(g.dup("SCALE", logits, (logits,)), "TANH")
            logits = g.dup("SCALE", logits, (logits,))
        logits.set_output()
        gf.expand(logits)
        return gf

    def ffn(self, b, cur):
        if b + "ffn_gate_inp.weight" in self.names:
            return graph_moe.moe(self, cur, int(b.split(".")[1]))
        n_ff, n_embd = self.hp.n_ff, self.hp.n_embd
        gate_w = self.w(b + "ffn_gate.weight", n_embd, n_ff)
        if gate_w is None and self.spec.get("ungated"):     # up, GELU or squared ReLU (in place), down
            up = self.lin(self.w(b + "ffn_up.weight", n_embd, n_ff), cur, self.w(b + "ffn_up.bias", n_ff))
            up = g.unary(up, "GELU" if self.spec["ungated"] == "GELU" else "RELU")
            if self.spec["ungated"] == "RELU_SQR":
                up = g.dup("SQR", up, (up,))
            act = self.w(b + "ffn.act.scales", n_ff)        # mpt's activation scales: a DIV
            up = g.dup("DIV", up, (up, act)) if act is not None else up
            return self.lin(self.w(b + "ffn_down.weight", n_ff, n_embd), up, self.w(b + "ffn_down.bias", n_embd))
        if gate_w is None:                                  # phi3: gate and up fused, ggml_swiglu
            up = self.lin(self.w(b + "ffn_up.weight", n_embd, 2 * n_ff), cur, self.w(b + "ffn_up.bias", 2 * n_ff))
            cur = g.glu1(up, self.spec.get("act", "SWIGLU"))
            return self.lin(self.w(b + "ffn_down.weight", n_ff, n_embd), cur, self.w(b + "ffn_down.bias", n_embd))
        up = self.lin(self.w(b + "ffn_up.weight", n_embd, n_ff), cur, self.w(b + "ffn_up.bias", n_ff))
        gate = self.lin(gate_w, cur, self.w(b + "ffn_gate.bias", n_ff))
        cur = g.glu(gate, up, self.spec.get("act", "SWIGLU"))   # ggml_swiglu_split / geglu_split
        return self.lin(self.w(b + "ffn_down.weight", n_ff, n_embd), cur, self.w(b + "ffn_down.bias", n_embd))

def build(hp, meta, names, n_kv, n_ubatch: int, n_seq: int, flash_attn: bool, type_k: str = "f16",
          type_v: str = "f16", n_rs: int | None = None, n_outputs: int | None = None, kv_unified: bool = False):
    """The reserve graph (see the module docstring) for a micro-batch of ``n_seq`` sequences
    (``n_rs``: recurrent cells, default ``n_seq``; a unified cache: one attention stream);
    ``described`` must hold.  graph_reserve rounds the tokens up to a multiple of ``n_seq`` but
    keeps the ``n_outputs`` asked for (default ``n_ubatch``): 512 over 3 give 513 and 512 outputs."""
    n_tokens = (n_ubatch + n_seq - 1) // n_seq * n_seq
    return _Builder(hp, meta, frozenset(names), n_kv, n_tokens, n_seq, flash_attn, type_k, type_v,
                    n_rs or n_seq, min(n_tokens, n_outputs or n_ubatch), 1 if kv_unified else n_seq).build()
