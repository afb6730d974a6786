"""Loader rules (GG11xx): what llama.cpp's model loader refuses after ggml's reader accepted.

Why: the failures people meet after converting or hand-editing a model - "unknown model
architecture", "key not found in model", "missing tensor", "wrong shape", "wrong number of
tensors", an assert in the vocabulary loader, a crash at the first evaluation - happen in
llama.cpp's ``llama_model_load``, not in ggml's reader.  ``ggscope.rules.loader_engine`` runs the
table generated from the pinned llama.cpp's source (``ggscope.facts.llama_arch``, every
architecture it knows) once per file; each rule here reports one kind of issue from that run.  Error means llama.cpp
refuses the file or crashes on it.  The pinned version is named in every rule's source.

Contract: rules need an undamaged header (a damaged file is the structure family's);
each rule reports at most ``MAX_PER_RULE`` findings and then one summary line.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.rules import loader_engine
from ggscope.facts.llama_arch import ARCHS as GEN_ARCHS, PINNED
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted

__all__ = ["RULES", "MAX_PER_RULE"]

MAX_PER_RULE = 10
SOURCE = f"{PINNED}: src/llama-model.cpp load_hparams, src/models/*.cpp load_arch_hparams / load_arch_tensors"
_VOCAB_SOURCE = f"{PINNED}: src/llama-vocab.cpp (llama_vocab::impl::load)"


class _LoaderRule(Rule):
    kind = ""
    family = "loader"
    severity = Severity.ERROR
    only_if = "loader-issues"      # each names the prediction's issues of its kind: none, nothing to name

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None:
            return
        issues = loader_engine.predict(ctx.mf).of(self.kind)
        for issue in issues[:MAX_PER_RULE]:
            yield ctx.at(ctx.node(issue.path) if issue.path else None, issue.message)
        if len(issues) > MAX_PER_RULE:
            yield ctx.at(None, f"... and {len(issues) - MAX_PER_RULE} more like these")


class UnknownArchitecture(_LoaderRule):
    """What it checks: ``general.architecture`` names an architecture llama.cpp knows.

    Why it matters: ``llama_model::load_arch`` maps the name with ``llm_arch_from_string``
    and refuses anything else ("unknown model architecture: 'x'"); a name it knows without a
    model class (gptj) is "unsupported model architecture".  The names are the pinned
    llama.cpp's (generated into ``ggscope.facts.llama_arch``); nothing is guessed.

    Example: ``general.architecture = "llama2"``; ``"Llama"``.

    Reference: llama.cpp src/llama-model.cpp ``load_arch``; src/llama-arch.cpp ``LLM_ARCH_NAMES``.
    """
    code, name, kind = "GG1101", "unknown-architecture", "unknown-arch"
    summary = "general.architecture is not an architecture llama.cpp knows."
    source = f"{PINNED}: src/llama-model.cpp load_arch; src/llama-arch.cpp LLM_ARCH_NAMES"


class ArchitectureNotCovered(Rule):
    """What it checks: whether llama.cpp names some of the architecture's tensors only at run time.

    Why it matters: the loader rules run a table generated from the pinned llama.cpp's
    source (llama-cpp-python 0.3.36's vendored llama.cpp) for every architecture it knows;
    for the few whose ``load_arch_tensors`` builds tensor names at run time the list of
    created tensors is incomplete, so ggscope does not report "unexpected" tensors there
    instead of guessing.

    Example: a jina-bert-v2 file.

    Reference: tools/gen_llama_arch.py; ``ggscope.facts.llama_arch`` ``Arch.dynamic``.
    """
    code, name, severity, family = "GG1102", "architecture-not-covered", Severity.INFO, "loader"
    only_if = "tensors"
    summary = "Some tensors of this architecture are named at run time: unexpected tensors are not checked."
    source = f"ggscope.facts.llama_arch, generated from {PINNED}"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None or not ctx.mf.tensors:
            return
        pred = loader_engine.predict(ctx.mf)
        spec = GEN_ARCHS.get(pred.arch or "")
        if spec is not None and spec.dynamic:
            yield ctx.at(ctx.node(ctx.mf.metadata_nodes.get("general.architecture", "")),
                         f"architecture {quoted(pred.arch)}: llama.cpp names some tensors at run time; tensors it "
                         "does not create are not reported")


class MissingHparam(_LoaderRule):
    """What it checks: every key ``load_hparams`` reads as required is present.

    Why it matters: ``llama_model_loader::get_key(kid, result, required=true)`` throws
    "key not found in model: <key>": the context length, embedding length and block count
    of every architecture, plus each architecture's own (llama's
    ``attention.layer_norm_rms_epsilon``, mpt's ``attention.max_alibi_bias``, ...).

    Example: a llama file whose keys were written under the ``qwen2.`` prefix.

    Reference: llama.cpp src/llama-model.cpp ``load_hparams``; src/llama-model-loader.cpp ``get_key``.
    """
    code, name, kind = "GG1103", "missing-hparam", "missing-key"
    summary = "A hyperparameter llama.cpp requires for the architecture is missing."
    source = SOURCE


class HparamType(_LoaderRule):
    """What it checks: each key llama.cpp reads has exactly the GGUF type it reads it as.

    Why it matters: ``GGUFMeta::GKV`` compares the stored type with the C type it fills
    (u32 is only UINT32, f32 only FLOAT32) and throws "key X has wrong type u64 but expected
    type u32" - also for optional keys, for ``general.file_type`` (u32) and
    ``split.count`` (u16) which the loader reads from every file, for special token ids
    (u32) and ``tokenizer.ggml.add_*`` flags (bool).

    Example: ``llama.context_length`` stored as uint64; the RMS epsilon as float64.

    Reference: llama.cpp src/llama-model-loader.cpp ``GGUFMeta::GKV::validate_type``.
    """
    code, name, kind = "GG1104", "hparam-type", "key-type"
    summary = "A key llama.cpp reads has another GGUF type than the one it reads."
    source = f"{PINNED}: src/llama-model-loader.cpp GGUFMeta::GKV; src/llama-vocab.cpp"


class HparamInvalid(_LoaderRule):
    """What it checks: the hyperparameters pass llama.cpp's sanity checks.

    Why it matters: ``load_hparams`` throws "invalid n_rot" when llama, deci or falcon's
    rope dimension differs from n_embd / n_head (or key_length), asserts n_expert_used <=
    n_expert and that a model with experts uses some, asserts a known
    ``rope.scaling.type``, refuses per-layer arrays of another length than block_count,
    and MoE architectures throw "n_expert must be > 0".

    Example: ``attention.head_count = 5`` with n_embd 64 and rope dimension 16.

    Reference: llama.cpp src/llama-model.cpp ``load_hparams``, ``load_tensors``.
    """
    code, name, kind = "GG1105", "hparam-invalid", "hparam"
    summary = "The hyperparameters fail a check of llama.cpp's loader."
    source = SOURCE


class VocabRefused(_LoaderRule):
    """What it checks: the vocabulary passes ``llama_vocab::load``.

    Why it matters: it throws on a missing ``tokenizer.ggml.model`` or one it does not
    know ("unknown tokenizer"), on a missing token list, on a BPE ("gpt2") vocabulary
    without merges, and asserts (abort) when two tokens have the same text or the token
    list is not an array of strings.

    Example: ``tokenizer.ggml.model = "holdout-bpe"``; token 299 spelled like token 298.

    Reference: llama.cpp src/llama-vocab.cpp ``llama_vocab::impl::load``.
    """
    code, name, kind = "GG1106", "vocab-refused", "vocab"
    summary = "llama.cpp's vocabulary loader refuses or aborts on the vocabulary."
    source = _VOCAB_SOURCE


class MissingTensor(_LoaderRule):
    """What it checks: every tensor llama.cpp creates without ``TENSOR_NOT_REQUIRED`` is present.

    Why it matters: ``create_tensor`` throws "missing tensor 'blk.2.attn_norm.weight'".
    Optional tensors are accepted where llama.cpp accepts them: an absent
    ``output.weight`` (tied embeddings) falls back to ``token_embd.weight``, llama's
    attention and MLP biases are optional, qwen2's are not.

    Example: ``block_count = 3`` with tensors for two blocks.

    Reference: llama.cpp src/llama-model.cpp ``load_tensors``; src/llama-model-loader.cpp ``check_tensor_dims``.
    """
    code, name, kind = "GG1107", "missing-tensor", "missing-tensor"
    summary = "A tensor llama.cpp requires for the architecture is missing."
    source = SOURCE


class TensorShape(_LoaderRule):
    """What it checks: each tensor's shape is what the hyperparameters imply.

    Why it matters: ``check_tensor_dims`` compares all four dimensions with the list
    ``load_tensors`` computes from n_embd, n_head, n_head_kv, the head sizes, n_ff,
    n_vocab (the number of tokens) and the expert counts, and throws "tensor 'x' has wrong
    shape"; trailing dimensions of 1 are accepted, a leading 1 is not.

    Example: ``token_embd.weight`` of 48 x 300 with n_embd 64; ``ffn_down`` of n_ff - 1.

    Reference: llama.cpp src/llama-model-loader.cpp ``check_tensor_dims``; src/llama-model.cpp ``load_tensors``.
    """
    code, name, kind = "GG1108", "tensor-shape", "tensor-shape"
    summary = "A tensor's shape differs from what the hyperparameters imply."
    source = SOURCE


class UnexpectedTensor(_LoaderRule):
    """What it checks: the file holds no tensor llama.cpp does not create for the architecture.

    Why it matters: ``done_getting_tensors`` counts the tensors ``load_tensors`` created
    and throws "wrong number of tensors; expected N, got M" when the file has more.

    Example: an extra ``blk.0.holdout_extra.weight``; an ``output.weight`` in a gemma2 file.

    Reference: llama.cpp src/llama-model-loader.cpp ``done_getting_tensors``.
    """
    code, name, kind = "GG1109", "unexpected-tensor", "unexpected-tensor"
    summary = "A tensor llama.cpp does not create for the architecture (wrong number of tensors)."
    source = f"{PINNED}: src/llama-model-loader.cpp done_getting_tensors"


class TensorTypeUnusable(_LoaderRule):
    """What it checks: norms, biases and other vectors are F32, and no weight matrix has an
    integer or F64 type.

    Why it matters: ``create_tensor`` does not check types, so llama.cpp loads such a file
    and then crashes at the first evaluation: ggml's CPU binary ops abort on a F16/Q8_0
    operand added to or multiplied into F32 activations ("binary_op: unsupported types"),
    and no matrix multiplication takes I32 weights (segfault).

    Example: ``blk.0.attn_q.bias`` stored as F16; ``blk.0.attn_q.weight`` stored as I32.

    Reference: ggml src/ggml-cpu/binary-ops.cpp; ggml-cpu type_traits (vec_dot).
    """
    code, name, kind = "GG1110", "tensor-type-unusable", "tensor-type"
    summary = "A tensor's type makes llama.cpp crash at the first evaluation."
    source = f"{PINNED}: ggml/src/ggml-cpu/binary-ops.cpp binary_op; ggml-cpu mul_mat type traits"


class LoaderAbort(_LoaderRule):
    """What it checks: nothing llama.cpp asserts while loading the model or creating a
    context fails.

    Why it matters: a ``GGML_ASSERT`` ends the process (SIGABRT) instead of returning an
    error: asserts of ``load_arch_hparams`` / ``load_arch_tensors`` (a GLM4-MoE file without
    experts), of the graph each model class builds when the context is created
    (``n_embd_head == n_rot``: a head count that does not divide), and the CPU backend's
    ``buffer pointer must be aligned`` when the mmapped tensor data does not start on a
    32-byte boundary (``general.alignment`` 8 or 16).  Read from the pinned llama.cpp's
    source by tools/gen_llama_arch.py.

    Example: qwen2 with ``attention.head_count = 5`` and n_embd 64; a file written with
    ``general.alignment = 16`` whose data section starts at byte 16 mod 32.

    Reference: src/models/*.cpp; ggml/src/ggml-backend.cpp ``ggml_backend_cpu_buffer_from_ptr``.
    """
    code, name, kind = "GG1111", "loader-abort", "abort"
    summary = "llama.cpp aborts on a GGML_ASSERT while loading the model or creating its context."
    source = f"{PINNED}: src/models/*.cpp (GGML_ASSERT), ggml/src/ggml-backend.cpp"


RULES = [UnknownArchitecture, ArchitectureNotCovered, MissingHparam, HparamType, HparamInvalid, VocabRefused,
         MissingTensor, TensorShape, UnexpectedTensor, TensorTypeUnusable, LoaderAbort]
