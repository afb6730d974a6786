"""Legacy rule GG910: tensor shapes (and chatglm.cpp's types) as each pre-GGUF loader checks them.

Why a module beside ``legacy``: the shape table is its own fact (``facts.legacy_shapes``)
and the rule that reads it is listed with the other legacy rules in ``legacy.RULES``.

Contract: reads only the ModelFile; work is one pass over the tensor records (the
table lookup is by name), findings are capped at ``_MAX_LISTED`` plus one summary.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.core.escape import llama_quoted
from ggscope.facts.ggml_types import type_by_id
from ggscope.rules.base import CheckContext, Finding, Rule, Severity

__all__ = ["LegacyTensorShape"]

_MAX_LISTED = 8


class LegacyTensorShape(Rule):
    """What it checks: every tensor a pre-GGUF loader looks up has the shape that loader
    computes from the header's hyper-parameters - llama.cpp files (``tok_embeddings.weight``
    [n_embd, n_vocab], ``w1``/``w3`` [n_embd, n_ff] with n_ff from n_mult, ...), ggml's
    gpt-2/gpt-j examples (``c_attn/w`` [n_embd, 3 n_embd], ...), rwkv.cpp (square
    projections [n_embed, n_embed], ``ffn.key`` [n_embed, ffn_key_size] with the size taken
    from block 0 as the loader does, the LoRA pairs of v6/v7) and chatglm.cpp (every
    tensor of the model type, from hidden_size, intermediate_size and the KV heads).  Types
    too where the loader fixes them: chatglm.cpp's config dtype must be a ggml type,
    matrices must have it and vectors F32; ggml's gpt-2/gpt-j examples create their
    matrices with the header ftype's weight type and everything else (``model/wpe``
    included) F32.

    Why it matters: a tensor with its two dimensions swapped has the right byte size, so
    it parses and every size check passes - but the loaders refuse the file.
    llama.cpp's 2023 loader: ``get_tensor(name, {ne...})`` throws "llama.cpp: tensor '%s'
    has wrong shape; expected %s, got %s" (``llama_model_load_internal``; the March 2023
    loader: "tensor '%s' has wrong shape in model file: got [%d, %d], expected [%d, %d]").
    ggml's examples/gpt-2/main.cpp and examples/gpt-j/main.cpp: "tensor '%s' has wrong
    shape in model file: got [%d, %d], expected [%d, %d]", and for a record of another
    type size "tensor '%s' has wrong size in model file".  chatglm.cpp
    ``ModelLoader::read_tensor``: "tensor ... shape mismatch at dim %d: expect %d but got
    %d" and "tensor ... dtype mismatch"; a config dtype that is no ggml type aborts in
    ``ggml_new_tensor``.  rwkv.cpp checks the embedding itself ("Unexpected dimension of
    embedding matrix", reported by GG908) and aborts in ``ggml_mul_mat``
    (``GGML_ASSERT(ggml_can_mul_mat(a, b))``) on any other matrix whose inner dimension
    does not match.

    Example: a GGJT file whose ``tok_embeddings.weight`` is [32, 128] (n_vocab, n_embd)
    instead of [128, 32].

    Reference: ggscope/facts/legacy_shapes.py; llama.cpp ``llama_model_loader::get_tensor``
    (2023-04 .. 2023-08); ggml examples/gpt-2/main.cpp ``gpt2_model_load``, examples/gpt-j/
    main.cpp ``gptj_model_load``; rwkv.cpp rwkv_model_loading.inc, rwkv_graph.inc;
    chatglm.cpp chatglm.cpp ``ModelLoader::read_tensor``; legacy-formats.md §1.2, §1.3,
    §6.6, §7.5.
    """
    code, name, severity, family = "GG910", "legacy-tensor-shape", Severity.ERROR, "legacy"
    summary = "A tensor's shape (or fixed type) differs from the one its loader derives from the header."
    formats = ("ggml", "ggmf", "ggjt", "rwkv.cpp", "chatglm.cpp")

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        from ggscope.facts import legacy_shapes   # start-up: the shape table only for a pre-GGUF file
        mf = ctx.mf
        if mf.format == "chatglm.cpp":
            yield from self._chatglm_types(ctx)
        typed = legacy_shapes.example_type_mismatches(mf)
        if typed is not None:
            loader, wtype, wrong = typed
            for t, want in wrong[:_MAX_LISTED]:
                node = ctx.node(t.node_path) if t.node_path else None
                yield ctx.at(node, f"tensor {llama_quoted(t.name)} has type {t.type}; {loader} creates it as {want} (the "
                             f"header's weight type is {wtype}) and refuses another size")
            if len(wrong) > _MAX_LISTED:
                yield ctx.at(None, f"{len(wrong)} tensors in all have a type {loader} refuses", start=0, end=0)
        found = legacy_shapes.shape_mismatches(mf)
        if found is None:
            return
        loader, bad = found
        for m in bad[:_MAX_LISTED]:
            t = m.tensor
            node = ctx.node(t.node_path) if t.node_path else None
            yield ctx.at(node, f"tensor {llama_quoted(t.name)} has shape {list(t.shape)}; {loader} expects "
                         f"{list(m.expected)} {m.meaning}")
        if len(bad) > _MAX_LISTED:
            yield ctx.at(None, f"{len(bad)} tensors in all have a shape {loader} refuses", start=0, end=0)

    def _chatglm_types(self, ctx: CheckContext) -> Iterator[Finding]:
        dtype = ctx.mf.metadata.get("chatglm_cpp.dtype")
        if not isinstance(dtype, int):
            return
        try:
            want = type_by_id(dtype)
        except ValueError:
            yield ctx.at(ctx.node("config/dtype"), f"config dtype {dtype} is not a ggml type: chatglm.cpp "
                         "creates every matrix with it (ggml_new_tensor aborts)")
            return
        wrong = [t for t in ctx.mf.tensors
                 if t.type is not None and t.type != (want.name if len(t.shape) >= 2 else "F32")]
        for t in wrong[:_MAX_LISTED]:
            node = ctx.node(t.node_path) if t.node_path else None
            yield ctx.at(node, f"tensor {llama_quoted(t.name)} has type {t.type}; chatglm.cpp expects "
                         f"{want.name if len(t.shape) >= 2 else 'F32'} (config dtype {dtype} for matrices, "
                         "F32 for vectors)")
        if len(wrong) > _MAX_LISTED:
            yield ctx.at(None, f"{len(wrong)} tensors in all have a type chatglm.cpp refuses", start=0, end=0)
