"""Tensor hashes and manifests, compatible with llama.cpp's ``llama-gguf-hash``.

Layer beside ``stats`` (above ``model``): it reads tensor data, draws nothing.
``digests`` is the table of hash algorithms (names, line order, UUIDv5 namespace);
``windows`` streams tensor data in bounded windows from disk, memory or HTTP ranges;
``engine`` hashes a file or a split set (``hash_model``); ``manifest`` parses manifest
lines and judges a file against them exactly as ``llama-gguf-hash --check`` does, plus
the split-set verdict (missing, extra, changed shard).
"""
from __future__ import annotations

__all__ = ["ALGOS", "hash_model", "Manifest"]


def __getattr__(name: str):
    import importlib
    home = {"ALGOS": "digests", "hash_model": "engine", "Manifest": "manifest"}.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"ggscope.hash.{home}"), name)
