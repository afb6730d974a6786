"""The ``ModelFile`` view of an rwkv.cpp file (file versions 100 and 101).

Why: rwkv.cpp files carry four header words and a list of named parameters; every
consumer wants them as format-neutral metadata and tensors.  This module reads the
Node tree that ``formats/rwkv_cpp.ksy`` produced and nothing else.

Contract of ``build(root, source, path, damage=None)`` (``damage``: the engine's
error node when the caller has it; else it is found in the tree):

* ``format`` "rwkv.cpp", ``version`` the file version (100 or 101), ``endian`` "little".
* ``metadata`` under ``rwkv_cpp.`` with rwkv.cpp's own names: ``n_vocab``, ``n_embed``,
  ``n_layer``, ``data_type`` (the stored integer, rwkv.cpp's numbering),
  ``file_version``, ``arch_version`` (``ggscope.facts.rwkv_arch``: "4", "5.1", "5.2", "6",
  "7"; absent when no parameter parsed) and, for v5 and later, ``head_count`` and
  ``head_size`` as rwkv.cpp derives them.
* ``tensors``: one ``TensorInfo`` per fully parsed parameter, in file order, shape in
  ggml order as stored.  Types come from ``ggml_types.resolve_type("rwkv.cpp", version,
  code)``: in a version-100 file quantized tensors get the historical layouts
  (``Q4_0_RWKV100``, ``Q4_1_O``, ...), never today's.  A code that no version of the
  format defines keeps ``type`` = rwkv.cpp's name (or ``RWKV_TYPE_<n>``) and an empty
  ``layout``; the validator reports it.
* ``extra``: ``arch_version``, ``data_type_name`` and, only when some tensor has one,
  ``type_errors`` (tensor name -> why its type code is not valid in this file version).
* ``damage``: the first error node (a truncated or inconsistent file); tensors before
  it are kept.
"""
from __future__ import annotations

from typing import Any

from ggscope.facts.ggml_types import RWKV_TYPES, resolve_type
from ggscope.model.modelfile import ModelFile, TensorInfo
from ggscope.ksy.node import Node, find
from ggscope.facts.rwkv_arch import arch_version, head_geometry
from ggscope.source.mapped import ByteSource
from ggscope.model.views.damage import first_error

__all__ = ["FORMAT", "PREFIX", "HEADER_KEYS", "build"]

FORMAT = "rwkv.cpp"
PREFIX = "rwkv_cpp."
# metadata key (rwkv.cpp's name) -> node path of the header word that holds it
HEADER_KEYS = {"n_vocab": "n_vocab", "n_embed": "n_embed", "n_layer": "n_layer",
               "data_type": "data_type", "file_version": "version"}


def _int(node: Node | None) -> int | None:
    if node is None or node.error is not None or node.value is None:
        return None
    return int(node.value)


def _type_name(code: int) -> str:
    row = RWKV_TYPES.get(code)
    return row[0] if row else f"RWKV_TYPE_{code}"


def build(root: Node, source: ByteSource, path: str, damage: Node | None = None) -> ModelFile:
    """The ModelFile view of a parsed rwkv.cpp file (see the module docstring)."""
    version = _int(find(root, "version"))
    metadata: dict[str, Any] = {}
    types: dict[str, str] = {}
    nodes: dict[str, str] = {}
    for key, node_path in HEADER_KEYS.items():
        value = _int(find(root, node_path))
        if value is not None:
            metadata[PREFIX + key] = value
            types[PREFIX + key] = "u32"
            nodes[PREFIX + key] = node_path
    mf = ModelFile(path=path, format=FORMAT, version=version if version is not None else 0,
                   endian="little", metadata=metadata, tensors=[], root=root, source=source,
                   damage=damage if damage is not None else first_error(root),
                   metadata_types=types, metadata_nodes=nodes)

    type_errors: dict[str, str] = {}
    params = find(root, "parameters")
    for i, p in enumerate(params.children if params is not None else ()):
        info = _tensor(p, i, version, mf, type_errors)
        if info is not None:
            mf.tensors.append(info)

    shapes = [(t.name, t.shape) for t in mf.tensors]
    arch = arch_version(shapes) if shapes else None
    if arch is not None:
        metadata[PREFIX + "arch_version"] = arch
        types[PREFIX + "arch_version"] = "str"
    heads = head_geometry(shapes, arch) if arch is not None else None
    if heads is not None:
        for key, value in zip(("head_count", "head_size"), heads):
            metadata[PREFIX + key] = value
            types[PREFIX + key] = "u32"
    header_type = metadata.get(PREFIX + "data_type")
    mf.extra.update(arch_version=arch,
                    data_type_name=None if header_type is None else _type_name(header_type))
    if type_errors:
        mf.extra["type_errors"] = type_errors
    return mf


def _tensor(p: Node, i: int, version: int | None, mf: ModelFile,
            type_errors: dict[str, str]) -> TensorInfo | None:
    """The TensorInfo of parameter record ``p``, or None when it did not parse fully."""
    key, shape, code, data = (p.child(n) for n in ("key", "shape", "data_type", "data"))
    if p.error is not None or p.end is None or any(
            n is None or n.error is not None or n.end is None for n in (key, shape, code, data)):
        stored = _int(code)
        if stored is not None:
            try:
                resolve_type(FORMAT, version, stored)
            except ValueError as exc:   # the record stopped because its type has no size
                mf.extra["damage_type_error"] = f"{p.path}: {exc}"
        return None
    name = str(key.value)
    type_code = int(code.value)
    try:
        type_name, layout = resolve_type(FORMAT, version, type_code)
    except ValueError as exc:
        type_errors[name] = str(exc)
        type_name, layout = _type_name(type_code), ""
    return TensorInfo(name=name, shape=tuple(int(d) for d in shape.value), type=type_name,
                      offset=data.start, nbytes=data.end - data.start, layout=layout,
                      type_id=type_code, node_path=p.path, file=mf)
