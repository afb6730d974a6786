"""The ``ModelFile`` view of a chatglm.cpp file (untagged v0, versions 1 and 2).

Why: chatglm.cpp files carry a model type, a version-dependent config record, a
tokenizer blob and tensors with PyTorch-order shapes aligned to 16 bytes; consumers want
the same format-neutral metadata and tensor list as for every other format. This module
reads the Node tree of ``formats/chatglm_cpp.ksy`` (and the tokenizer bytes that tree
points at) and nothing else.

Contract of ``build(root, source, path, damage=None)`` (``damage``: the engine's error
node, found from the tree when not given):

* ``format`` "chatglm.cpp", ``version`` the header version (1 or 2; 0 for the untagged
  files of June 2023), ``endian`` "little", ``alignment`` 16.
* ``metadata`` under ``chatglm_cpp.``: ``model_type`` (the stored integer; absent in v0
  files) and every config field with chatglm.cpp's own name for that record
  (``vocab_size``, ``hidden_size``, ``num_attention_heads``, ``num_hidden_layers`` or, in
  v0, ``num_layers``, ``intermediate_size``, ``norm_eps``, ``rope_theta``, token ids,
  ``dtype`` ...), ``chatglm_cpp.tokenizer`` (the blob, a zero-copy uint8 array).
  The tokenizer's vocabulary as ``tokenizer.ggml.tokens`` and ``tokenizer.ggml.scores``
  (SentencePiece pieces and scores, or ChatGLM4's tiktoken tokens by rank); a blob that
  does not decode leaves them out and says why in ``extra["tokenizer_error"]``.
* ``tensors``: shapes reversed into ggml order; types from
  ``resolve_type("chatglm.cpp", ...)`` (today's layouts: chatglm.cpp quantizes with the
  post-May-2023 formats). ``extra["type_errors"]`` for codes chatglm.cpp never writes.
* ``extra``: ``model_type_name``, ``config_record`` ("v0", "V1", "V1_GQA", "V2"),
  ``tokenizer_kind`` ("sentencepiece" / "tiktoken"), ``token_bytes``, ``type_errors``.
  ``damage``: the first error node.
"""
from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

import numpy as np

from ggscope.model.modelfile import ModelFile
from ggscope.ksy.node import Node, find
from ggscope.source.mapped import ByteSource
from ggscope.model.views.damage import first_error
from ggscope.model.views.ggml_llama import node_int, read_tensors

__all__ = ["FORMAT", "PREFIX", "MODEL_TYPES", "CONFIG_RECORDS", "build",
           "sentencepiece_pieces", "tiktoken_tokens"]

FORMAT = "chatglm.cpp"
PREFIX = "chatglm_cpp."
ALIGNMENT = 16
# chatglm.cpp ModelType (legacy-formats.md §7.2)
MODEL_TYPES = {1: "CHATGLM", 2: "CHATGLM2", 3: "CHATGLM3", 4: "CHATGLM4",
               1024: "BAICHUAN7B", 1025: "BAICHUAN13B", 1280: "INTERNLM"}
# the spec's config_layout instance -> the record's name in chatglm.h (legacy-formats.md §7.3)
CONFIG_RECORDS = {0: "v0", 1: "V1", 2: "V1_GQA", 3: "V2"}
_FLOAT_FIELDS = frozenset({"norm_eps", "rope_theta"})


class TokenizerError(ValueError):
    """The tokenizer blob does not decode as the format says it should."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise TokenizerError(f"truncated varint at byte {pos} of the tokenizer")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one protobuf message; bytes values as slices."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise TokenizerError(f"unsupported protobuf wire type {wire} at byte {pos}")
        if pos > len(buf):
            raise TokenizerError("a protobuf field runs past the end of the tokenizer")
        yield field, wire, value


def sentencepiece_pieces(blob: bytes) -> tuple[list[bytes], np.ndarray]:
    """Pieces and scores of a serialized SentencePiece ``ModelProto``.

    ``ModelProto.pieces`` is field 1 (repeated ``SentencePiece``: piece = field 1,
    string; score = field 2, float). Other fields (trainer and normalizer specs) are
    skipped. Raises ``TokenizerError`` when the bytes are not such a message.
    """
    pieces: list[bytes] = []
    scores: list[float] = []
    for field, wire, value in _fields(blob):
        if field != 1:
            continue
        if wire != 2:
            raise TokenizerError("ModelProto.pieces is not a length-delimited message")
        piece, score = b"", 0.0
        for f2, w2, v2 in _fields(value):
            if f2 == 1 and w2 == 2:
                piece = bytes(v2)
            elif f2 == 2 and w2 == 5:
                score = struct.unpack("<f", v2)[0]
        pieces.append(piece)
        scores.append(score)
    if not pieces:
        raise TokenizerError("no SentencePiece pieces in the tokenizer blob")
    return pieces, np.asarray(scores, dtype=np.float32)


def tiktoken_tokens(blob: bytes) -> list[bytes]:
    """Tokens of ChatGLM4's tiktoken vocabulary ("base64(token) rank" per line), by rank."""
    by_rank: dict[int, bytes] = {}
    for line_no, line in enumerate(blob.split(b"\n"), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise TokenizerError(f"tiktoken line {line_no} does not hold 'token rank'")
        try:
            by_rank[int(parts[1])] = base64.b64decode(parts[0], validate=True)
        except (ValueError, binascii.Error) as exc:
            raise TokenizerError(f"tiktoken line {line_no}: {exc}") from None
    if sorted(by_rank) != list(range(len(by_rank))):
        raise TokenizerError("tiktoken ranks are not 0..n-1")
    return [by_rank[i] for i in range(len(by_rank))]


def build(root: Node, source: ByteSource, path: str, damage: Node | None = None) -> ModelFile:
    """The ModelFile view of a parsed chatglm.cpp file (see the module docstring)."""
    metadata: dict[str, Any] = {}
    types: dict[str, str] = {}
    nodes: dict[str, str] = {}
    model_type = node_int(find(root, "model_type"))
    version = node_int(find(root, "version"))
    if model_type is not None:
        metadata[PREFIX + "model_type"] = model_type
        types[PREFIX + "model_type"] = "int32"
        nodes[PREFIX + "model_type"] = "model_type"
    config = find(root, "config")
    for field in (config.children if config is not None else ()):
        if field.error is not None or field.end is None or field.value is None:
            continue
        key = PREFIX + field.name
        is_float = field.name in _FLOAT_FIELDS
        metadata[key] = float(field.value) if is_float else int(field.value)
        types[key] = "float32" if is_float else "int32"
        nodes[key] = field.path
    mf = ModelFile(path=path, format=FORMAT, version=version if version is not None else 0,
                   endian="little", metadata=metadata, tensors=[], root=root, source=source,
                   alignment=ALIGNMENT, damage=damage or first_error(root), metadata_types=types,
                   metadata_nodes=nodes)

    tokens, kind, why = _tokenizer(find(root, "tokenizer"), source, model_type, metadata, types, nodes)

    type_errors = read_tensors(root, FORMAT, version, metadata.get(PREFIX + "dtype"), mf,
                               dims="shape", reverse=True, code_field="dtype")
    layout = node_int(find(root, "config_layout"))
    mf.extra.update(model_type_name=MODEL_TYPES.get(model_type) if model_type is not None else None,
                    config_record=CONFIG_RECORDS.get(layout) if layout is not None else None,
                    tokenizer_kind=kind, tokenizer_error=why, token_bytes=tokens,
                    type_errors=type_errors)
    return mf


def _tokenizer(node: Node | None, source: ByteSource, model_type: int | None,
               metadata: dict[str, Any], types: dict[str, str], nodes: dict[str, str]
               ) -> tuple[list[bytes], str | None, str | None]:
    """Blob and vocabulary metadata; returns (token bytes, kind, why decoding failed)."""
    if node is None or node.error is not None or node.end is None:
        return [], None, None
    blob_view = source.view(node.start, node.end)
    metadata[PREFIX + "tokenizer"] = blob_view
    types[PREFIX + "tokenizer"] = "array[uint8]"
    nodes[PREFIX + "tokenizer"] = node.path
    blob = blob_view.tobytes()
    scores: np.ndarray | None = None
    try:
        if model_type == 4:
            kind = "tiktoken"
            tokens = tiktoken_tokens(blob)
        else:
            kind = "sentencepiece"
            tokens, scores = sentencepiece_pieces(blob)
    except TokenizerError as exc:
        return [], kind, str(exc)
    metadata["tokenizer.ggml.tokens"] = [t.decode("utf-8", "replace") for t in tokens]
    types["tokenizer.ggml.tokens"] = "array[string]"
    nodes["tokenizer.ggml.tokens"] = node.path
    if scores is not None:
        metadata["tokenizer.ggml.scores"] = scores
        types["tokenizer.ggml.scores"] = "array[float32]"
        nodes["tokenizer.ggml.scores"] = node.path
    return tokens, kind, None
