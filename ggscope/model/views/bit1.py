"""The ``ModelFile`` view of a BIT1 packed 1-bit model file.

Why: a BIT1 file has no tensor directory; its sections are fixed by the header.  The
spec (``formats/bit1.ksy``) names every section; this module turns those nodes into
metadata and tensors so that the validator, stats and the TUI treat BIT1 like the other
formats.  It reads only the Node tree.

Contract of ``build(root, source, path, damage=None)`` (``damage``: the engine's
error node when the caller has it; else it is found in the tree):

* ``format`` "bit1", ``version`` the header's version word, ``endian`` "little".
* ``metadata`` under ``bit1.`` with the exporter's names: ``version``, ``vocab_size``,
  ``d_model``, ``n_layers``, ``n_heads``, ``d_ff``, ``max_seq_len``, ``logit_scale_M``.
* ``tensors`` in file order, named after the exporter's modules::

      embedding.weight_bits                       BIT1_PACKED [d_model, vocab_size]
      blocks.{l}.attn.alibi_slopes                I32         [n_heads]
      blocks.{l}.attn.{q,k,v,o}_proj.weight_bits  BIT1_PACKED [d_model, d_model]
      blocks.{l}.attn.{q,k,v,o}_proj.int_threshold I32        [d_model]
      blocks.{l}.ffn.{gate,up}.weight_bits        BIT1_PACKED [d_model, d_ff]
      blocks.{l}.ffn.{gate,up}.int_threshold      I32         [d_ff]
      blocks.{l}.ffn.down.weight_bits             BIT1_PACKED [d_ff, d_model]
      blocks.{l}.ffn.down.int_threshold           I32         [d_model]
      out_codebook.weight_bits                    BIT1_PACKED [d_model, vocab_size]
      int_out_bias                                I64         [vocab_size]

  Shapes are in ggml order (``ne[0]`` = elements per row).  The integer sections are
  what ggml calls I32 and I64 (two's complement, little-endian), so they use those
  types.  The sign-bit sections are *not* any ggml type: each element is one bit, rows
  are padded to whole u64 words, so ``nbytes = 8 * ceil(ne[0] / 64) * ne[1]``.  Calling
  them U8 or I64 would make every consumer decode them wrongly; they get the type and
  layout name ``BIT1_PACKED`` instead (``type_id`` None), which no ggml reader claims.
  Its decoding: element ``j`` of a row is bit ``j % 64`` of word ``j // 64``, bit 1 =
  +1, bit 0 = -1.
* ``damage``: the first error node; sections parsed before it are kept as tensors.
"""
from __future__ import annotations

from typing import Any

from ggscope.model.modelfile import ModelFile, TensorInfo
from ggscope.ksy.node import Node, find
from ggscope.source.mapped import ByteSource
from ggscope.model.views.damage import first_error, parsed

__all__ = ["FORMAT", "PREFIX", "PACKED", "HEADER_KEYS", "build"]

FORMAT = "bit1"
PREFIX = "bit1."
PACKED = "BIT1_PACKED"
# metadata key (the exporter's name) -> (node path, value type)
HEADER_KEYS = {
    "version": ("header/version", "u32"), "vocab_size": ("header/vocab_size", "u32"),
    "d_model": ("header/d_model", "u32"), "n_layers": ("header/n_layers", "u32"),
    "n_heads": ("header/n_heads", "u32"), "d_ff": ("header/d_ff", "u32"),
    "max_seq_len": ("header/max_seq_len", "u32"),
    "logit_scale_M": ("header/logit_scale_m", "i64"),
}
# spec field of a layer -> tensor name stem, and which header widths are (d_in, d_out)
_LINEARS = (("q_proj", "attn.q_proj", "d_model", "d_model"),
            ("k_proj", "attn.k_proj", "d_model", "d_model"),
            ("v_proj", "attn.v_proj", "d_model", "d_model"),
            ("o_proj", "attn.o_proj", "d_model", "d_model"),
            ("gate", "ffn.gate", "d_model", "d_ff"),
            ("up", "ffn.up", "d_model", "d_ff"),
            ("down", "ffn.down", "d_ff", "d_model"))


def build(root: Node, source: ByteSource, path: str, damage: Node | None = None) -> ModelFile:
    """The ModelFile view of a parsed BIT1 file (see the module docstring)."""
    metadata: dict[str, Any] = {}
    types: dict[str, str] = {}
    nodes: dict[str, str] = {}
    for key, (node_path, vtype) in HEADER_KEYS.items():
        node = find(root, node_path)
        if parsed(node):
            metadata[PREFIX + key] = int(node.value)
            types[PREFIX + key] = vtype
            nodes[PREFIX + key] = node_path
    mf = ModelFile(path=path, format=FORMAT, version=metadata.get(PREFIX + "version", 0),
                   endian="little", metadata=metadata, tensors=[], root=root, source=source,
                   damage=damage if damage is not None else first_error(root),
                   metadata_types=types, metadata_nodes=nodes)
    dims = {k: metadata.get(PREFIX + k) for k in ("vocab_size", "d_model", "n_heads", "d_ff")}
    if any(v is None for v in dims.values()):
        return mf

    def add(name: str, node_path: str, shape: tuple[int, ...], ttype: str) -> None:
        node = find(root, node_path)
        if parsed(node):
            mf.tensors.append(TensorInfo(
                name=name, shape=shape, type=ttype, offset=node.start,
                nbytes=node.end - node.start, layout=ttype,
                type_id=None, node_path=node_path, file=mf))

    V, dm, nh, dff = dims["vocab_size"], dims["d_model"], dims["n_heads"], dims["d_ff"]
    width = {"d_model": dm, "d_ff": dff}
    add("embedding.weight_bits", "embedding/words", (dm, V), PACKED)
    layers = find(root, "layers")
    for layer, _ in enumerate(layers.children if layers is not None else ()):
        base, stem = f"layers[{layer}]", f"blocks.{layer}."
        add(stem + "attn.alibi_slopes", base + "/alibi_slopes", (nh,), "I32")
        for field, name, d_in, d_out in _LINEARS:
            add(f"{stem}{name}.weight_bits", f"{base}/{field}/weight_bits/words",
                (width[d_in], width[d_out]), PACKED)
            add(f"{stem}{name}.int_threshold", f"{base}/{field}/int_threshold",
                (width[d_out],), "I32")
    add("out_codebook.weight_bits", "out_codebook/words", (dm, V), PACKED)
    add("int_out_bias", "int_out_bias", (V,), "I64")
    return mf
