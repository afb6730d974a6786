"""The sizes every RWKV version reads first, and the LayerNorm epsilon they share.

Why a module of its own: both the rwkv.cpp files' forward pass (``rwkv4``) and the
GGUF name table (``rwkv_gguf``) need them, and ``rwkv4`` picks ``rwkv_gguf``'s mapper
for GGUF files; with the sizes here neither imports the other both ways.
"""
from __future__ import annotations

from dataclasses import dataclass

from ggscope.forward import WeightError, WeightMapper

__all__ = ["LN_EPS", "Sizes"]

LN_EPS = 1e-5          # LayerNorm eps of every RWKV version (rwkv.cpp rwkv_layer_norm)


@dataclass(frozen=True)
class Sizes:
    """The file's own sizes (rwkv.cpp header) plus the FFN width from ffn.key."""
    n_vocab: int
    n_embed: int
    n_layer: int
    n_ffn: int

    @classmethod
    def read(cls, mapper: WeightMapper) -> "Sizes":
        own = getattr(mapper, "sizes", None)        # GGUF files: rwkv_gguf.GGUFMapper
        if own is not None:
            return own()
        meta = mapper.model.metadata
        try:
            n_vocab = int(meta["rwkv_cpp.n_vocab"])
            n_embed = int(meta["rwkv_cpp.n_embed"])
            n_layer = int(meta["rwkv_cpp.n_layer"])
        except (KeyError, TypeError, ValueError) as exc:
            raise WeightError(f"{mapper.model.path}: rwkv.cpp header size missing or "
                              f"not a number: {exc}") from None
        if min(n_vocab, n_embed, n_layer) <= 0:
            raise WeightError(f"{mapper.model.path}: header sizes must be positive, got "
                              f"n_vocab={n_vocab} n_embed={n_embed} n_layer={n_layer}")
        n_layer = mapper.blocks(n_layer, lambda i: f"blocks.{i}.ln1.weight", "rwkv_cpp.n_layer")
        key_ne = mapper.ne("blocks.0.ffn.key.weight")
        n_ffn = key_ne[1] if len(key_ne) == 2 else 0
        return cls(n_vocab, n_embed, n_layer, n_ffn)
