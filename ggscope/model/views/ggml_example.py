"""The ``ModelFile`` view of the unversioned GGML files of ggml's example programs.

Why: gpt-2, gpt-j (and starcoder, Cerebras-GPT) files share llama.cpp's 2023 magic but
not its header; their quantized blocks changed twice while the tensor type codes stayed
the same, so only the header ``ftype`` (``ggml_ftype + 1000 * qntvr``) tells which block
layout a tensor uses. This module reads the Node tree of ``formats/ggml_example.ksy``.

Contract of ``build(root, source, path, damage=None)`` (``damage``: the engine's error
node, found from the tree when not given):

* ``format`` "ggml", ``version`` 0 (the container has no version word), ``endian``
  "little", no alignment.
* ``metadata`` under ``ggml.`` with the examples' ``hparams`` names: ``n_vocab``,
  ``n_ctx``, ``n_embd``, ``n_head``, ``n_layer``, ``n_rot`` (gpt-j style only) and
  ``ftype`` (the stored word), plus ``ggml.qntvr`` = ftype // 1000 (quantization
  version) and ``ggml.file_type`` = ftype % 1000 (``ggml_ftype``). The vocabulary as
  ``tokenizer.ggml.tokens`` (UTF-8 with replacement; exact bytes in
  ``extra["token_bytes"]``); these files have no scores.
* ``tensors``: type and layout from ``resolve_type("ggml-example", qntvr, code)``:
  qntvr 0 gives the pre-2023-05-14 layouts ("Q4_0_QNT0", "Q4_2", "Q8_0_QNT0", ...),
  qntvr 1 the 2023-05-14 ones ("Q4_0_QNT1", "Q8_0_QNT0"), qntvr 2 today's.
* ``extra``: ``hparams_style`` ("gpt-2" or "gpt-j"), ``layout_era``, ``token_bytes``,
  ``type_errors``. ``damage``: the first error node.
"""
from __future__ import annotations

from ggscope.model.modelfile import ModelFile
from ggscope.ksy.node import Node, find
from ggscope.source.mapped import ByteSource
from ggscope.model.views.damage import first_error
from ggscope.model.views.ggml_llama import hparam_metadata, read_tensors, tokenizer_metadata, vocabulary

__all__ = ["HPARAMS", "LAYOUT_ERAS", "build"]

FORMAT = "ggml"
PREFIX = "ggml."
HPARAMS = ("n_vocab", "n_ctx", "n_embd", "n_head", "n_layer", "n_rot", "ftype")
# qntvr -> block layouts of quantized tensors (legacy-formats.md §1.3)
LAYOUT_ERAS = {
    0: "quantization version 0 (before 2023-05-14): interleaved nibbles, f32 scales in "
       "Q4_0/Q4_1/Q8_0; Q4_2, Q4_3",
    1: "quantization version 1 (2023-05-14 -> 05-19): split-halves nibbles, f32 scales in "
       "Q4_0/Q4_1/Q8_0",
    2: "quantization version 2 (2023-05-20 on): current ggml layouts",
}


def build(root: Node, source: ByteSource, path: str, damage: Node | None = None) -> ModelFile:
    """The ModelFile view of a parsed ggml-example GGML file (see the module docstring)."""
    metadata, types, nodes = hparam_metadata(root, HPARAMS, PREFIX, "int32")
    ftype = metadata.get(PREFIX + "ftype")
    qntvr = None if ftype is None else ftype // 1000
    if ftype is not None:
        metadata[PREFIX + "qntvr"] = qntvr
        metadata[PREFIX + "file_type"] = ftype % 1000
        types[PREFIX + "qntvr"] = types[PREFIX + "file_type"] = "int32"
        nodes[PREFIX + "qntvr"] = nodes[PREFIX + "file_type"] = "hparams/ftype"
    mf = ModelFile(path=path, format=FORMAT, version=0, endian="little", metadata=metadata,
                   tensors=[], root=root, source=source, damage=damage or first_error(root),
                   metadata_types=types, metadata_nodes=nodes)

    tokens, _ = vocabulary(find(root, "vocab"))
    tokenizer_metadata(tokens, None, metadata, types, nodes, "vocab")

    type_errors = read_tensors(root, "ggml-example", qntvr, ftype, mf)
    style = None
    if find(root, "hparams/n_embd") is not None:
        style = "gpt-j" if PREFIX + "n_rot" in metadata else "gpt-2"
    mf.extra.update(hparams_style=style, token_bytes=tokens, type_errors=type_errors,
                    layout_era=LAYOUT_ERAS.get(qntvr, f"unknown quantization version {qntvr}"))
    return mf
