"""RWKV v6/v7 in GGUF files, read through the rwkv.cpp forward passes by a name table.

Why: llama.cpp's RWKV graphs (``src/models/rwkv6*.cpp``, ``rwkv7*.cpp``) compute what
rwkv.cpp computes; only the file differs: GGUF names (``blk.N.time_mix_key.weight``
for rwkv.cpp's ``blocks.N.att.key.weight``), hyper-parameters in metadata instead of
a header, a few tensors stored flat instead of per head, and the token-shift mixes
fused in one tensor.  So ``rwkv6.py`` / ``rwkv7.py`` keep asking for rwkv.cpp names and
this mapper answers them from a GGUF file; nothing is computed twice.

The GGUF names are llama.cpp's (``LLM_TENSOR_*`` in ``src/llama-arch.cpp``, gguf-py's
``MODEL_TENSOR``), the sizes the keys llama.cpp reads in ``load_arch_hparams``:
``{arch}.embedding_length``, ``block_count``, ``wkv.head_size`` (n_head = n_embd /
head_size), ``attention.layer_norm_epsilon`` and, for v6,
``rescale_every_n_layers`` (llama.cpp halves the residual after every n-th layer).

Contract: ``GGUFMapper(model, arch)`` is a ``WeightMapper`` whose ``take/has/ne`` accept
rwkv.cpp names; ``sizes()`` gives ``rwkv4.Sizes``; ``heads()`` (n_head, head_size);
``ln_eps`` and ``rescale_every`` the two numbers the graphs take from metadata.
"""
from __future__ import annotations

import numpy as np

from ggscope.forward import WeightError, WeightMapper
from ggscope.forward.rwkv_sizes import LN_EPS, Sizes

__all__ = ["GGUFMapper", "GLOBAL_NAMES", "LAYER_NAMES"]

# rwkv.cpp name -> GGUF name, outside the blocks (blocks.0.ln0 is llama.cpp's token_embd_norm)
GLOBAL_NAMES = {
    "emb.weight": "token_embd.weight",
    "blocks.0.ln0.weight": "token_embd_norm.weight",
    "blocks.0.ln0.bias": "token_embd_norm.bias",
    "ln_out.weight": "output_norm.weight",
    "ln_out.bias": "output_norm.bias",
    "head.weight": "output.weight",
}

# rwkv.cpp name after "blocks.N." -> GGUF name after "blk.N."
LAYER_NAMES = {
    "ln1.weight": "attn_norm.weight", "ln1.bias": "attn_norm.bias",
    "ln2.weight": "attn_norm_2.weight", "ln2.bias": "attn_norm_2.bias",
    "att.key.weight": "time_mix_key.weight",
    "att.value.weight": "time_mix_value.weight",
    "att.receptance.weight": "time_mix_receptance.weight",
    "att.gate.weight": "time_mix_gate.weight",
    "att.output.weight": "time_mix_output.weight",
    "att.ln_x.weight": "time_mix_ln.weight", "att.ln_x.bias": "time_mix_ln.bias",
    "ffn.key.weight": "channel_mix_key.weight",
    "ffn.value.weight": "channel_mix_value.weight",
    "ffn.receptance.weight": "channel_mix_receptance.weight",
    # v6
    "att.time_maa_x": "time_mix_lerp_x.weight",
    "att.time_maa_w": "time_mix_lerp_w.weight", "att.time_maa_k": "time_mix_lerp_k.weight",
    "att.time_maa_v": "time_mix_lerp_v.weight", "att.time_maa_r": "time_mix_lerp_r.weight",
    "att.time_maa_g": "time_mix_lerp_g.weight",
    # GGUF only: the five v6 mixes in one tensor (the converter fuses them; older GGUF
    # files and rwkv.cpp keep them apart)
    "att.time_maa_fused": "time_mix_lerp_fused.weight",
    "att.time_maa_w1": "time_mix_w1.weight", "att.time_maa_w2": "time_mix_w2.weight",
    "att.time_decay": "time_mix_decay.weight",
    "att.time_decay_w1": "time_mix_decay_w1.weight",
    "att.time_decay_w2": "time_mix_decay_w2.weight",
    "att.time_faaaa": "time_mix_first.weight",
    "ffn.time_maa_k": "channel_mix_lerp_k.weight",
    "ffn.time_maa_r": "channel_mix_lerp_r.weight",
    # v7
    "att.x_rwkvag": "time_mix_lerp_fused.weight",
    "att.w0": "time_mix_w0.weight", "att.w1": "time_mix_w1.weight", "att.w2": "time_mix_w2.weight",
    "att.a0": "time_mix_a0.weight", "att.a1": "time_mix_a1.weight", "att.a2": "time_mix_a2.weight",
    "att.v0": "time_mix_v0.weight", "att.v1": "time_mix_v1.weight", "att.v2": "time_mix_v2.weight",
    "att.g1": "time_mix_g1.weight", "att.g2": "time_mix_g2.weight",
    "att.k_k": "time_mix_k_k.weight", "att.k_a": "time_mix_k_a.weight",
    "att.r_k": "time_mix_r_k.weight",
    "ffn.x_k": "channel_mix_lerp_k.weight",
}

# per-head tensors rwkv.cpp stores as [H, S] and llama.cpp's converter flat as [C]
_FLAT = {"att.time_decay", "att.r_k"}


def _split(name: str) -> tuple[str, str]:
    """("blocks.N.", rest) for a block tensor name, else ("", name)."""
    if name.startswith("blocks.") and name not in GLOBAL_NAMES:
        head, _, rest = name[len("blocks."):].partition(".")
        if head.isdigit():
            return f"blocks.{head}.", rest
    return "", name


class GGUFMapper(WeightMapper):
    """A ``WeightMapper`` that takes rwkv.cpp names and reads a GGUF RWKV file."""

    def gguf_name(self, name: str) -> str:
        prefix, rest = _split(name)
        if not prefix:
            return GLOBAL_NAMES.get(name, name)
        return f"blk.{prefix[len('blocks.'):]}{LAYER_NAMES.get(rest, rest)}"

    def has(self, name: str) -> bool:
        return super().has(self.gguf_name(name))

    def stored_name(self, name: str) -> str:
        return self.gguf_name(name)

    def ne(self, name: str) -> tuple[int, ...]:
        return super().ne(self.gguf_name(name))

    def take(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        gguf = self.gguf_name(name)
        if _split(name)[1] in _FLAT:
            flat = super().take(gguf, (int(np.prod(shape)),))
            return flat.reshape(shape)
        return super().take(gguf, shape)

    def _key(self, key: str, default=None):
        value = self.model.metadata.get(f"{self.arch}.{key}", default)
        if value is None:
            raise WeightError(f"{self.model.path}: {self.arch} needs the key {self.arch}.{key} "
                              f"(llama.cpp reads it in load_arch_hparams)")
        return value

    def _int(self, key: str) -> int:
        value = self._key(key)
        try:
            n = int(value)
        except (TypeError, ValueError):
            n = -1
        if n <= 0:
            raise WeightError(f"{self.model.path}: {self.arch}.{key} must be a positive "
                              f"integer, got {value!r}")
        return n

    def sizes(self) -> Sizes:
        emb = self.ne("emb.weight")
        n_embed = self._int("embedding_length")
        if len(emb) != 2 or emb[0] != n_embed:
            raise WeightError(f"{self.model.path}: token_embd.weight has ne {list(emb)}, "
                              f"want [{n_embed}, n_vocab]")
        key_ne = self.ne("blocks.0.ffn.key.weight")
        n_layer = self.blocks(self._int("block_count"), lambda i: f"blocks.{i}.ln1.weight",
                              f"{self.arch}.block_count")
        return Sizes(n_vocab=emb[1], n_embed=n_embed, n_layer=n_layer,
                     n_ffn=key_ne[1] if len(key_ne) == 2 else 0)

    def heads(self) -> tuple[int, int]:
        head_size, n_embed = self._int("wkv.head_size"), self._int("embedding_length")
        if n_embed % head_size:
            raise WeightError(f"{self.model.path}: {self.arch}.embedding_length {n_embed} is "
                              f"not a multiple of {self.arch}.wkv.head_size {head_size}")
        return n_embed // head_size, head_size

    @property
    def ln_eps(self) -> float:
        return float(self.model.metadata.get(f"{self.arch}.attention.layer_norm_epsilon", LN_EPS))

    @property
    def rescale_every(self) -> int:
        return int(self.model.metadata.get(f"{self.arch}.rescale_every_n_layers", 0) or 0)
