"""The ``ModelFile`` view of llama.cpp's pre-GGUF files: unversioned GGML, GGMF v1, GGJT v1-v3.

Why: these three containers hold the same things (seven hyper-parameters, a vocabulary,
tensor records) and every consumer wants them as format-neutral metadata and tensors.
This module reads the Node tree that ``formats/ggml_llama.ksy`` produced and nothing
else. ``ggml_example`` reuses the tensor and vocabulary helpers, since ggml's example
programs write the same tensor records.

Contract of ``build(root, source, path, damage=None)`` (``damage``: the engine's error
node, found from the tree when not given):

* ``format`` "ggml" (unversioned, magic bytes "lmgg"), "ggmf" or "ggjt"; ``version``
  the container version (0 for unversioned GGML); ``endian`` "little"; ``alignment`` 32
  for GGJT, else None.
* ``metadata`` under ``<format>.`` with llama.cpp's ``llama_hparams`` names: ``n_vocab``,
  ``n_embd``, ``n_mult``, ``n_head``, ``n_layer``, ``n_rot``, ``ftype`` (the stored
  ``llama_ftype`` integer). The vocabulary as ``tokenizer.ggml.tokens`` (str, decoded
  as UTF-8 with replacement) and, for GGMF/GGJT, ``tokenizer.ggml.scores`` (float32
  array); the exact token bytes are in ``extra["token_bytes"]``.
* ``tensors``: one ``TensorInfo`` per fully parsed record, in file order, shape in ggml
  order as stored. Type and layout come from ``ggml_types.resolve_type``: quantized
  tensors of GGML/GGMF, GGJT v1 and v2 get their historical layouts ("Q4_0_QNT0",
  "Q4_1_QNT1", "Q4_2", ...), never today's. A code the era does not define keeps
  ``type`` = "TYPE_<code>" and an empty ``layout``; ``extra["type_errors"]`` says why.
* ``extra``: ``layout_era`` (a sentence naming the block layouts of this file),
  ``token_bytes``, ``type_errors``. ``damage``: the first error node; everything parsed
  before it is kept.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ggscope.facts.ggml_types import resolve_type
from ggscope.model.modelfile import ModelFile, TensorInfo
from ggscope.ksy.node import Node, find
from ggscope.source.mapped import ByteSource
from ggscope.model.views.damage import first_error, parsed

__all__ = ["HPARAMS", "MAGIC_FORMATS", "LAYOUT_ERAS", "build", "tensor_from_record",
           "read_tensors", "hparam_metadata", "vocabulary", "tokenizer_metadata", "node_int"]

# hyper-parameter names in file order (llama.cpp's llama_hparams, legacy-formats.md §1.2)
HPARAMS = ("n_vocab", "n_embd", "n_mult", "n_head", "n_layer", "n_rot", "ftype")
# magic number -> ModelFile.format
MAGIC_FORMATS = {0x67676D6C: "ggml", 0x67676D66: "ggmf", 0x67676A74: "ggjt"}
# (format, version) -> which block layouts quantized tensors use (legacy-formats.md §3.3)
LAYOUT_ERAS = {
    ("ggml", 0): "2023-03 llama.cpp layouts: Q4_0/Q4_1 with f32 scales, interleaved nibbles "
                 "(row-split Q4_0 on 2023-03-10, row-split Q4_1 before 2023-03-17)",
    ("ggmf", 1): "2023-03 llama.cpp layouts: Q4_0/Q4_1 with f32 scales, interleaved nibbles",
    ("ggjt", 1): "pre-#1405 layouts: interleaved nibbles, f32 scales in Q4_0/Q4_1/Q8_0; Q4_2, Q4_3",
    ("ggjt", 2): "#1405 layouts: split-halves nibbles, still f32 scales in Q4_0/Q4_1/Q8_0",
    ("ggjt", 3): "current ggml layouts (f16 scales, split-halves nibbles)",
}


def node_int(node: Node | None) -> int | None:
    """The integer value of a parsed leaf, or None when absent or damaged."""
    if node is None or node.error is not None or node.end is None or node.value is None:
        return None
    return int(node.value)


def hparam_metadata(root: Node, keys: Iterable[str], prefix: str, ktype: str
                    ) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """(metadata, metadata_types, metadata_nodes) of the readable ``hparams/<key>`` fields."""
    metadata: dict[str, Any] = {}
    types: dict[str, str] = {}
    nodes: dict[str, str] = {}
    for key in keys:
        value = node_int(find(root, f"hparams/{key}"))
        if value is not None:
            metadata[prefix + key] = value
            types[prefix + key] = ktype
            nodes[prefix + key] = f"hparams/{key}"
    return metadata, types, nodes


def read_tensors(root: Node, fmt: str, version: int | None, header_ftype: int | None,
                 mf: ModelFile, **record: Any) -> dict[str, str]:
    """Append the TensorInfo of each ``tensors`` record to ``mf.tensors`` up to the first
    damaged one (``record``: ``tensor_from_record``'s dims/reverse/code_field); returns
    the type errors met (tensor name -> message)."""
    type_errors: dict[str, str] = {}
    records = find(root, "tensors")
    for rec in (records.children if records is not None else ()):
        info = tensor_from_record(rec, fmt, version, header_ftype, mf, type_errors, **record)
        if info is None:
            code = node_int(rec.child(record.get("code_field", "ttype")))
            if code is not None:
                try:
                    resolve_type(fmt, version, code, header_ftype=header_ftype)
                except ValueError as exc:   # the record stopped because its type has no size
                    mf.extra["damage_type_error"] = f"{rec.path}: {exc}"
            break
        mf.tensors.append(info)
    return type_errors


def tensor_from_record(rec: Node, fmt: str, version: int | None, header_ftype: int | None,
                       mf: ModelFile, type_errors: dict[str, str],
                       dims: str = "ne", reverse: bool = False, code_field: str = "ttype"
                       ) -> TensorInfo | None:
    """The TensorInfo of a fully parsed tensor record, or None when it is damaged.

    ``dims`` names the dimension array; ``reverse`` turns a PyTorch-order shape into ggml
    order. Type and layout: ``resolve_type(fmt, version, code, header_ftype=...)``.
    """
    if not parsed(rec):
        return None
    name, shape, code, data = (rec.child(n) for n in ("name", dims, code_field, "data"))
    if not all(parsed(n) for n in (name, shape, code, data)):
        return None
    label = str(name.value)
    type_code = int(code.value)
    try:
        type_name, layout = resolve_type(fmt, version, type_code, header_ftype=header_ftype)
    except ValueError as exc:
        type_errors[label] = str(exc)
        type_name, layout = f"TYPE_{type_code}", ""
    ne = tuple(int(d) for d in shape.value)
    if reverse:
        ne = ne[::-1]
    return TensorInfo(name=label, shape=ne, type=type_name, offset=data.start,
                      nbytes=data.end - data.start, layout=layout, type_id=type_code,
                      node_path=rec.path, file=mf)


def vocabulary(vocab: Node | None) -> tuple[list[bytes], np.ndarray | None]:
    """Token bytes and (when the entries carry one) scores of a vocabulary array node.

    Only complete entries are returned: a damaged vocabulary yields the tokens before
    the damage.
    """
    if vocab is None:
        return [], None
    raw_all = getattr(vocab.value, "raw", None)
    if vocab.error is None and vocab.end is not None and callable(raw_all):
        values = vocab.value                      # the engine's lazy StringArray
        scores = values.fields.get("score")
        return ([values.raw(i) for i in range(len(values))],
                None if scores is None else np.asarray(scores, dtype=np.float32))
    tokens: list[bytes] = []
    scores: list[float] = []
    has_scores = False
    for entry in vocab.children:
        if not parsed(entry):
            break
        text = entry.child("text")
        if not parsed(text):
            break
        tokens.append(bytes(text.value))
        score = entry.child("score")
        if score is not None and parsed(score):
            has_scores = True
            scores.append(float(score.value))
    if has_scores and len(scores) == len(tokens):
        return tokens, np.asarray(scores, dtype=np.float32)
    return tokens, None


def tokenizer_metadata(tokens: list[bytes], scores: np.ndarray | None,
                       metadata: dict[str, Any], types: dict[str, str],
                       nodes: dict[str, str], vocab_path: str) -> None:
    """Put the vocabulary into ``tokenizer.ggml.tokens`` / ``tokenizer.ggml.scores``."""
    if not tokens:
        return
    metadata["tokenizer.ggml.tokens"] = [t.decode("utf-8", "replace") for t in tokens]
    types["tokenizer.ggml.tokens"] = "array[string]"
    nodes["tokenizer.ggml.tokens"] = vocab_path
    if scores is not None:
        metadata["tokenizer.ggml.scores"] = scores
        types["tokenizer.ggml.scores"] = "array[float32]"
        nodes["tokenizer.ggml.scores"] = vocab_path


def build(root: Node, source: ByteSource, path: str, damage: Node | None = None) -> ModelFile:
    """The ModelFile view of a parsed GGML/GGMF/GGJT llama.cpp file (see the module doc)."""
    magic = node_int(find(root, "magic"))
    fmt = MAGIC_FORMATS.get(magic, "ggml") if magic is not None else "ggml"
    version = node_int(find(root, "version")) if fmt != "ggml" else 0
    prefix = fmt + "."
    metadata, types, nodes = hparam_metadata(root, HPARAMS, prefix, "int32" if fmt != "ggjt" else "uint32")
    mf = ModelFile(path=path, format=fmt, version=version if version is not None else 0,
                   endian="little", metadata=metadata, tensors=[], root=root, source=source,
                   alignment=32 if fmt == "ggjt" else None, damage=damage or first_error(root),
                   metadata_types=types, metadata_nodes=nodes)

    tokens, scores = vocabulary(find(root, "vocab"))
    tokenizer_metadata(tokens, scores, metadata, types, nodes, "vocab")

    type_errors = read_tensors(root, fmt, version, metadata.get(prefix + "ftype"), mf)
    mf.extra.update(layout_era=LAYOUT_ERAS.get((fmt, version), f"unknown {fmt} version {version}"),
                    token_bytes=tokens, type_errors=type_errors)
    return mf
