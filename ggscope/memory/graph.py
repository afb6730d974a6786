"""The graph llama.cpp reserves its compute buffer for, as shapes, for ``ggscope.memory.galloc``.

Why: the compute buffer is ggml-alloc's plan of one graph - llama_context::graph_reserve
(src/llama-context.cpp) builds the model's graph for a micro-batch of ``n_ubatch`` tokens,
all of them outputs, over the whole cache (``n_kv`` = the cache size), and the scheduler
reserves for it.  Replaying the allocator needs that graph node for node: the same ops,
shapes, views and order (``ggml_build_forward_expand`` calls included).  This module writes
it with the ggml calls llama.cpp makes (llama.cpp as vendored in llama-cpp-python 0.3.36):

* inputs - ``build_inp_embd`` (token ids and the embeddings input, both in the graph
  through ``ggml_build_forward_select``; ``f_embedding_scale``), ``build_inp_pos``,
  ``build_attn_inp_kv`` (the K and V row indices, the KQ mask ``n_kv x n_tokens``, f16
  with flash attention, and with a quantized cache the Hadamard rotation inputs
  ``attn_inp_k_rot``/``attn_inp_v_rot`` of src/llama-kv-cache.cpp), ``build_inp_out_ids``,
  ``build_inp_mem_hybrid`` (src/llama-graph.cpp);
* the standard decoder block (src/models/llama.cpp, qwen2.cpp, qwen3.cpp,
  granite-hybrid.cpp): RMS norm, Q/K/V projections with optional biases (``build_qkv``),
  optional Q/K norms, RoPE, ``build_attn`` (rotations, the K/V stores as SET_ROWS into
  cache views, ``build_attn_mha`` with or without flash attention), the output projection,
  the residual (``f_residual_scale``), ``build_ffn`` (SwiGLU, parallel gate), the last
  layer's ``get_rows`` of the outputs; falcon-h1's block (attention and Mamba-2 side by
  side, src/models/falcon-h1.cpp); Mamba-2 layers are ``ggscope.memory.graph_ssm``;
* the output norm (``result_norm``) and the logits (``result_output``, ``f_logit_scale``),
  the graph's outputs (``llm_graph_result::set_outputs``).

Which architectures are described is the table ``DECODER`` (architecture -> block kind and
switches); everything else keeps ``ggscope.memory.compute``'s plan of peaks.  Weights and
caches are external tensors: only shapes are used, never data.

Contract: ``described(hp, names) -> bool``; ``build(hp, meta, names, n_kv, n_ubatch, n_seq,
flash_attn, type_k, type_v) -> Graph`` (``n_kv``: the cache's cells, or a dict of cells by
cache name, "kv" and "kv (swa)"); ``names`` is the set of tensor names in the file
(optional biases and norms are switched on by presence, as the loader does).
"""
from __future__ import annotations

from ggscope.memory import ggml_ops as g
from ggscope.memory import graph_gdn, graph_moe, graph_ssm
from ggscope.memory.galloc import Graph

__all__ = ["DECODER", "described", "build"]

# architecture -> block: "llama" (attention or, in a hybrid, Mamba-2 per layer, then the
# FFN) or "falcon-h1" (attention and Mamba-2 summed); qk_norm: Q/K RMS norms before RoPE;
# scales: the granite multipliers read from the file; rope: a key that switches RoPE off
DECODER: dict[str, dict] = {
    "llama": {"block": "llama"},
    "qwen2": {"block": "llama"},
    "qwen3": {"block": "llama", "qk_norm": True},
    "qwen3moe": {"block": "llama", "qk_norm": True},
    "granitehybrid": {"block": "llama", "scales": True, "rope_key": "rope.scaling.finetuned"},
    "falcon-h1": {"block": "falcon-h1", "ffn_norm": "ffn_norm"},      # tn(LLM_TENSOR_FFN_NORM, i): no ".weight"
    "qwen3next": {"block": "qwen35", "gdn": "qwen3next", "q_gate": "4d"},
    "phi3": {"block": "phi3", "q_scale": True},
    "starcoder2": {"block": "llama", "norm": "NORM", "gelu_ffn": True},
    "gpt2": {"block": "llama", "norm": "NORM", "gelu_ffn": True, "rope": False, "pos_embd": True},
    "mpt": {"block": "llama", "norm": "NORM", "gelu_ffn": True, "rope": False, "pos_embd": "if present",
            "qk_norm": "2d"},
    "falcon": {"block": "falcon", "norm": "NORM", "gelu_ffn": True},
    "gemma2": {"block": "gemma", "act": "GEGLU", "attn_softcap": True, "logit_softcap": True},
    "gemma3": {"block": "gemma", "act": "GEGLU", "qk_norm": True, "logit_softcap": "final_logit_softcapping"},
    "qwen35": {"block": "qwen35", "gdn": "qwen35", "q_gate": "3d", "pos_per_embd": 4},
    "qwen35moe": {"block": "qwen35", "gdn": "qwen35", "q_gate": "3d", "pos_per_embd": 4},
}
_QUANTIZED = {"q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}


LLAMA_MAX_EXPERTS = 512                    # src/llama-hparams.h


def described(hp, names, meta) -> bool:
    """True when ``build`` describes this model's graph: a table architecture without MLA,
    a sliding window only where the block has one, one head size, its layers' weights under
    the expected names, and sizes llama.cpp could build the graph from (positive, dividing
    as its asserts require; a hostile header falls back to the plan of peaks, never loops
    over a count it claims)."""
    if hp.arch not in DECODER or hp.mla or not _sizes_ok(hp, meta):
        return False
    if not hp.ffn_gated and not DECODER[hp.arch].get("gelu_ffn"):
        return False
    if hp.swa_any and DECODER[hp.arch]["block"] != "gemma":
        return False
    if hp.n_expert_used and not all(f"blk.{il}.ffn_gate_exps.weight" in names for il in range(hp.n_layer)):
        return False
    if hp.head_k != hp.head_v or hp.kv_layers != hp.n_layer:
        return False
    attn_layers = [il for il in range(hp.n_layer) if hp.attn[il]]
    if len({hp.n_head[il] for il in attn_layers}) > 1 or len({hp.n_head_kv[il] for il in attn_layers}) > 1:
        return False
    mixer = "attn_qkv.weight" if "gdn" in DECODER[hp.arch] else "ssm_in.weight"
    need = [f"blk.{il}.{mixer}" for il in range(hp.n_layer) if hp.recr[il]]
    return (all(n in names for n in need) and "output_norm.weight" in names
            and all(f"blk.{il}.attn_q.weight" in names or f"blk.{il}.attn_qkv.weight" in names for il in attn_layers))


def _sizes_ok(hp, meta) -> bool:
    try:
        if min(hp.n_embd, hp.n_vocab, hp.n_ff or hp.n_ff_exp) <= 0:
            return False
        n_ff = meta.get(f"{hp.arch}.feed_forward_length")     # one FFN width for every layer
        if n_ff is not None and not isinstance(n_ff, (int, float)) and len({int(x) for x in n_ff}) > 1:
            return False
        for il in range(hp.n_layer):
            if hp.attn[il] and not (hp.head_k > 0 and hp.n_head_kv[il] > 0 and hp.n_head[il] > 0
                                    and hp.n_head[il] % hp.n_head_kv[il] == 0):
                return False
        if hp.n_expert_used:
            n_exp = int(meta.get(f"{hp.arch}.expert_count", 0))
            if not (0 < hp.n_expert_used <= n_exp <= LLAMA_MAX_EXPERTS and hp.n_ff_exp > 0):
                return False
        if any(hp.recr):
            if "gdn" in DECODER[hp.arch]:
                p = graph_gdn.params(meta, hp.arch)
                ok = (p["d_conv"] >= 1 and p["n_k"] > 0 and p["n_v"] > 0 and p["d_state"] > 0 and p["d_inner"] > 0
                      and p["d_inner"] % p["n_v"] == 0 and p["n_v"] % p["n_k"] == 0)
            else:
                p = graph_ssm.ssm_params(meta, hp.arch)
                ok = (p["d_conv"] >= 1 and p["n_head"] > 0 and p["n_group"] > 0 and p["d_state"] > 0
                      and p["d_inner"] > 0 and p["d_inner"] % p["n_head"] == 0 and p["d_inner"] % p["n_group"] == 0)
            if not ok:
                return False
    except (TypeError, ValueError, OverflowError):
        return False
    return True


class _Builder:
    def __init__(self, hp, meta, names, n_kv, n_tokens, n_seq, flash_attn, type_k, type_v):
        self.hp, self.meta, self.names, self.fa = hp, meta, names, flash_attn
        self.n_kv = n_kv if isinstance(n_kv, dict) else {"kv": n_kv}     # cache name -> cells
        self.T, self.ns, self.n_rs = n_tokens, n_seq, n_seq
        self.iswa = "kv (swa)" in self.n_kv
        self.type_k, self.type_v = type_k, type_v
        self.spec = DECODER[hp.arch]
        self.block_norm = self.spec.get("norm", "RMS_NORM")
        self.gf = Graph()
        self.rs = None
        self._attn_inputs = {}

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

    def attn_inputs(self, cache: str):
        """build_attn_inp_kv_impl's inputs for one cache (created once; they join the graph
        where first used): K/V row indices, the mask over the cache's cells, the rotations."""
        if cache not in self._attn_inputs:
            T, d = self.T, self.hp.head_k
            n_gqa_max = max(self.hp.n_embd_v_gqa(il) for il in range(self.hp.n_layer))
            k_idxs = g.new_input((T,), g.I64, "attn_inp_k_idxs")
            v_idxs = g.new_input((T if self.fa else T * n_gqa_max,), g.I64, "attn_inp_v_idxs")
            mask = g.new_input((self.n_kv[cache], T // self.ns, 1, self.ns), g.F16 if self.fa else g.F32,
                               "attn_inp_kq_mask")
            k_rot = v_rot = None
            if self.type_k in _QUANTIZED and d % 64 == 0:
                nrot = 64
                while d % (nrot * 2) == 0:
                    nrot *= 2
                k_rot = g.new_input((nrot, nrot), g.F32, "attn_inp_k_rot")
            if self.type_v in _QUANTIZED and d % 64 == 0:
                v_rot = g.new_input((64, 64), g.F32, "attn_inp_v_rot")
            self._attn_inputs[cache] = (k_idxs, v_idxs, mask, k_rot, v_rot)
        return self._attn_inputs[cache]

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
        out_ids = g.new_input((T,), g.I32, "out_ids")
        res_scale = self.key("residual_scale") if self.spec.get("scales") else 0.0
        for il in range(hp.n_layer):
            b = f"blk.{il}."
            inpSA = inpL
            cur = self.norm(inpL, self.w(b + "attn_norm.weight", n_embd), self.w(b + "attn_norm.bias", n_embd),
                            self.block_norm)
            if self.spec["block"] == "falcon-h1":
                attn = self.attention(il, cur, pos if rope else None)
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
            if self.spec["block"] == "falcon":              # attention and FFN both from the attn norm
                attn_norm = cur
                w2 = self.w(b + "attn_norm_2.weight", n_embd)
                if w2 is not None:
                    cur = self.norm(inpL, w2, self.w(b + "attn_norm_2.bias", n_embd), self.block_norm)
                cur = self.attention(il, cur, pos)
                if il == hp.n_layer - 1:
                    cur, inpL, attn_norm = (g.get_rows(t, out_ids) for t in (cur, inpL, attn_norm))
                ffn_inp = cur
                cur = self.ffn(b, attn_norm)
                cur = g.dup("ADD", cur, (cur, ffn_inp))
                inpL = g.dup("ADD", cur, (cur, inpL))
                continue
            if self.spec["block"] == "phi3":
                residual = inpL
                cur = self.attention(il, cur, pos)
                if il == hp.n_layer - 1:
                    cur, residual = g.get_rows(cur, out_ids), g.get_rows(residual, out_ids)
                residual = g.dup("ADD", cur, (cur, residual))
                cur = self.norm(residual, self.w(b + "ffn_norm.weight", n_embd), self.w(b + "ffn_norm.bias", n_embd))
                cur = self.ffn(b, cur)
                inpL = g.dup("ADD", residual, (residual, cur))
                continue
            if self.spec["block"] == "gemma":
                cur = self.attention(il, cur, pos)
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
                cur = graph_gdn.gdn(self, cur, il, self.spec["gdn"]) if hp.recr[il] else self.attention(il, cur, pos)
                cur = g.dup("ADD", cur, (cur, inpSA))
                residual = cur
                cur = self.ffn(b, self.norm(cur, self.w(b + "post_attention_norm.weight", n_embd)))
                inpL = g.dup("ADD", cur, (cur, residual))
                continue
            if hp.recr[il]:
                cur = graph_ssm.mamba2(self, self.ssm, cur, il)
            else:
                cur = self.attention(il, cur, pos if rope else None)
            if il == hp.n_layer - 1:
                cur, inpSA = g.get_rows(cur, out_ids), g.get_rows(inpSA, out_ids)
            cur = self.scale(cur, res_scale)
            ffn_inp = g.dup("ADD", cur, (cur, inpSA))
            cur = self.ffn(b, self.norm(ffn_inp, self.w(b + "ffn_norm.weight", n_embd),
                                        self.w(b + "ffn_norm.bias", n_embd), self.block_norm))
            cur = self.scale(cur, res_scale)
            inpL = g.dup("ADD", cur, (cur, ffn_inp))
        cur = self.norm(inpL, self.w("output_norm.weight", n_embd), self.w("output_norm.bias", n_embd),
                        self.block_norm)
        cur.output = True                                   # result_norm (t_embd, or t_h_nextn)
        if self.spec["block"] == "qwen35":                 # embeddings_nextn_masked = false
            cur = g.get_rows(cur, out_ids)
            cur.output = True
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
        logits.output = True
        gf.expand(logits)
        return gf

    def ffn(self, b, cur):
        if b + "ffn_gate_inp.weight" in self.names:
            return graph_moe.moe(self, cur, int(b.split(".")[1]))
        n_ff, n_embd = self.hp.n_ff, self.hp.n_embd
        gate_w = self.w(b + "ffn_gate.weight", n_embd, n_ff)
        if gate_w is None and self.spec.get("gelu_ffn"):     # up, GELU (in place), down
            up = g.unary(self.lin(self.w(b + "ffn_up.weight", n_embd, n_ff), cur, self.w(b + "ffn_up.bias", n_ff)),
                         "GELU")
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

    def attention(self, il, cur, pos):
        """build_qkv, optional Q/K norms, RoPE, build_attn, the output projection."""
        hp, T, b = self.hp, self.T, f"blk.{il}."
        n_embd, n_head, n_head_kv, d = hp.n_embd, hp.n_head[il], hp.n_head_kv[il], hp.head_k
        n_gqa = d * n_head_kv
        if self.spec.get("q_gate"):
            return self.gated_attention(il, cur, pos)
        clamp = self.key("attention.clamp_kqv") > 0         # hparams.f_clamp_kqv
        wqkv = self.w(b + "attn_qkv.weight", n_embd, d * n_head + 2 * n_gqa)
        if wqkv is not None:                                # build_qkv's fused path: views of one product
            qkv = self.lin(wqkv, cur, self.w(b + "attn_qkv.bias", d * n_head + 2 * n_gqa))
            qkv = g.dup("CLAMP", qkv, (qkv,)) if clamp else qkv
            nb = (4, 4 * d, qkv.nb[1])
            q = g.view(qkv, (d, n_head, T), nb)
            k = g.view(qkv, (d, n_head_kv, T), nb, offs=4 * d * n_head)
            v = g.view(qkv, (d, n_head_kv, T), nb, offs=4 * (d * n_head + n_gqa))
        else:
            q = self.lin(self.w(b + "attn_q.weight", n_embd, d * n_head), cur, self.w(b + "attn_q.bias", d * n_head))
            q = g.dup("CLAMP", q, (q,)) if clamp else q
            k = self.lin(self.w(b + "attn_k.weight", n_embd, n_gqa), cur, self.w(b + "attn_k.bias", n_gqa))
            k = g.dup("CLAMP", k, (k,)) if clamp else k
            v = self.lin(self.w(b + "attn_v.weight", n_embd, n_gqa), cur, self.w(b + "attn_v.bias", n_gqa))
            v = g.dup("CLAMP", v, (v,)) if clamp else v
            q, k, v = g.reshape(q, d, n_head, T), g.reshape(k, d, n_head_kv, T), g.reshape(v, d, n_head_kv, T)
        qk_norm = self.spec.get("qk_norm")
        if qk_norm == "2d":                                 # mpt: LayerNorm over whole rows, if present
            qk_norm = None
            if b + "attn_q_norm.weight" in self.names:
                q = g.reshape(self.norm(g.reshape(q, d * n_head, T), self.w(b + "attn_q_norm.weight", d * n_head),
                                        self.w(b + "attn_q_norm.bias", d * n_head), "NORM"), d, n_head, T)
                k = g.reshape(self.norm(g.reshape(k, n_gqa, T), self.w(b + "attn_k_norm.weight", n_gqa),
                                        self.w(b + "attn_k_norm.bias", n_gqa), "NORM"), d, n_head_kv, T)
        if qk_norm:
            q = self.norm(q, self.w(b + "attn_q_norm.weight", d))
        if pos is not None:
            q = g.dup("ROPE", q, (q, pos))
        if qk_norm:
            k = self.norm(k, self.w(b + "attn_k_norm.weight", d))
        if pos is not None:
            k = g.dup("ROPE", k, (k, pos))
        if self.spec.get("q_scale") or self.spec["block"] == "gemma":   # ggml_scale(Qcur, ...)
            q = g.dup("SCALE", q, (q,))
        cur = self.kv_attn(il, q, k, v)
        return self.lin(self.w(b + "attn_output.weight", d * n_head, n_embd), cur,
                        self.w(b + "attn_output.bias", n_embd))

    def gated_attention(self, il, cur, pos):
        """Qwen3-Next / Qwen3.5 attention (build_layer_attn): Q and a sigmoid gate in one
        projection, Q/K norms, RoPE, attention without an output weight, gate, projection."""
        hp, T, b = self.hp, self.T, f"blk.{il}."
        n_embd, n_head, n_head_kv, d = hp.n_embd, hp.n_head[il], hp.n_head_kv[il], hp.head_k
        q_full = self.lin(self.w(b + "attn_q.weight", n_embd, 2 * d * n_head), cur,
                          self.w(b + "attn_q.bias", 2 * d * n_head))
        k = self.lin(self.w(b + "attn_k.weight", n_embd, d * n_head_kv), cur, self.w(b + "attn_k.bias", d * n_head_kv))
        v = self.lin(self.w(b + "attn_v.weight", n_embd, d * n_head_kv), cur, self.w(b + "attn_v.bias", d * n_head_kv))
        if self.spec["q_gate"] == "4d":
            q_full = g.reshape(q_full, 2 * d, n_head, T, 1)
        nb = (4, 2 * d * 4, 2 * d * n_head * 4)
        q = g.view(q_full, (d, n_head, T), nb)
        gate = g.view(q_full, (d, n_head, T), nb, offs=d * 4)
        k, v = g.reshape(k, d, n_head_kv, T), g.reshape(v, d, n_head_kv, T)
        q = self.norm(q, self.w(b + "attn_q_norm.weight", d))
        k = self.norm(k, self.w(b + "attn_k_norm.weight", d))
        q, k = g.dup("ROPE", q, (q, pos)), g.dup("ROPE", k, (k, pos))
        cur = self.kv_attn(il, q, k, v)
        gate = g.cont(gate, d * n_head, T)
        gate = g.unary(gate, "SIGMOID")
        return g.mul_mat(self.w(b + "attn_output.weight", d * n_head, n_embd), g.dup("MUL", cur, (cur, gate)))

    def kv_attn(self, il, q, k, v):
        """llm_graph_context::build_attn (the KV-cache variant) and build_attn_mha."""
        gf, hp, T, ns = self.gf, self.hp, self.T, self.ns
        cache = "kv (swa)" if self.iswa and hp.is_swa[il] else "kv"
        n_kv = self.n_kv[cache]
        k_idxs, v_idxs, mask, k_rot, v_rot = self.attn_inputs(cache)
        d, n_head_kv = hp.head_k, hp.n_head_kv[il]
        n_gqa = d * n_head_kv
        n_gqa_max = max(hp.n_embd_v_gqa(i) for i in range(hp.n_layer))
        if k_rot is not None:
            q, k = g.hadamard(q, k_rot), g.hadamard(k, k_rot)
        if v_rot is not None:
            v = g.hadamard(v, v_rot)
        for t in ((q, k, v) if self.iswa else (q, v, k)):    # the iSWA variant expands K before V
            gf.expand(t)
        ck = g.weight((n_gqa, n_kv, ns), f"cache_k_l{il}", *g.cache_type(self.type_k))
        cv = g.weight((n_gqa if self.fa else n_gqa_max, n_kv, ns), f"cache_v_l{il}", *g.cache_type(self.type_v))
        # cpy_k / cpy_v: SET_ROWS into the caches (external: nothing placed here)
        kv2 = g.view(k, (n_gqa, T), (k.esize, k.nb[2]))
        gf.expand(g.set_rows(g.reshape(ck, n_gqa, n_kv * ns) if ns > 1 else ck, kv2, k_idxs))
        if self.fa:
            vv = g.view(v, (n_gqa, T), (v.esize, v.nb[2]))
            dst = g.reshape(cv, n_gqa, n_kv * ns) if ns > 1 else cv
        else:
            vv = g.reshape(v, n_gqa, T) if v.nb[2] == v.esize * n_gqa else g.cont(v, n_gqa, T)
            if n_gqa < n_gqa_max:
                vv = g.op("PAD", (n_gqa_max, T), (vv,))
            vv = g.reshape(vv, 1, g.nelements(vv))
            dst = g.reshape(cv, 1, g.nelements(cv))
        gf.expand(g.set_rows(dst, vv, v_idxs))
        kk = g.view(ck, (d, n_head_kv, n_kv, ns), (ck.nb[0], ck.nb[1] * d // n_gqa, ck.nb[1], ck.nb[2]))
        if self.fa:                                         # get_k / get_v (v transposed without FA)
            vk = g.view(cv, (d, n_head_kv, n_kv, ns), (cv.nb[0], cv.nb[1] * d // n_gqa, cv.nb[1], cv.nb[2]))
        else:
            vk = g.view(cv, (n_kv, n_head_kv, d, ns), (cv.nb[0], cv.esize * n_kv * d, cv.esize * n_kv, cv.nb[2]))
        qv = g.view(q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns), (q.nb[0], q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
        qp, kp, vp = g.permute(qv, (0, 2, 1, 3)), g.permute(kk, (0, 2, 1, 3)), g.permute(vk, (0, 2, 1, 3))
        if self.fa:
            if self.type_k == "f32":
                kp = g.cast(kp, g.F16)
            if self.type_v == "f32":
                vp = g.cast(vp, g.F16)
            cur = g.op("FLASH_ATTN_EXT", (vp.ne[0], qp.ne[2], qp.ne[1], qp.ne[3]), (qp, kp, vp, mask))
            cur = g.reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        else:
            kq = g.mul_mat(kp, qp, "kq")
            if self.spec.get("attn_softcap"):               # hparams.attn_soft_cap
                kq = g.unary(g.dup("SCALE", kq, (kq,)), "TANH")
                kq = g.dup("SCALE", kq, (kq,))
            kq = g.dup("SOFT_MAX", kq, (kq, mask))
            kqv = g.mul_mat(vp, kq, "kqv")
            cur = g.permute(kqv, (0, 2, 1, 3))
            cur = g.cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        gf.expand(cur)
        if v_rot is not None:
            cur = g.hadamard(cur, v_rot)
        return cur


def build(hp, meta, names, n_kv: int, n_ubatch: int, n_seq: int, flash_attn: bool, type_k: str = "f16",
          type_v: str = "f16") -> Graph:
    """The reserve graph (see the module docstring); ``described(hp, names)`` must hold."""
    n_tokens = (n_ubatch + n_seq - 1) // n_seq * n_seq
    return _Builder(hp, meta, frozenset(names), n_kv, n_tokens, n_seq, flash_attn, type_k, type_v).build()
