"""The format-neutral view of a parsed model file: what every later feature reads.

``ggscope.open(path)`` detects the format, runs the spec engine over the file and
returns a ``ModelFile``.  Each format contributes one small *view builder* that maps
its node tree onto this contract:

* ``format``: "gguf", "ggml", "ggmf", "ggjt", "rwkv.cpp", "chatglm.cpp", "bit1"
* ``version`` (int), ``endian`` ("little" / "big")
* ``metadata``: key -> Python scalar, str, list, or numpy array (numeric arrays);
  legacy formats put their hyperparameters under ``<format>.`` (``ggjt.n_embd``)
* ``tensors``: list of ``TensorInfo`` in file order; ``tensor(name)`` looks one up
* ``root``: the Node tree; ``damage``: the first error node, or None

``TensorInfo.shape`` is in ggml order (``ne[0]`` first).  ``dequantize()`` returns
float32 with numpy shape ``reversed(shape)``, so its flat order is ggml's element
order.  Opening never reads tensor data: data is touched only by ``raw()``,
``dequantize()`` and ``stats()``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ggscope.ksy.node import Node
from ggscope.source.ranges import read_range

if TYPE_CHECKING:
    from ggscope.source.mapped import ByteSource

__all__ = ["ModelFile", "TensorInfo"]


@dataclass(frozen=True, eq=False)
class TensorInfo:
    name: str
    shape: tuple[int, ...]        # ggml order: ne[0] (the row length) first
    type: str                     # ggml type name as ggml spells it in enum ggml_type: "F16", "Q4_K"
    offset: int                   # absolute file offset of the first data byte
    nbytes: int                   # bytes of data the type and shape imply
    layout: str                   # block layout key in ggml_types.LAYOUTS ("Q4_0", "Q4_0_QNT0", ...)
    type_id: int | None = None    # the integer the file stores, in the file's own numbering
    node_path: str = ""           # path of the tensor's info node in the tree
    file: "ModelFile | None" = field(default=None, repr=False)

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def np_shape(self) -> tuple[int, ...]:
        return tuple(reversed(self.shape))

    def raw(self) -> np.ndarray:
        """The tensor's bytes as a uint8 array (clipped to the file): read from a file on
        disk, never taken from its map, so a file that shrinks meanwhile raises
        ``FileChanged`` instead of SIGBUS; a view of an in-memory or remote buffer."""
        assert self.file is not None
        return read_range(self.file, self.offset, self.nbytes)

    def dequantize(self) -> np.ndarray:
        """All elements as float32, numpy shape ``reversed(shape)`` (ggml element order)."""
        from ggscope.quant import dequantize_tensor  # declared exception: the convenience method imports its engine
        return dequantize_tensor(self)

    def stats(self, **kwargs: Any):
        """Streaming statistics (count, min, max, mean, std, abs_mean, zeros, nan, inf, histogram, ...)."""
        from ggscope.stats.tensors import tensor_stats  # declared exception: the convenience method imports its engine
        return tensor_stats(self, **kwargs)


@dataclass(eq=False)
class ModelFile:
    path: str
    format: str
    version: int
    endian: str
    metadata: dict[str, Any]
    tensors: list[TensorInfo]
    root: Node
    source: "ByteSource"
    alignment: int | None = None          # data alignment where the format has one
    data_offset: int | None = None        # start of the tensor data section, where there is one
    damage: Node | None = None            # first error node of the tree, if the parse stopped early
    metadata_types: dict[str, str] = field(default_factory=dict)   # key -> the file's value type name
    metadata_nodes: dict[str, str] = field(default_factory=dict)   # key -> node path of its entry
    extra: dict[str, Any] = field(default_factory=dict)            # format-specific facts (e.g. rwkv arch)
    _by_name: dict[str, TensorInfo] = field(default_factory=dict, repr=False)

    def tensor(self, name: str) -> TensorInfo:
        if not self._by_name:
            self._by_name = {t.name: t for t in reversed(self.tensors)}
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor named {name!r}") from None

    @property
    def file_size(self) -> int:
        return self.source.size

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> "ModelFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
