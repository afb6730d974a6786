"""The files the browser shows bytes of: one, or every shard of a split model.

Why: ``model.split.open_model`` gives a split model as its first shard's ``ModelFile``
whose ``tensors`` come from every shard, each ``TensorInfo.file`` its own shard (as
llama.cpp's loader reads each tensor from its own file).  The hex view and the
structure tree show one file's bytes and nodes at a time; a tensor of shard 3 must be
shown in shard 3's bytes at its offset in that file, never at that offset in shard 1.

Contract: ``shard_views(mf)`` is one ``ShardView`` per file, in shard order - for a
file that is not split, the file itself.  Each holds the shard's own ``ModelFile``
(its tree, its ``ByteSource``), the label the tree and detail pane show, and the maps
from a node path of that shard's tree to its metadata key and to its tensor.  A shard
whose tensors the model does not list (a first shard of metadata only is the model
file itself) is still its own view.  ``shard_of(views, path)`` is the index of the
shard a file path names (a finding's ``path``), 0 when none does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ggscope.tui.format import file_text

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["ShardView", "shard_views", "shard_of"]


@dataclass(frozen=True)
class ShardView:
    mf: ModelFile                                   # the shard's own file: tree, bytes, metadata
    label: str                                      # "shard 2 of 3 · name-00002-of-00003.gguf", or ""
    meta_by_path: dict[str, str] = field(default_factory=dict)      # node path -> metadata key
    tensor_by_path: dict[str, Any] = field(default_factory=dict)    # node path -> TensorInfo


def shard_views(mf: ModelFile) -> tuple[ShardView, ...]:
    paths = mf.extra.get("shards") or []
    files: dict[str, ModelFile] = {}
    for t in mf.tensors:
        if t.file is not None:
            files.setdefault(t.file.path, t.file)
    if len(paths) < 2:
        paths, files = [mf.path], {mf.path: mf}
    files[paths[0]] = mf          # the first shard is the model file itself (its tree and metadata)
    views = []
    for i, path in enumerate(paths):
        shard = files.get(path)
        if shard is None:         # no tensor names it: nothing of it was opened
            continue
        label = f"shard {i + 1} of {len(paths)} · {file_text(Path(path).name)}" if len(paths) > 1 else ""
        views.append(ShardView(
            shard, label,
            {p: key for key, p in shard.metadata_nodes.items()},
            {t.node_path: t for t in mf.tensors
             if t.node_path and (t.file.path if t.file is not None else mf.path) == path}))
    return tuple(views)


def shard_of(views: tuple[ShardView, ...], path: str | None) -> int:
    for i, view in enumerate(views):
        if path is not None and view.mf.path == path:
            return i
    return 0
