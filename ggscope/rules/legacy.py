"""Rules for the formats before GGUF (GG9xx): GGJT alignment, type codes per version, BIT1 size and padding.

Why: the legacy containers have no metadata to check, but each has invariants of its
own that its loader relied on: GGJT aligns tensor data to 32 bytes for mmap; rwkv.cpp
and llama.cpp changed the meaning of quantized type codes between versions (a version-
100 rwkv.cpp file cannot hold Q8_1 or K-quants, version 101 dropped Q4_1_O/Q4_2/Q4_3);
a BIT1 file is exactly the size its header implies and keeps unused sign bits zero.

Contract: rules apply to every format except ``gguf`` and read only the ModelFile
(``extra["type_errors"]`` is where the views record a code invalid in that version).
The BIT1 padding check streams the row tails, a bounded number of rows at a time.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ggscope.facts import legacy_tensors
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted

__all__ = ["RULES", "LEGACY_FORMATS", "GgjtAlignment", "LegacyTypeInvalid", "Bit1Size", "Bit1PaddingBits",
           "MissingTensors", "TensorDims", "TensorNames", "RwkvHeader", "Bit1Header"]

LEGACY_FORMATS = ("ggml", "ggmf", "ggjt", "ggml-example", "rwkv.cpp", "chatglm.cpp", "bit1")
GGJT_ALIGNMENT = 32
_ROWS_PER_CHUNK = 1 << 16


def _tnode(ctx: CheckContext, t):
    return ctx.node(t.node_path) if t.node_path else None


class GgjtAlignment(Rule):
    """What it checks: in a GGJT file every tensor's data starts at a multiple of 32.

    Why it matters: GGJT exists to be mmap-able; llama.cpp's GGJT loader skips to the
    next multiple of 32 before each tensor, so data written elsewhere is read shifted.

    Example: a GGJT v3 tensor whose data starts at offset 0x1234.

    Reference: the GGUF spec (ggml docs/gguf.md), "Historical State of Affairs" ("GGJT: Aligns the
    tensors"); llama.cpp's pre-GGUF loader (llama.cpp before GGUF landed, 2023-08-21).
    """
    code, name, severity, family = "GG901", "ggjt-alignment", Severity.ERROR, "legacy"
    summary = "GGJT tensor data is not aligned to 32 bytes."
    formats = ("ggjt",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        align = ctx.mf.alignment or GGJT_ALIGNMENT
        for t in ctx.mf.tensors:
            if t.offset % align:
                yield ctx.at(_tnode(ctx, t), f"tensor {quoted(t.name)} data starts at {t.offset:#x}, "
                             f"not a multiple of {align}")


class LegacyTypeInvalid(Rule):
    """What it checks: each tensor's type code exists in the file's format version.

    Why it matters: the same code meant different block layouts in different versions;
    rwkv.cpp version 100 has no K-quants and version 101 has no Q4_1_O/Q4_2/Q4_3, so such a
    code means a corrupt file or one written by a fork.

    Example: an rwkv.cpp version-101 file with data type 5 (Q4_2).

    Reference: rwkv.cpp's rwkv_file_format.inc and rwkv_model_loading.inc (types by file version);
    llama.cpp's pre-GGUF loader (llama.cpp before GGUF landed, 2023-08-21) (ggml type ids of 2023).
    """
    code, name, severity, family = "GG902", "legacy-type-invalid", Severity.ERROR, "legacy"
    summary = "A tensor type code is not valid in this format version."
    formats = LEGACY_FORMATS

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        errors = ctx.mf.extra.get("type_errors") or {}
        by_name = {t.name: t for t in ctx.mf.tensors}
        for name, why in errors.items():
            t = by_name.get(name)
            yield ctx.at(_tnode(ctx, t) if t else None, f"tensor {quoted(name)}: {why}")
        stopped = ctx.mf.extra.get("damage_type_error")
        if stopped and ctx.mf.damage is not None:
            d = ctx.mf.damage
            yield ctx.at(d, f"{stopped}: the type's block size is unknown, so the record's data "
                         "size and every later record cannot be read", start=d.start, end=d.start)


class Bit1Size(Rule):
    """What it checks: a BIT1 file is exactly as long as its header implies.

    Why it matters: BIT1 has no directory; every section's place follows from the
    header.  Extra bytes mean the header and the data disagree (a wrong dimension), so
    every section after the first wrong one is read from the wrong place.

    Example: a BIT1 file with 8 bytes appended.

    Reference: the BIT1 exporter (the v18 BitLM checkpoint export script).
    """
    code, name, severity, family = "GG903", "bit1-size", Severity.ERROR, "legacy"
    summary = "The BIT1 file size differs from the size its header implies."
    formats = ("bit1",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if ctx.mf.damage is not None or not ctx.mf.tensors:
            return              # a short file is damage, reported by the structure rules
        end = max(t.offset + t.nbytes for t in ctx.mf.tensors)
        size = ctx.mf.source.size
        if size != end:
            yield ctx.at(None, f"file is {size} bytes, the header implies {end} "
                         f"({size - end:+d} bytes)", start=min(end, size), end=max(end, size))


class Bit1PaddingBits(Rule):
    """What it checks: the unused high bits of each BIT1 sign row's last word are zero.

    Why it matters: rows are padded to whole 64-bit words; the exporter writes zeros
    there.  Set padding bits mean the row length in the header is wrong (or the data
    damaged) - a reader trusting them would count signs that do not exist.

    Example: ``d_model = 100``; bits 100..127 of a row are not all zero.

    Reference: the BIT1 exporter (the v18 BitLM checkpoint export script).
    """
    code, name, severity, family = "GG904", "bit1-padding-bits", Severity.ERROR, "legacy"
    summary = "Unused padding bits of a BIT1 sign row are set."
    formats = ("bit1",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        size = ctx.mf.source.size
        for t in ctx.mf.tensors:
            if t.layout != "BIT1_PACKED" or len(t.shape) < 2 or t.shape[0] % 64 == 0:
                continue
            words = -(-t.shape[0] // 64)
            row_bytes = 8 * words
            rows = t.shape[1]
            if t.offset + rows * row_bytes > size:
                continue
            mask = np.uint64(~((1 << (t.shape[0] % 64)) - 1) & 0xFFFFFFFFFFFFFFFF)
            for r0 in range(0, rows, _ROWS_PER_CHUNK):
                r1 = min(rows, r0 + _ROWS_PER_CHUNK)
                start = t.offset + r0 * row_bytes
                buf = np.frombuffer(ctx.mf.source.read(start, t.offset + r1 * row_bytes), dtype="<u8")
                tails = buf.reshape(r1 - r0, words)[:, -1]
                bad = np.flatnonzero(tails & mask)
                if bad.size:
                    row = r0 + int(bad[0])
                    at = t.offset + row * row_bytes + row_bytes - 8
                    yield ctx.at(None, f"tensor {quoted(t.name)} row {row}: padding bits above bit "
                                 f"{t.shape[0] % 64} of the last word are set", start=at, end=at + 8)
                    break


_MAX_LISTED = 8


def _listed(names: list[str]) -> str:
    shown = ", ".join(quoted(n) for n in names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


class MissingTensors(Rule):
    """What it checks: every tensor record the header's hyper-parameters require is in
    the file - for llama.cpp files the token embeddings, the final norm, the output and
    nine tensors per layer; for ggml's gpt-2/gpt-j examples their named tensors per
    layer; for rwkv.cpp the parameters of the detected RWKV version for every block; for
    chatglm.cpp the tensors of the model type for every layer.

    Why it matters: these formats declare no tensor count - records run to the end of
    the file - so a file cut exactly at a record boundary parses cleanly.  The loaders
    look every tensor up by name and refuse a missing one: llama.cpp's legacy loader
    ("llama.cpp: tensor '%s' is missing from model"), rwkv.cpp's ``rwkv_set_params``
    ("Model parameter %s not found", rwkv_model_loading.inc), chatglm.cpp's model constructors (state_dict lookup);
    ggml's gpt-2 example leaves an unloaded tensor uninitialised.  A llama.cpp file with
    no tensor records at all is a vocabulary-only file (the loader's ``vocab_only`` mode):
    a warning.  A negative layer count, or one the file cannot hold, is an error.

    llama.cpp's legacy loader and ggml's gpt-2/gpt-j examples also refuse a tensor they
    do not look up ("file contained more tensors than expected", "unknown tensor '%s' in
    model file"), so for those an unexpected name is an error as well.

    Example: an rwkv.cpp file with n_layer = 4 whose records stop after block 2.

    Reference: ggscope.facts.legacy_tensors, which restates llama.cpp's pre-GGUF loader (llama.cpp before
    GGUF landed, 2023-08-21);
    ggml's examples/gpt-2/main.cpp; rwkv.cpp's rwkv_file_format.inc and rwkv_model_loading.inc;
    chatglm.cpp's chatglm.cpp (ModelLoader).
    """
    code, name, severity, family = "GG905", "missing-tensors", Severity.ERROR, "legacy"
    summary = "A tensor the header's hyper-parameters require is not in the file."
    formats = ("ggml", "ggmf", "ggjt", "rwkv.cpp", "chatglm.cpp")

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        if mf.damage is not None:
            return              # the parse stopped early: the damage rules report it
        req = legacy_tensors.required_tensors(mf)
        if req is None:
            return
        loader, names = req.loader, req.names
        if names is None:
            yield ctx.at(None, f"the header claims {req.n_layer} layers of {req.per_layer} tensors each; "
                         f"a {mf.source.size}-byte file cannot hold their records ({loader} refuses it)",
                         start=0, end=0)
            return
        if not mf.tensors and req.vocab_only_ok:
            yield ctx.at(None, f"no tensor records: a vocabulary-only file; {loader} loads it only "
                         "for its vocabulary", severity=Severity.WARNING,
                         start=mf.source.size, end=mf.source.size)
            return
        have = {t.name for t in mf.tensors}
        missing = [n for n in names if n not in have]
        if missing:
            yield ctx.at(None, f"{len(missing)} of the {len(names)} tensors the header requires are "
                         f"missing ({loader} refuses the file): {_listed(missing)}",
                         start=mf.source.size, end=mf.source.size)
        if req.refuses_unknown:
            known = set(names) | set(req.optional)
            extra = [t for t in mf.tensors if t.name and t.name not in known]
            if extra:
                yield ctx.at(_tnode(ctx, extra[0]), f"{len(extra)} tensor(s) the header does not call for "
                             f"({loader} refuses them): {_listed([t.name for t in extra])}")


class TensorDims(Rule):
    """What it checks: each tensor record's number of dimensions is one its loader reads:
    1 or 2 for llama.cpp files and ggml's gpt-2/gpt-j examples, 1 to 3 for rwkv.cpp, 1 to 4
    for chatglm.cpp.

    Why it matters: llama.cpp's legacy loader refuses others ("tensor '%s' should not be
    %u-dimensional"); the gpt-2 example reads the dimensions into ``int32_t ne[2]`` (more
    overflow it); rwkv.cpp's ``rwkv_fread_tensor_header`` refuses dim_count outside 1..3
    ("Tensor has an invalid shape"); chatglm.cpp checks ``0 < ndim <= 4``.  Zero bytes
    appended to a file read as records with zero dimensions.

    Example: zero bytes appended to an rwkv.cpp file (a record with dim_count 0).

    Reference: llama.cpp's pre-GGUF loader (llama.cpp before GGUF landed, 2023-08-21); ggml's
    examples/gpt-2/main.cpp; rwkv.cpp's rwkv_file_format.inc and rwkv_model_loading.inc; chatglm.cpp's
    chatglm.cpp (ModelLoader).
    """
    code, name, severity, family = "GG906", "legacy-tensor-dims", Severity.ERROR, "legacy"
    summary = "A tensor record has a number of dimensions its loader refuses."
    formats = ("ggml", "ggmf", "ggjt", "rwkv.cpp", "chatglm.cpp")

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        allowed = legacy_tensors.allowed_dims(ctx.mf)
        if allowed is None:
            return
        loader, lo, hi = allowed
        bad = [t for t in ctx.mf.tensors if not lo <= len(t.shape) <= hi]
        for t in bad[:_MAX_LISTED]:
            yield ctx.at(_tnode(ctx, t), f"tensor {quoted(t.name)} has {len(t.shape)} dimensions; {loader} "
                         f"reads only {lo} to {hi}")
        if len(bad) > _MAX_LISTED:
            yield ctx.at(None, f"{len(bad)} tensor records in all have a number of dimensions {loader} "
                         "refuses", start=0, end=0)


class TensorNames(Rule):
    """What it checks: every tensor record has a non-empty name, and no name repeats.

    Why it matters: the loaders find tensors by name.  An empty name matches nothing
    (llama.cpp's legacy loader then refuses the file: "file contained more tensors than
    expected"); a repeated name is taken as a second shard by llama.cpp's loader and
    silently overwrites the first in rwkv.cpp's and chatglm.cpp's maps, so the file is
    not the model its writer made.  Bytes appended to a file read as nameless records.

    Example: 64 zero bytes appended to a GGMF file.

    Reference: llama.cpp's pre-GGUF loader (llama.cpp before GGUF landed, 2023-08-21); ggml's
    examples/gpt-2/main.cpp; rwkv.cpp's rwkv_file_format.inc and rwkv_model_loading.inc; chatglm.cpp's
    chatglm.cpp (ModelLoader).
    """
    code, name, severity, family = "GG907", "legacy-tensor-name", Severity.ERROR, "legacy"
    summary = "A tensor record's name is empty or repeats an earlier one."
    formats = ("ggml", "ggmf", "ggjt", "rwkv.cpp", "chatglm.cpp")

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        seen: dict[str, int] = {}
        empty = 0
        for i, t in enumerate(ctx.mf.tensors):
            if not t.name:
                empty += 1
                if empty <= _MAX_LISTED:
                    yield ctx.at(_tnode(ctx, t), f"tensor record {i} has an empty name")
            elif t.name in seen:
                yield ctx.at(_tnode(ctx, t), f"tensor record {i} repeats the name {quoted(t.name)} of record "
                             f"{seen[t.name]}")
            else:
                seen[t.name] = i
        if empty > _MAX_LISTED:
            yield ctx.at(None, f"{empty} tensor records have an empty name in all", start=0, end=0)


_RWKV_TYPE_COUNT = 17             # rwkv.cpp TYPE_COUNT since 2025-01-09 (rwkv.cpp's rwkv_file_format.inc)
_RWKV_UNSUPPORTED = (4, 5, 6)     # Q4_1_O, Q4_2, Q4_3: rwkv_type_to_ggml = TYPE_UNKNOWN
_RWKV_UNQUANTIZED = (0, 1)


class RwkvHeader(Rule):
    """What it checks: an rwkv.cpp header's data type is one rwkv.cpp loads (below 17, not
    4, 5 or 6), a version-100 file's header type is not quantized, and ``emb.weight`` has
    the shape [n_embed, n_vocab] the header gives.

    Why it matters: ``rwkv_fread_file_header`` refuses a data type out of range or one it
    no longer supports (Q4_1_O, Q4_2, Q4_3), and a version-100 file with a quantized
    header type (those blocks changed layout in version 101); after reading the records
    the loader checks the embedding: 2 dimensions, ne[0] = n_embed, ne[1] = n_vocab
    ("Unexpected dimension of embedding matrix").

    Example: an rwkv.cpp file whose header data_type is 17.

    Reference: rwkv.cpp rwkv_file_format.inc ``rwkv_fread_file_header``,
    rwkv_model_loading.inc.
    """
    code, name, severity, family = "GG908", "rwkv-header", Severity.ERROR, "legacy"
    summary = "The rwkv.cpp header's data type or embedding shape is one rwkv.cpp refuses."
    formats = ("rwkv.cpp",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        mf = ctx.mf
        dtype = mf.metadata.get("rwkv_cpp.data_type")
        node = ctx.node("data_type")
        if isinstance(dtype, int):
            if dtype >= _RWKV_TYPE_COUNT:
                yield ctx.at(node, f"header data type {dtype} is out of range (rwkv.cpp knows 0 to "
                             f"{_RWKV_TYPE_COUNT - 1})")
            elif dtype in _RWKV_UNSUPPORTED:
                yield ctx.at(node, f"header data type {dtype} ({mf.extra.get('data_type_name')}) is no "
                             "longer supported by rwkv.cpp")
            elif mf.version == 100 and dtype not in _RWKV_UNQUANTIZED:
                yield ctx.at(node, f"a version-100 file with quantized header data type {dtype}: rwkv.cpp "
                             "refuses the old quantized layouts (requantize from FP16 to version 101)")
        n_embed, n_vocab = mf.metadata.get("rwkv_cpp.n_embed"), mf.metadata.get("rwkv_cpp.n_vocab")
        emb = next((t for t in mf.tensors if t.name == "emb.weight"), None)
        if emb is not None and n_embed is not None and n_vocab is not None \
                and tuple(emb.shape) != (n_embed, n_vocab):
            yield ctx.at(_tnode(ctx, emb), f"emb.weight has shape {list(emb.shape)}, the header needs "
                         f"[{n_embed}, {n_vocab}] (n_embed, n_vocab)")


_BIT1_VERSION = 1
_BIT1_LOGIT_SCALE_M = 1 << 16


class Bit1Header(Rule):
    """What it checks: a BIT1 header has version 1 and logit_scale_M = 65536; its widths
    (vocab_size, d_model, n_heads, d_ff) are not zero (a warning).

    Why it matters: the exporter writes exactly ``VERSION = 1`` and ``M_SCALE = 1 << 16``
    (the integer logit scale the C inference divides by); any other value is a file the
    C reader was not written for.  A zero width makes empty sections - a consistent file
    that holds no model.

    Example: a BIT1 file with version 2, or logit_scale_M 0.

    Reference: the BIT1 exporter (the v18 BitLM checkpoint export script: ``MAGIC``, ``VERSION``, ``M_SCALE``).
    """
    code, name, severity, family = "GG909", "bit1-header", Severity.ERROR, "legacy"
    summary = "The BIT1 header's version or logit scale differs from what the exporter writes."
    formats = ("bit1",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        md = ctx.mf.metadata
        v = md.get("bit1.version")
        if v is not None and v != _BIT1_VERSION:
            yield ctx.at(ctx.node("header/version"), f"version {v}; the BIT1 exporter writes {_BIT1_VERSION}")
        m = md.get("bit1.logit_scale_M")
        if m is not None and m != _BIT1_LOGIT_SCALE_M:
            yield ctx.at(ctx.node("header/logit_scale_m"),
                         f"logit_scale_M = {m}; the BIT1 exporter writes {_BIT1_LOGIT_SCALE_M} (1 << 16)")
        for key in ("vocab_size", "d_model", "n_heads", "d_ff"):
            if md.get(f"bit1.{key}") == 0:
                yield ctx.at(ctx.node(f"header/{key}"), f"{key} is 0: the sections it sizes are empty",
                             severity=Severity.WARNING)


from ggscope.rules.legacy_shapes import LegacyTensorShape  # noqa: E402 - GG910 lives beside this module

RULES = [GgjtAlignment, LegacyTypeInvalid, Bit1Size, Bit1PaddingBits, MissingTensors, TensorDims,
         TensorNames, RwkvHeader, Bit1Header, LegacyTensorShape]
