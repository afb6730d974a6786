"""Metadata schema rules (GG6xx): standard keys, their types, and what each model needs.

Why: a file can be structurally perfect and still deviate from what llama.cpp writes -
``llama.block_count`` stored as a string, no ``general.architecture``, quantized tensors
without ``general.quantization_version``.  The facts come from gguf-py at run time
(``ggscope.facts.upstream`` via ``ggscope.facts.gguf_schema``); what llama.cpp's loader refuses (a
required key missing, a key read with another type) is the loader family's (GG11xx).

Contract: rules read ``mf.metadata``/``metadata_types``/``tensors`` and point at the
key's kv entry (``metadata_kv[i]``), or at the whole file for a missing key.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ggscope.facts import gguf_schema as schema
from ggscope.facts import upstream
from ggscope.facts.ggml_types import TYPES_BY_NAME
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted

__all__ = ["RULES", "FTYPE_MAIN_TYPE", "StandardKeyType", "ArchitectureName",
           "QuantizationVersionMissing", "FileTypeMismatch"]

# general.file_type value name -> the ggml type its majority of tensors has (llama.cpp's
# llama_model_quantize maps each ftype to one base type; the _S/_M/_L mixes share it).
FTYPE_MAIN_TYPE: dict[str, str] = {
    "ALL_F32": "F32", "MOSTLY_F16": "F16", "MOSTLY_Q4_0": "Q4_0", "MOSTLY_Q4_1": "Q4_1",
    "MOSTLY_Q4_1_SOME_F16": "Q4_1", "MOSTLY_Q4_2": "Q4_2", "MOSTLY_Q4_3": "Q4_3",
    "MOSTLY_Q8_0": "Q8_0", "MOSTLY_Q5_0": "Q5_0", "MOSTLY_Q5_1": "Q5_1", "MOSTLY_Q2_K": "Q2_K",
    "MOSTLY_Q2_K_S": "Q2_K", "MOSTLY_Q3_K_S": "Q3_K", "MOSTLY_Q3_K_M": "Q3_K", "MOSTLY_Q3_K_L": "Q3_K",
    "MOSTLY_Q4_K_S": "Q4_K", "MOSTLY_Q4_K_M": "Q4_K", "MOSTLY_Q5_K_S": "Q5_K", "MOSTLY_Q5_K_M": "Q5_K",
    "MOSTLY_Q6_K": "Q6_K", "MOSTLY_IQ2_XXS": "IQ2_XXS", "MOSTLY_IQ2_XS": "IQ2_XS",
    "MOSTLY_IQ3_XS": "IQ3_S", "MOSTLY_IQ3_XXS": "IQ3_XXS", "MOSTLY_IQ1_S": "IQ1_S",
    "MOSTLY_IQ4_NL": "IQ4_NL", "MOSTLY_IQ3_S": "IQ3_S", "MOSTLY_IQ3_M": "IQ3_S", "MOSTLY_IQ2_S": "IQ2_S",
    "MOSTLY_IQ2_M": "IQ2_S", "MOSTLY_IQ4_XS": "IQ4_XS", "MOSTLY_IQ1_M": "IQ1_M", "MOSTLY_BF16": "BF16",
    "MOSTLY_TQ1_0": "TQ1_0", "MOSTLY_TQ2_0": "TQ2_0", "MOSTLY_MXFP4_MOE": "MXFP4", "MOSTLY_NVFP4": "NVFP4",
    "MOSTLY_Q1_0": "Q1_0", "MOSTLY_Q2_0": "Q2_0",
}


def _node(ctx: CheckContext, key: str):
    p = ctx.mf.metadata_nodes.get(key)
    return ctx.node(p) if p else None


# (key, architecture, type in the file) -> (the type gguf-py writes, type_matches' verdict):
# gguf-py's facts do not change within a process, and the files one process checks (a
# folder, a server's stream) repeat their keys; bounded, and only for keys of a sane length
_VERDICTS: dict[tuple, tuple[str | None, str | None]] = {}
_VERDICTS_MAX, _KEY_MAX = 4096, 256


def _verdict(key: str, arch: str | None, ftype: str) -> tuple[str | None, str | None]:
    """``schema.expected_type(key, arch)`` and, for a standard key, how ``ftype`` matches it."""
    memo = (key, arch, ftype)
    hit = _VERDICTS.get(memo)
    if hit is not None:
        return hit
    want = schema.expected_type(key, arch)
    out = (want, None if want is None else schema.type_matches(want, ftype))
    if isinstance(key, str) and len(key) <= _KEY_MAX and (arch is None or len(arch) <= _KEY_MAX):
        if len(_VERDICTS) >= _VERDICTS_MAX:
            _VERDICTS.clear()
        _VERDICTS[memo] = out
    return out


def _arch(ctx: CheckContext) -> str | None:
    a = ctx.mf.metadata.get("general.architecture")
    return a if isinstance(a, str) else None


class StandardKeyType(Rule):
    """What it checks: a key gguf-py defines has the type gguf-py's writer gives it.

    Why it matters: tools read standard keys with typed getters; a value of another type
    means a hand-made or foreign writer.  gguf-py (llama.cpp's own package) is the source
    of the expected types, read at run time from ``GGUFWriter``'s ``add_*`` methods.  Where
    llama.cpp's loader itself reads the key and refuses the file, GG1104 reports the error;
    this rule reports the deviation for every standard key.

    Example: ``general.file_type`` stored as uint64; ``llama.block_count`` as a string.

    Reference: gguf-py ``gguf/gguf_writer.py`` (``add_uint32(Keys.LLM.CONTEXT_LENGTH...)``), ``gguf/constants.py`` ``Keys``.
    """
    code, name, severity, family = "GG601", "standard-key-type", Severity.WARNING, "schema"
    summary = "A standard metadata key has another type than gguf-py writes."
    source = "gguf-py gguf_writer.py GGUFWriter.add_* (installed package)"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        arch = _arch(ctx)
        for key, ftype in ctx.mf.metadata_types.items():
            want, verdict = _verdict(key, arch, ftype)
            if want is None or verdict == "ok":
                continue
            how = "another width of the same kind" if verdict == "width" else "another kind of value"
            yield ctx.at(_node(ctx, key), f"{key} is {ftype}, gguf-py writes {want} ({how})")


class ArchitectureName(Rule):
    """What it checks: ``general.architecture`` is present and a string.

    Why it matters: it is the one required key; llama.cpp's loader reads it first and
    picks every code path by it (an architecture it does not know is GG1101).

    Example: no ``general.architecture``.

    Reference: the GGUF spec (ggml docs/gguf.md), "General: Required"; llama.cpp src/llama-model-loader.cpp
    (``general.architecture``).
    """
    code, name, severity, family = "GG602", "architecture-name", Severity.ERROR, "schema"
    summary = "general.architecture is missing or not a string."
    source = "llama.cpp src/llama-model-loader.cpp llama_model_loader (reads general.architecture)"

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None:
            return                  # the key may sit past the damage
        if "general.architecture" not in ctx.mf.metadata:
            if ctx.mf.metadata.get("general.type") == "imatrix":
                return              # llama-imatrix writes none and llama-quantize reads none (GG1126)
            yield ctx.at(None, "general.architecture is missing (required)")
        elif not isinstance(ctx.mf.metadata["general.architecture"], str):
            yield ctx.at(_node(ctx, "general.architecture"), "general.architecture is not a string")


class QuantizationVersionMissing(Rule):
    """What it checks: a file with quantized tensors has ``general.quantization_version``.

    Why it matters: the spec: "If any tensors are quantized, this must be present"; it is
    how a reader tells block layouts of different eras apart.

    Example: Q4_0 tensors, no ``general.quantization_version``.

    Reference: the GGUF spec (ggml docs/gguf.md), "General: Required".
    """
    code, name, severity, family = "GG604", "quantization-version-missing", Severity.ERROR, "schema"
    only_if = "tensors"
    summary = "Quantized tensors but no general.quantization_version."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if "general.quantization_version" in ctx.mf.metadata or ctx.mf.damage is not None:
            return
        for t in ctx.mf.tensors:
            gt = TYPES_BY_NAME.get(t.type)
            if gt is not None and gt.is_quantized:
                yield ctx.at(ctx.node(t.node_path) if t.node_path else None,
                             f"tensor {quoted(t.name)} is {t.type} but general.quantization_version is missing")
                return


class FileTypeMismatch(Rule):
    """What it checks: ``general.file_type`` is a known value and its main type occurs.

    Why it matters: the spec describes it as "the type of the majority of the tensors";
    tools show it as the model's quantization.  A file marked MOSTLY_Q4_K_M without a
    single Q4_K tensor is mislabelled.

    Example: ``general.file_type = 7`` (MOSTLY_Q8_0) in a file of F16 tensors.

    Reference: the GGUF spec (ggml docs/gguf.md), "General metadata" ``general.file_type``; gguf-py
    ``LlamaFileType`` (+ ggscope.upstream_overlay).
    """
    code, name, severity, family = "GG605", "file-type-mismatch", Severity.WARNING, "schema"
    only_if = "tensors"
    summary = "general.file_type is unknown or its main tensor type is absent."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        ft = ctx.mf.metadata.get("general.file_type")
        if not isinstance(ft, int) or isinstance(ft, bool) or not ctx.mf.tensors:
            return
        node = _node(ctx, "general.file_type")
        name = upstream.file_types().get(ft)
        if name is None:
            yield ctx.at(node, f"general.file_type {ft} is not a known file type")
            return
        main = FTYPE_MAIN_TYPE.get(name)
        if main is None:
            return
        types = Counter(t.type for t in ctx.mf.tensors)
        if main == "F32":
            other = sorted(set(types) - {"F32"})
            if other:
                yield ctx.at(node, f"general.file_type {ft} ({name}) but tensors of type {', '.join(other)}")
        elif main not in types:
            yield ctx.at(node, f"general.file_type {ft} ({name}) but no tensor is {main} "
                         f"(types: {', '.join(sorted(types))})")


RULES = [StandardKeyType, ArchitectureName, QuantizationVersionMissing, FileTypeMismatch]
