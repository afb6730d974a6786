"""Metadata schema rules (GG6xx): standard keys, their types, and what each model needs.

Why: a file can be structurally perfect and still unusable - ``llama.block_count``
stored as a string, no ``general.architecture``, quantized tensors without
``general.quantization_version``.  The facts come from one table,
``ggscope.gguf_schema`` (transcribed from the GGUF spec, sections cited there).

Contract: rules read ``mf.metadata``/``metadata_types``/``tensors`` and point at the
key's kv entry (``metadata_kv[i]``), or at the whole file for a missing key.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .. import gguf_schema as schema
from ..ggml_types import LLAMA_FTYPE, TYPES_BY_NAME
from .base import CheckContext, Finding, Rule, Severity

__all__ = ["RULES", "FTYPE_MAIN_TYPE", "StandardKeyType", "ArchitectureName", "ArchRequiredKey",
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
    "MOSTLY_TQ1_0": "TQ1_0", "MOSTLY_TQ2_0": "TQ2_0",
}


def _node(ctx: CheckContext, key: str):
    p = ctx.mf.metadata_nodes.get(key)
    return ctx.node(p) if p else None


def _arch(ctx: CheckContext) -> str | None:
    a = ctx.mf.metadata.get("general.architecture")
    return a if isinstance(a, str) else None


class StandardKeyType(Rule):
    """What it checks: a key the spec standardizes has the type the spec gives it.

    Why it matters: readers fetch standard keys with a typed getter; ggml's
    ``gguf_get_val_u32`` aborts on a key of another type, llama.cpp refuses to load.
    Another kind of value (a string for a number) is an error; another width of the same
    kind is a warning, except that integer counts may be any width (the spec: "Some
    models may use uint32 ... readers support both") and ``general.alignment`` must be
    exactly uint32.

    Example: ``general.alignment`` stored as uint64; ``llama.block_count`` as a string.

    Reference: gguf-spec.txt §2.1-§2.4.
    """
    code, name, severity, family = "GG601", "standard-key-type", Severity.ERROR, "schema"
    summary = "A standard metadata key has a type other than the spec's."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        arch = _arch(ctx)
        for key, ftype in ctx.mf.metadata_types.items():
            want = schema.expected_type(key, arch)
            if want is None:
                continue
            verdict = schema.type_matches(want, ftype)
            if verdict == "ok":
                continue
            if verdict == "width":
                if key != "general.alignment" and (want in ("uint64", "uint32") and schema.kind(want) == "int"):
                    if want == "uint64" or ftype.startswith("uint"):
                        continue        # any unsigned width for counts/ids; uint64 counts any int
                sev = Severity.ERROR if key == "general.alignment" else Severity.WARNING
            else:
                sev = Severity.ERROR
            yield ctx.at(_node(ctx, key), f"{key} is {ftype}, the spec says {want}", severity=sev)


class ArchitectureName(Rule):
    """What it checks: ``general.architecture`` is present and matches ``[a-z0-9]+``.

    Why it matters: it is the one required key; every loader picks its code path by it,
    and all ``[llm].*`` keys are prefixed with it.

    Example: no ``general.architecture``; ``general.architecture = "Llama-2"``.

    Reference: gguf-spec.txt §2.1.1.
    """
    code, name, severity, family = "GG602", "architecture-name", Severity.ERROR, "schema"
    summary = "general.architecture is missing or not lowercase [a-z0-9]+."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None:
            return                  # the key may sit past the damage
        if "general.architecture" not in ctx.mf.metadata:
            yield ctx.at(None, "general.architecture is missing (required)")
            return
        a = ctx.mf.metadata["general.architecture"]
        if isinstance(a, str) and not schema.ARCH_NAME_RE.fullmatch(a):
            yield ctx.at(_node(ctx, "general.architecture"),
                         f"general.architecture {a!r} is not lowercase [a-z0-9]+", severity=Severity.WARNING)


class ArchRequiredKey(Rule):
    """What it checks: a file of an architecture the spec lists has all its required keys.

    Why it matters: the spec says of each architecture "each key specified must be
    present"; a loader without ``llama.block_count`` cannot build the model.  Files with
    no tensors (vocabulary-only files, the naming convention's ``vocab`` type) are not
    models and are skipped.

    Example: a llama file without ``llama.attention.layer_norm_rms_epsilon``.

    Reference: gguf-spec.txt §2.2.4.1-§2.2.4.10.
    """
    code, name, severity, family = "GG603", "arch-required-key", Severity.ERROR, "schema"
    summary = "A key the spec requires for the file's architecture is missing."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        arch = _arch(ctx)
        if arch not in schema.ARCH_REQUIRED or not ctx.mf.tensors or ctx.mf.damage is not None:
            return
        missing = [f"{arch}.{k}" for k in schema.ARCH_REQUIRED[arch] if f"{arch}.{k}" not in ctx.mf.metadata]
        for key in missing:
            yield ctx.at(_node(ctx, "general.architecture"), f"{key} is missing (required for {arch})")


class QuantizationVersionMissing(Rule):
    """What it checks: a file with quantized tensors has ``general.quantization_version``.

    Why it matters: the spec: "If any tensors are quantized, this must be present"; it is
    how a reader tells block layouts of different eras apart.

    Example: Q4_0 tensors, no ``general.quantization_version``.

    Reference: gguf-spec.txt §2.1.1.
    """
    code, name, severity, family = "GG604", "quantization-version-missing", Severity.ERROR, "schema"
    summary = "Quantized tensors but no general.quantization_version."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if "general.quantization_version" in ctx.mf.metadata or ctx.mf.damage is not None:
            return
        for t in ctx.mf.tensors:
            gt = TYPES_BY_NAME.get(t.type)
            if gt is not None and gt.is_quantized:
                yield ctx.at(ctx.node(t.node_path) if t.node_path else None,
                             f"tensor {t.name!r} is {t.type} but general.quantization_version is missing")
                return


class FileTypeMismatch(Rule):
    """What it checks: ``general.file_type`` is a known value and its main type occurs.

    Why it matters: the spec describes it as "the type of the majority of the tensors";
    tools show it as the model's quantization.  A file marked MOSTLY_Q4_K_M without a
    single Q4_K tensor is mislabelled.

    Example: ``general.file_type = 7`` (MOSTLY_Q8_0) in a file of F16 tensors.

    Reference: gguf-spec.txt §2.1.2 ``general.file_type``.
    """
    code, name, severity, family = "GG605", "file-type-mismatch", Severity.WARNING, "schema"
    summary = "general.file_type is unknown or its main tensor type is absent."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        ft = ctx.mf.metadata.get("general.file_type")
        if not isinstance(ft, int) or isinstance(ft, bool) or not ctx.mf.tensors:
            return
        node = _node(ctx, "general.file_type")
        name = LLAMA_FTYPE.get(ft)
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


RULES = [StandardKeyType, ArchitectureName, ArchRequiredKey, QuantizationVersionMissing, FileTypeMismatch]
