"""Hash a model file's tensors as ``llama-gguf-hash`` does; a split set shard by shard.

Source: llama.cpp as vendored in llama-cpp-python 0.3.36, examples/gguf-hash/gguf-hash.cpp:
for each tensor in index order, a hash of its ``ggml_nbytes`` bytes per chosen algorithm
(unless ``--no-layer``), and per algorithm one running hash over all tensors' bytes in
that order (the "whole data" hash, printed under the file's name).  ggscope hashes every
format it opens the same way; for GGUF the result is the tool's, digit for digit.

Split sets (``<prefix>-0000k-of-0000n.gguf``): llama.cpp hashes one file at a time, so a
set is hashed shard by shard - each shard's tensors and whole-data hash under the
shard's own name, exactly the lines the tool prints for that shard - and a shard that
cannot be opened is recorded as missing rather than hiding the others.

Contract: ``hash_file(mf, algos, per_tensor=, threads=)`` -> ``FileHash``;
``hash_set(path, ...)`` -> ``SetHash`` (one ``FileHash`` per shard present, the missing
ones with their reason); ``tensor_digests(t, algos)`` hashes one tensor (the browser's
"hashes on demand").  Data streams through ``windows.stream`` (bounded memory);
progress goes through ``ggscope.core.progress``.
"""
from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ggscope.core import progress
from ggscope.core.errors import GGScopeError
from ggscope.hash.digests import ALGOS, by_name
from ggscope.hash.windows import stream
from ggscope.core.errors import DamagedFile

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile, TensorInfo

__all__ = ["TensorHash", "FileHash", "SetHash", "hash_file", "hash_set", "tensor_digests", "order"]

PARALLEL_MIN = 1 << 20        # pieces at least this big are hashed by several threads at once


@dataclass(frozen=True)
class TensorHash:
    name: str                                   # the tensor's name (surrogateescape for non-UTF-8 bytes)
    digests: tuple[tuple[str, str], ...]        # (algorithm, hex) in print order


@dataclass(frozen=True)
class FileHash:
    path: str                                   # as given (the tool prints it as given)
    tensors: tuple[TensorHash, ...]             # empty with per_tensor=False
    whole: tuple[tuple[str, str], ...]          # (algorithm, hex) over all tensor data, print order
    nbytes: int                                 # tensor bytes hashed


@dataclass(frozen=True)
class SetHash:
    paths: tuple[str, ...]                      # every file of the set (one for a plain file)
    files: tuple[FileHash, ...]                 # those that could be read, in set order
    missing: tuple[tuple[str, str], ...]        # (path, reason) of shards that could not be opened

    @property
    def is_split(self) -> bool:
        return len(self.paths) > 1


def order(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` deduplicated in the tool's print order."""
    chosen = set(names)
    unknown = chosen - {a.name for a in ALGOS}
    if unknown:
        raise ValueError(f"unknown hash algorithm {sorted(unknown)[0]}")
    return tuple(a.name for a in ALGOS if a.name in chosen)


def _short(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def hash_file(mf: "ModelFile", algos: Sequence[str], *, per_tensor: bool = True, threads: int = 1,
              tensors: "Sequence[TensorInfo] | None" = None) -> FileHash:
    """The tool's hashes of ``mf``'s tensors (default: those stored in ``mf`` itself)."""
    names = order(algos)
    tensors = [t for t in mf.tensors if t.file is None or t.file is mf] if tensors is None else list(tensors)
    layer_algos = [by_name(a) for a in names if by_name(a).per_tensor] if per_tensor else []
    whole = {a: by_name(a).new() for a in names}
    results: list[TensorHash] = []
    total = sum(t.nbytes for t in tensors)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ggscope-hash") if threads > 1 else None
    cur, layer = -1, []

    def finish() -> None:
        if cur >= 0 and per_tensor:
            results.append(TensorHash(tensors[cur].name,
                                      tuple((a.name, a.hexdigest(h)) for a, h in zip(layer_algos, layer))))
    try:
        with progress.task(f"hashing {_short(mf.path)}", total) as bar:
            for i, mv in stream(mf, tensors, threads=threads):
                if i != cur:
                    finish()
                    cur, layer = i, [a.new() for a in layer_algos]
                hashers = [*layer, *whole.values()]
                if pool is not None and len(mv) >= PARALLEL_MIN and len(hashers) > 1:
                    list(pool.map(lambda h: h.update(mv), hashers))
                else:
                    for h in hashers:
                        h.update(mv)
                bar.advance(len(mv))
                del mv
            finish()
    finally:
        if pool is not None:
            pool.shutdown()
    return FileHash(mf.path, tuple(results), tuple((a, by_name(a).hexdigest(h)) for a, h in whole.items()),
                    total)


def tensor_digests(t: "TensorInfo", algos: Sequence[str] = ("xxh64", "sha1", "sha256")) -> tuple[tuple[str, str], ...]:
    """One tensor's digests (the lines ``llama-gguf-hash`` prints for it), in print order."""
    assert t.file is not None
    return hash_file(t.file, algos, tensors=[t]).tensors[0].digests


def hash_set(path: str, algos: Sequence[str], *, per_tensor: bool = True, threads: int = 1) -> SetHash:
    """Hash ``path``, or, when it names a shard of a split set, every shard of the set.

    A plain file that cannot be opened raises (``UnreadableFile``, ``UnknownFormat``);
    a shard that cannot be opened is listed in ``missing``.  A damaged file raises
    ``DamagedFile``: the tool refuses it too (``gguf_init_from_file`` fails).
    """
    from ggscope.model.open import open as open_file  # start-up: numpy only when used
    from ggscope.model.split import MAX_SHARDS, shard_paths  # start-up: numpy only when used
    paths = shard_paths(path) or [path]
    if len(paths) > MAX_SHARDS:
        raise GGScopeError(f"{path}: a set of {len(paths)} shards is more than ggscope opens ({MAX_SHARDS})")
    files: list[FileHash] = []
    missing: list[tuple[str, str]] = []
    for p in paths:
        try:
            mf = open_file(p)
        except GGScopeError as exc:
            if len(paths) == 1:
                raise
            missing.append((p, str(exc)))
            continue
        try:
            _refuse_damage(mf)
            files.append(hash_file(mf, algos, per_tensor=per_tensor, threads=threads))
        finally:
            mf.close()
    return SetHash(tuple(paths), tuple(files), tuple(missing))


def _refuse_damage(mf: "ModelFile") -> None:
    if mf.damage is not None:
        d = mf.damage
        raise DamagedFile(mf.path, d.start, d.path or "/", f"{d.error}; its tensors cannot be hashed "
                          "(`ggscope validate` lists every finding)")
    end = mf.file_size
    for t in mf.tensors:
        if t.offset < 0 or t.offset + t.nbytes > end:
            raise DamagedFile(mf.path, t.offset, t.node_path or "/", f"tensor {t.name} claims bytes "
                              f"[{t.offset}, {t.offset + t.nbytes}) of a {end}-byte file; its data cannot be hashed")
