"""Split models: the shards ``<prefix>-0000k-of-0000n.gguf`` seen as one model.

llama.cpp's ``gguf-split`` writes every metadata key into the first shard and only
``split.no`` / ``split.count`` / ``split.tensors.count`` into the others; its model
loader starts from the first shard, derives the others' names with
``llama_split_path`` (``%s-%05d-of-%05d.gguf``) and gathers all tensors into one map,
each read from its own file.  ``open_model`` does the same from any shard, local or
remote: the result is the first shard's ``ModelFile`` (metadata, tree, bytes) whose
``tensors`` are every shard's tensors in shard order, each ``TensorInfo.file`` its own
shard, ``extra["shards"]`` the shard paths, ``extra["shard_given"]`` the 1-based number
of the shard ``path`` named and ``extra["shard_sizes"]`` each shard's size in bytes.  The set's consistency is a validator
rule (GG803); this module only finds and opens.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from ggscope.core.errors import UnreadableFile

if TYPE_CHECKING:      # shard_paths alone (the browser's header peek) loads no numpy
    from ggscope.model.modelfile import ModelFile

__all__ = ["SHARD_RE", "shard_paths", "open_model"]

SHARD_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")
MAX_SHARDS = 256          # bound the work a claimed shard count can cause


def shard_paths(path: str) -> list[str] | None:
    """Every shard path of the set ``path`` names (URLs too, ``hf://...@REV`` keeps its
    revision), or None when ``path`` is not a shard name."""
    base, rev = path, ""
    if path.startswith("hf://"):
        head, _, last = path.rpartition("/")
        if "@" in last:
            last, _, r = last.partition("@")
            base, rev = f"{head}/{last}", f"@{r}"
    m = SHARD_RE.match(base)
    if m is None:
        return None
    count = int(m.group("count"))
    if not 1 <= int(m.group("no")) <= count:
        return None
    return [f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf{rev}" for i in range(1, count + 1)]


def open_model(path: str) -> ModelFile:
    """The whole model ``path`` belongs to (see the module docstring); a file that is no
    shard, or the only one, opens as itself."""
    from ggscope.model.open import open as open_file  # the spec engine: shard_paths alone (validate, rules) needs none of it
    paths = shard_paths(path)
    if paths is None or len(paths) < 2:
        return open_file(path)
    if len(paths) > MAX_SHARDS:
        raise UnreadableFile(f"{path}: a set of {len(paths)} shards is more than ggscope opens ({MAX_SHARDS})")
    shards: list[ModelFile] = []
    for i, p in enumerate(paths, 1):
        try:
            shards.append(open_file(p))
        except UnreadableFile as exc:
            raise UnreadableFile(f"shard {i} of {len(paths)} of the split model: {exc}") from None
    first = shards[0]
    tensors = [t for s in shards for t in s.tensors]
    given = paths.index(path) + 1 if path in paths else 1
    extra = {**first.extra, "shards": paths, "shard_given": given, "shard_sizes": [s.source.size for s in shards]}
    return dataclasses.replace(first, tensors=tensors, extra=extra, _by_name={})
