"""The graph llama.cpp reserves its compute buffer for, as shapes, for ``ggscope.memory.galloc``.

Why: the compute buffer is ggml-alloc's plan of one graph - llama_context::graph_reserve
(src/llama-context.cpp) builds the model's graph for a micro-batch of ``n_ubatch`` tokens,
all of them outputs, over the whole cache (``n_kv`` = the cache size), and the scheduler
reserves for it.  Replaying the allocator needs that graph node for node: the same ops,
shapes, views and order.  This module builds it with the ggml calls llama.cpp makes
(llama.cpp as vendored in llama-cpp-python 0.3.36):

* inputs - ``build_inp_embd`` (token ids and the embeddings input, chosen between by
  ``ggml_build_forward_select``, both in the graph), ``build_inp_pos``,
  ``build_attn_inp_kv`` (the K and V row indices, the KQ mask ``n_kv x n_tokens``, f16
  with flash attention, and with a quantized cache the Hadamard rotation inputs
  ``attn_inp_k_rot``/``attn_inp_v_rot`` of src/llama-kv-cache.cpp), ``build_inp_out_ids``
  (src/llama-graph.cpp);
* the decoder block of src/models/llama.cpp, qwen2.cpp and qwen3.cpp: RMS norm, separate
  Q/K/V projections with their optional biases (``build_qkv``), optional Q/K norms, RoPE,
  ``build_attn`` (rotations, the K/V stores ``cpy_k``/``cpy_v`` as SET_ROWS into cache
  views, ``build_attn_mha`` with or without flash attention), the output projection, the
  residual, ``build_ffn`` (SwiGLU with a parallel gate), the last layer's ``get_rows`` of
  the outputs, the output norm and the logits.  ``result_norm`` and ``result_output`` are
  the graph's outputs (``llm_graph_result::set_outputs``).

Which architectures are described is the table ``DECODER`` (architecture -> its switches);
everything else keeps ``ggscope.memory.compute``'s plan of peaks.  Weights and caches are
external tensors: only their shapes are used, never their data.

Contract: ``described(hp) -> bool``; ``build(hp, tensors, n_kv, n_ubatch, n_seq,
flash_attn, type_k, type_v) -> Graph`` where ``tensors`` is the set of tensor names in
the file (optional biases and norms are switched on by presence, as the loader does).
"""
from __future__ import annotations

from ggscope.memory.galloc import Graph, Tensor

__all__ = ["DECODER", "described", "build"]

# architecture -> (Q/K norm before RoPE,) : the llama-style decoders whose graph is the
# one below (src/models/llama.cpp, qwen2.cpp, qwen3.cpp)
DECODER: dict[str, dict] = {
    "llama": {"qk_norm": False},
    "qwen2": {"qk_norm": False},
    "qwen3": {"qk_norm": True},
}
F32, F16, I32, I64 = 4, 2, 4, 8
_QUANTIZED = {"q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}


def described(hp) -> bool:
    """True when ``build`` describes this model's graph (a llama-style decoder, no MoE,
    no sliding window, one K/V head size)."""
    return (hp.arch in DECODER and not hp.n_expert_used and not hp.swa_any and hp.ffn_gated and not hp.mla
            and hp.head_k == hp.head_v and len(set(hp.n_head)) == 1 and len(set(hp.n_head_kv)) == 1
            and hp.kv_layers == hp.n_layer)


# --- the ggml calls, as shapes -------------------------------------------------------------

def _new(ne, esize=F32, name="", input_=False) -> Tensor:
    t = Tensor("NONE", ne, esize, name=name)
    t.input = input_
    return t


def _op(op, ne, src, esize=F32, name="") -> Tensor:
    return Tensor(op, ne, esize, src, name=name)


def _dup(op, a, src, name="") -> Tensor:             # ggml_dup_tensor(a): a's shape, contiguous
    return Tensor(op, a.ne, a.esize, src, name=name)


def _view(op, a, ne, nb=None, offs=0, name="") -> Tensor:
    return Tensor(op, ne, a.esize, (a,), nb=nb, view_of=a, offs=offs, name=name)


def _reshape(a, *ne) -> Tensor:
    return _view("RESHAPE", a, ne)


def _permute(a, axes) -> Tensor:                    # ggml_permute: dim i goes to axes[i]
    ne, nb = [0] * 4, [0] * 4
    for i, ax in enumerate(axes):
        ne[ax], nb[ax] = a.ne[i], a.nb[i]
    return _view("PERMUTE", a, ne, nb)


def _mul_mat(a, b, name="") -> Tensor:
    return _op("MUL_MAT", (a.ne[1], b.ne[1], b.ne[2], b.ne[3]), (a, b), name=name)


def _cont(a, *ne) -> Tensor:
    return _op("CONT", ne or a.ne, (a,), a.esize)


def _hadamard(cur, rot) -> Tensor:
    """llama_mul_mat_hadamard (src/llama-impl.h): rows of ``rot``'s width times the rotation."""
    n = rot.ne[0]
    count = cur.ne[0] * cur.ne[1] * cur.ne[2] * cur.ne[3]
    res = _reshape(cur, n, count // n) if cur.contiguous() else _cont(cur, n, count // n)
    res = _mul_mat(rot, res)
    return _reshape(res, *cur.ne)


class _Builder:
    def __init__(self, hp, names, n_kv, n_tokens, n_seq, flash_attn, type_k, type_v):
        self.hp, self.names, self.fa = hp, names, flash_attn
        self.n_kv, self.T, self.ns = n_kv, n_tokens, n_seq
        self.gf = Graph()
        self.type_k, self.type_v = type_k, type_v

    def w(self, name, *ne):
        return Tensor("NONE", ne, F32, external=True, name=name) if name in self.names else None

    def norm(self, x, w):                   # build_norm(LLM_NORM_RMS): rms_norm, times the weight
        cur = _dup("RMS_NORM", x, (x,))
        return _dup("MUL", cur, (cur, w)) if w is not None else cur

    def lin(self, w, x, b=None):
        cur = _mul_mat(w, x)
        return _dup("ADD", cur, (cur, b)) if b is not None else cur

    def build(self) -> Graph:
        hp, T, gf = self.hp, self.T, self.gf
        n_embd, n_head, n_head_kv, d = hp.n_embd, hp.n_head[0], hp.n_head_kv[0], hp.head_k
        n_gqa = d * n_head_kv
        # build_inp_embd: both inputs of the select join the graph
        tokens = _new((T,), I32, "inp_tokens", True)
        embd_in = _new((n_embd, T), F32, "inp_embd", True)
        tok_embd = Tensor("NONE", (n_embd, hp.n_vocab), F32, external=True, name="token_embd.weight")
        inpL = _op("GET_ROWS", (n_embd, T), (tok_embd, tokens), name="embd")
        gf.expand(inpL)
        gf.expand(embd_in)
        pos = _new((T,), I32, "inp_pos", True)
        k_idxs = _new((T,), I64, "attn_inp_k_idxs", True)
        v_idxs = _new((T if self.fa else T * n_gqa,), I64, "attn_inp_v_idxs", True)
        mask = _new((self.n_kv, T // self.ns, 1, self.ns), F16 if self.fa else F32, "attn_inp_kq_mask", True)
        k_rot = v_rot = None
        if self.type_k in _QUANTIZED and d % 64 == 0:
            nrot = 64
            while d % (nrot * 2) == 0:
                nrot *= 2
            k_rot = _new((nrot, nrot), F32, "attn_inp_k_rot", True)
        if self.type_v in _QUANTIZED and d % 64 == 0:
            v_rot = _new((64, 64), F32, "attn_inp_v_rot", True)
        out_ids = _new((T,), I32, "out_ids", True)
        qk_norm = DECODER[hp.arch]["qk_norm"]
        for il in range(hp.n_layer):
            b = f"blk.{il}."
            inpSA = inpL
            cur = self.norm(inpL, self.w(b + "attn_norm.weight", n_embd))
            q = self.lin(self.w(b + "attn_q.weight", n_embd, d * n_head), cur, self.w(b + "attn_q.bias", d * n_head))
            k = self.lin(self.w(b + "attn_k.weight", n_embd, n_gqa), cur, self.w(b + "attn_k.bias", n_gqa))
            v = self.lin(self.w(b + "attn_v.weight", n_embd, n_gqa), cur, self.w(b + "attn_v.bias", n_gqa))
            q, k, v = _reshape(q, d, n_head, T), _reshape(k, d, n_head_kv, T), _reshape(v, d, n_head_kv, T)
            if qk_norm:
                q = self.norm(q, self.w(b + "attn_q_norm.weight", d))
            q = _dup("ROPE", q, (q, pos))
            if qk_norm:
                k = self.norm(k, self.w(b + "attn_k_norm.weight", d))
            k = _dup("ROPE", k, (k, pos))
            cur = self.attn(il, q, k, v, k_idxs, v_idxs, mask, k_rot, v_rot)
            cur = self.lin(self.w(b + "attn_output.weight", d * n_head, n_embd), cur,
                           self.w(b + "attn_output.bias", n_embd))
            if il == hp.n_layer - 1:
                cur = _op("GET_ROWS", (cur.ne[0], T), (cur, out_ids))
                inpSA = _op("GET_ROWS", (inpSA.ne[0], T), (inpSA, out_ids))
            ffn_inp = _dup("ADD", cur, (cur, inpSA))
            cur = self.norm(ffn_inp, self.w(b + "ffn_norm.weight", n_embd))
            cur = self.ffn(b, cur)
            inpL = _dup("ADD", cur, (cur, ffn_inp))
        cur = self.norm(inpL, self.w("output_norm.weight", n_embd))
        cur.output = True                                   # result_norm (t_embd)
        out_w = self.w("output.weight", n_embd, hp.n_vocab) or tok_embd
        logits = _mul_mat(out_w, cur, "result_output")
        logits.output = True
        gf.expand(logits)
        return gf

    def ffn(self, b, cur):
        n_ff = self.hp.n_ff
        up = self.lin(self.w(b + "ffn_up.weight", self.hp.n_embd, n_ff), cur, self.w(b + "ffn_up.bias", n_ff))
        gate = self.lin(self.w(b + "ffn_gate.weight", self.hp.n_embd, n_ff), cur, self.w(b + "ffn_gate.bias", n_ff))
        cur = _op("GLU", gate.ne, (gate, up))               # ggml_swiglu_split(gate, up)
        return self.lin(self.w(b + "ffn_down.weight", n_ff, self.hp.n_embd), cur,
                        self.w(b + "ffn_down.bias", self.hp.n_embd))

    def attn(self, il, q, k, v, k_idxs, v_idxs, mask, k_rot, v_rot):
        """llm_graph_context::build_attn (the KV-cache variant) and build_attn_mha."""
        gf, hp, T, ns, n_kv = self.gf, self.hp, self.T, self.ns, self.n_kv
        d, n_head_kv = hp.head_k, hp.n_head_kv[0]
        n_gqa = d * n_head_kv
        if k_rot is not None:
            q, k = _hadamard(q, k_rot), _hadamard(k, k_rot)
        if v_rot is not None:
            v = _hadamard(v, v_rot)
        gf.expand(q)
        gf.expand(v)
        gf.expand(k)
        ck = Tensor("NONE", (n_gqa, n_kv, ns), F16, external=True, name=f"cache_k_l{il}")
        cv = Tensor("NONE", (n_gqa if self.fa else n_kv, n_kv if self.fa else n_gqa, ns), F16, external=True,
                    name=f"cache_v_l{il}")
        # cpy_k / cpy_v: SET_ROWS into views of the caches (external: nothing placed here)
        kv2 = _view("VIEW", k, (n_gqa, T), (k.esize, k.nb[2], k.nb[2] * T, k.nb[2] * T))
        dst = _reshape(ck, n_gqa, n_kv * ns) if ns > 1 else ck
        gf.expand(Tensor("SET_ROWS", dst.ne, F16, (kv2, k_idxs, dst), view_of=dst))
        if self.fa:
            vv = _view("VIEW", v, (n_gqa, T), (v.esize, v.nb[2], v.nb[2] * T, v.nb[2] * T))
            dst = _reshape(cv, n_gqa, n_kv * ns) if ns > 1 else cv
        else:
            vv = _reshape(v, n_gqa, T) if v.nb[2] == v.esize * n_gqa else _cont(v, n_gqa, T)
            vv = _reshape(vv, 1, n_gqa * T)
            dst = _reshape(cv, 1, n_gqa * n_kv * ns)
        gf.expand(Tensor("SET_ROWS", dst.ne, F16, (vv, v_idxs, dst), view_of=dst))
        # get_k / get_v: views of the caches
        kk = _view("VIEW", ck, (d, n_head_kv, n_kv, ns))
        vk = _view("VIEW", cv, (d, n_head_kv, n_kv, ns) if self.fa else (n_kv, n_head_kv, d, ns))
        # build_attn_mha
        qv = _view("VIEW", q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns),
                   (q.nb[0], q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
        qp, kp, vp = _permute(qv, (0, 2, 1, 3)), _permute(kk, (0, 2, 1, 3)), _permute(vk, (0, 2, 1, 3))
        if self.fa:
            cur = _op("FLASH_ATTN_EXT", (vp.ne[0], qp.ne[2], qp.ne[1], qp.ne[3]), (qp, kp, vp, mask))
            cur = _reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        else:
            kq = _mul_mat(kp, qp, "kq")
            kq = _dup("SOFT_MAX", kq, (kq, mask))
            kqv = _mul_mat(vp, kq, "kqv")
            cur = _permute(kqv, (0, 2, 1, 3))
            cur = _cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        gf.expand(cur)
        if v_rot is not None:
            cur = _hadamard(cur, v_rot)
        return cur


def build(hp, names, n_kv: int, n_ubatch: int, n_seq: int, flash_attn: bool, type_k: str = "f16",
          type_v: str = "f16") -> Graph:
    """The reserve graph (see the module docstring); ``described(hp)`` must hold."""
    n_tokens = (n_ubatch + n_seq - 1) // n_seq * n_seq
    return _Builder(hp, frozenset(names), n_kv, n_tokens, n_seq, flash_attn, type_k, type_v).build()
