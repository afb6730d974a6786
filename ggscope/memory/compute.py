"""The compute buffer: the worst-case graph's live tensors as ggml's allocator plans them.

Why: after the caches, llama.cpp reserves a compute buffer (``sched_reserve: CPU compute
buffer size``, src/llama-context.cpp ``graph_reserve``) sized by ggml-alloc
(ggml/src/ggml-alloc.c ``ggml_gallocr_reserve``) for the biggest graph it will run: a
micro-batch of ``n_ubatch`` tokens, every token an output, over the whole cache
(``n_kv`` = the cache size).  The allocator walks the graph in order, allocates the graph
inputs first (so they sit at the bottom of the buffer), gives each node the best-fitting
free block (or grows the buffer at its end), reuses a parent's block in place where the
op allows (SOFT_MAX and the element-wise ops) and frees a tensor after its last consumer;
the buffer is the high-water mark.  Three moments set that mark (per token, f32 unless
said):

* attention in a layer: the KQ masks, one per cache (``n_kv``, f16 with flash
  attention), each live until the last layer that reads it (so are minimax-01's
  lightning-attention decay inputs, ``n_ubatch^2 x n_head / n_seq`` floats); without flash attention the score matrix
  ``n_kv x n_head`` (soft-max in place); and the layer's activations around it - the
  residual, the normed input, Q, K, V, their roped copies and the attention output, about
  seven rows of ``max(n_embd, n_head x head_dim)``;
* the feed-forward in a layer: the masks later layers still read, four rows of ``n_embd`` (residual, FFN input,
  its norm, the down projection) and the gate, up and gated product (``3 x n_ff``, or
  ``n_ff_exp x n_expert_used`` for MoE; one ``n_ff`` row without a gate, the activation
  running in place);
* the output: the logits (``n_vocab``) beside the last hidden state and its norm.

Hybrid models the replay does not describe (plamo2, kimi-linear, bailingmoe3)
are planned as attention models over their attention layers (their recurrent layers'
activations are below the output's on the recorded widths).

For the architectures ``ggscope.memory.graph`` describes (its table ``DECODER``: the
llama, qwen2/3, phi3, gemma2/3, starcoder2, gpt2, mpt, falcon, gpt-oss, deepseek2 (MLA) and
MoE decoders, and the rwkv6/7, mamba, jamba, granitehybrid, falcon-h1, nemotron_h, lfm2,
minimax-01, qwen3next and qwen3.5 families) the CPU buffer is not planned from peaks but replayed: ``ggscope.memory.galloc``
runs ggml-alloc's rules over the reserve graph node by node (``replay_bytes``), which also
decides what this plan of peaks cannot - whether the KQ masks (graph inputs, at the bottom
of the buffer) leave a hole below the logits once a long-lived tensor lands above them.
The plan of peaks below is the fallback for every other architecture (e.g. arwkv7, plamo2,
kimi-linear, bailingmoe3, gemma3n, lfm2moe, nemotron_h_moe, the other MLA models), for a header the replay refuses (``graph.described``),
and for offloaded runs (``--ngl``: the scheduler's split across backends is not replayed).

Recurrent models (mamba, rwkv) have no mask and no KQ; their layer's activations are the
token-shift and scan rows (``n_embd_r`` + ``n_embd_s`` per sequence) plus, for rwkv,
about nine rows of ``n_embd`` and the channel-mix ``2 x n_ff``, for mamba four rows of
``n_embd`` and four and a half of ``d_inner`` (these two constants are measured on one
tiny model each, not derived).  The plan of peaks is not a
replay: ``tests/memory`` holds it to within 10 % of llama.cpp's printed size on every
recorded architecture and context it is used for (within 1 MiB for the tiny models whose
whole graph is a few MiB).

With ``--ngl`` llama.cpp reserves one compute buffer per backend (measured through the
RPC device, fixtures/llama_memory/*-rpc.json): the device's holds the output (logits and
one row of ``n_embd``) and, when blocks are offloaded, the layers' peak; the CPU's holds
the layers' peak while any block stays on the CPU, else only the graph inputs.

Contract: ``compute_bytes(hp, caches, n_ubatch, n_seq, flash_attn) -> int`` (the plan of
peaks); ``peaks(...) -> (layers, output)``; ``inputs_bytes(hp, caches, n_ubatch, flash_attn)
-> int``; ``replay_bytes(hp, meta, names, caches, n_ubatch, n_seq, flash_attn, type_k,
type_v) -> int | None`` (None where the graph is not described).
"""
from __future__ import annotations

from ggscope.memory import galloc as _galloc
from ggscope.memory import graph as _graph

__all__ = ["compute_bytes", "peaks", "inputs_bytes", "replay_bytes", "RESERVE_ONE_SEQ"]

# src/llama-context.cpp sched_reserve: the architectures reserved once more with n_seqs = 1
RESERVE_ONE_SEQ = frozenset({"minimax-01", "kimi-linear"})


def replay_bytes(hp, meta, names, caches, n_ubatch: int, n_seq: int, flash_attn: bool, type_k: str,
                 type_v: str, kv_unified: bool = False) -> int | None:
    """The CPU compute buffer ggml-alloc reserves, replayed over llama.cpp's reserve graph
    (``ggscope.memory.graph``, ``galloc``); None when the graph is not described."""
    if not _graph.described(hp, names, meta):
        return None
    cells = {c.name: c.cells for c in caches}          # an empty base cache beside a windowed one too
    want = set() if not any(hp.attn) else {"kv", "kv (swa)"} if hp.swa_any else {"kv"}
    if set(cells) != want:
        return None
    size = _galloc.reserve(_graph.build(hp, meta, names, cells, n_ubatch, n_seq, flash_attn, type_k, type_v,
                                        kv_unified=kv_unified))
    if n_ubatch < n_seq:
        # the token-generation graph sched_reserve reserves in between (n_seq tokens, one
        # output each) picks more outputs than a micro-batch of fewer tokens than sequences
        # (rounded up to n_seq tokens, n_ubatch outputs): ggml-alloc keeps the larger buffer
        size = max(size, _galloc.reserve(_graph.build(hp, meta, names, cells, n_seq, n_seq, flash_attn, type_k,
                                                      type_v, n_outputs=n_seq, kv_unified=kv_unified)))
    if hp.arch in RESERVE_ONE_SEQ and n_seq > 1:
        # llama_context::sched_reserve reserves the micro-batch again as one sequence for these
        # ([TAG_RESERVE_DIAG_DECAY]: their decay input grows with the tokens per sequence squared);
        # ggml-alloc keeps the larger buffer.
        size = max(size, _galloc.reserve(_graph.build(hp, meta, names, cells, n_ubatch, 1, flash_attn, type_k,
                                                      type_v, n_rs=n_seq, kv_unified=kv_unified)))
    return size


def compute_bytes(hp, caches, n_ubatch: int, n_seq: int, flash_attn: bool) -> int:
    """The CPU compute buffer without offload: the larger of the layers' and the output's peak."""
    return max(peaks(hp, caches, n_ubatch, n_seq, flash_attn))


def inputs_bytes(hp, caches, n_ubatch: int, flash_attn: bool) -> int:
    """The CPU's compute buffer when every block is offloaded: the graph inputs the CPU
    keeps (the masks, the looked-up embeddings and their copy for the device) - measured
    through the RPC device, exact with flash attention, low by up to 16 MiB without."""
    return _masks(caches, n_ubatch, flash_attn) + 4 * n_ubatch * 2 * hp.n_embd


def _masks(caches, n_ubatch: int, flash_attn: bool) -> int:
    # one KQ mask per cache: n_kv x n_ubatch, f16 with flash attention (src/llama-graph.cpp)
    return sum(c.cells * n_ubatch * (2 if flash_attn else 4) for c in caches if c.layers)


def _decay_inputs(hp, n_ubatch: int, n_seq: int) -> int:
    """minimax-01's lightning-attention inputs (src/models/minimax-01.cpp: ``inp_diag_decay``
    [n_seq_tokens, n_seq_tokens, n_head, n_seqs] and the q/k decays [1, n_head, n_seq_tokens,
    n_seqs], f32), read by every lightning layer, for the reserve micro-batch of ``n_seq``
    sequences of ``n_ubatch / n_seq`` tokens (llama_context::graph_reserve); 0 elsewhere."""
    if hp.arch != "minimax-01":
        return 0
    nst = n_ubatch // max(1, n_seq)
    return 4 * max(hp.n_head, default=0) * n_seq * (nst * nst + 2 * nst)


def _recurrent_layer(hp, ub: int, n_seq: int, n_ff: int) -> int:
    # rwkv: time-mix and channel-mix rows; mamba: the in-projection (x and z), the
    # convolution and scan outputs over d_inner (constants measured, see the docstring)
    rows = 35 * hp.n_embd // 4 + 2 * n_ff if hp.d_inner == 0 else 4 * hp.n_embd + 9 * hp.d_inner // 2
    return 4 * ub * rows + 4 * (hp.n_embd_r + hp.n_embd_s) * n_seq


def peaks(hp, caches, n_ubatch: int, n_seq: int, flash_attn: bool, layers=None) -> tuple[int, int]:
    """(the peak of ``layers`` (default all), the output's peak) - split because with
    ``--ngl`` the output and the last blocks run on the device, the others on the CPU."""
    ub = n_ubatch
    live = {c.name: c for c in caches if c.layers}
    layers = range(hp.n_layer) if layers is None else layers
    n_head = max(hp.n_head, default=0)
    n_ff = max(hp.n_ff, hp.n_ff_exp * max(1, hp.n_expert_used))
    if hp.recurrent or not live:
        return (_recurrent_layer(hp, ub, n_seq, n_ff) if len(layers) else 0,
                4 * ub * (2 * hp.n_embd + n_ff + hp.n_vocab))
    # which cache (so which mask) each layer attends through; a mask is freed after the
    # last layer that reads it
    uses = ["kv (swa)" if hp.is_swa[il] and "kv (swa)" in live else "kv" for il in range(hp.n_layer)]
    last = {name: max((il for il, u in enumerate(uses) if u == name), default=-1) for name in live}
    mask = {name: c.cells * ub * (2 if flash_attn else 4) for name, c in live.items()}
    if _decay_inputs(hp, ub, n_seq):           # live like a mask until the last layer reading them
        mask["decay"] = _decay_inputs(hp, ub, n_seq)
        last["decay"] = max((il for il in range(hp.n_layer) if hp.recr[il]), default=-1)
    q = max(hp.head_k, hp.head_k_swa) * n_head
    kv = max((hp.n_embd_k_gqa(il) + hp.n_embd_v_gqa(il) for il in range(hp.n_layer)), default=0)
    act_attn = 4 * ub * (4 * hp.n_embd + q + kv)
    act_ffn = 4 * ub * (4 * hp.n_embd + (3 if hp.ffn_gated else 1) * n_ff)
    peak = 0
    for il in layers:
        u = uses[il]
        masks_in = sum(m for name, m in mask.items() if last[name] >= il)
        if hp.hybrid and not hp.attn[il]:
            # a recurrent (or MLP-only) block of a hybrid: its own activations beside the masks
            peak = max(peak, masks_in + (_recurrent_layer(hp, ub, n_seq, n_ff) if hp.recr[il] else act_ffn))
            continue
        kq = 0 if flash_attn or u not in live else live[u].cells * ub * n_head * 4
        peak = max(peak, masks_in + kq + act_attn,
                   sum(m for name, m in mask.items() if last[name] > il) + act_ffn)
    return peak, 4 * ub * (2 * hp.n_embd + hp.n_vocab)
