"""The compute buffer: the worst-case graph's live tensors as ggml's allocator plans them.

Why: after the caches, llama.cpp reserves a compute buffer (``sched_reserve: CPU compute
buffer size``, src/llama-context.cpp ``graph_reserve``) sized by ggml-alloc
(ggml/src/ggml-alloc.c ``ggml_gallocr_reserve``) for the biggest graph it will run: a
micro-batch of ``n_ubatch`` tokens, every token an output, over the whole cache
(``n_kv`` = the cache size).  The allocator walks the graph in order, gives each node a
block from a free list, reuses a parent's block in place where the op allows (SOFT_MAX,
the unary and element-wise ops) and frees a tensor after its last consumer; the buffer is
the high-water mark.  That mark is set by one of two moments, whichever is larger:

* attention in a layer: the graph inputs that live through all layers - one KQ mask per
  cache, ``n_kv x n_ubatch`` f32 (f16 with flash attention) - plus, without flash
  attention, the score matrix ``KQ = n_kv x n_ubatch x n_head`` f32 (the soft-max runs in
  place on it);
* the output: the logits ``n_vocab x n_ubatch`` f32 beside the last hidden state and its
  norm (``n_embd x n_ubatch`` f32 each), after the masks are freed;

plus the activations live beside either peak: the residual stream, Q/K/V and attention
output, and the feed-forward intermediates (``n_ff`` or ``n_ff_exp x n_expert_used`` per
token, two of them for gated units).  Recurrent models have no mask and no KQ; their
scan state copies are ``n_embd_s`` per sequence.  Checked against llama.cpp's printed
compute buffer (``tests/memory``): within 10 % on the recorded architectures and contexts;
it is a plan of the peak, not a replay of the allocator, so fragmentation is not modelled.

Contract: ``compute_bytes(hp, caches, n_ubatch, n_seq, flash_attn) -> int``.
"""
from __future__ import annotations

__all__ = ["compute_bytes"]


def compute_bytes(hp, caches, n_ubatch: int, n_seq: int, flash_attn: bool) -> int:
    n_ub = n_ubatch
    masks = sum(c.cells * n_ub * (2 if flash_attn else 4) for c in caches if c.layers)
    n_head = max(hp.n_head, default=0)
    kq = 0 if flash_attn else max((c.cells * n_ub * n_head * 4 for c in caches if c.layers), default=0)
    out = 4 * n_ub * (hp.n_vocab + 2 * hp.n_embd)
    head_q = max(hp.head_k, hp.head_k_swa) * n_head
    ffn = max(hp.n_ff, 0) * max(1, hp.n_expert_used)
    act = 4 * n_ub * (2 * hp.n_embd + 2 * head_q + ffn)
    state = 4 * hp.n_embd_s * n_seq + 4 * hp.n_embd_r * n_seq
    return max(masks + kq, out) + act + state
