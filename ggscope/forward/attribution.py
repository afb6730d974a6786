"""Which tensors' quantization costs the most: each one given back the base's weights.

Why: the KL-divergence report says how much a quantization costs over a text; the
people choosing per-tensor types (llama-quantize's --tensor-type, llm-compressor's
recipes) ask which tensors that cost comes from.  The direct answer is an ablation:
for every quantized weight matrix, evaluate the first chunk once more with that one
tensor replaced by the base file's (dequantized) weights, and measure how much of
the mean KL divergence against the base goes away.  Issue 28 item 3.

Contract: ``rank_tensors(w_quant, w_base, kld, progress=None) -> tuple[TensorGain, ...]``,
best first, where ``kld(weights)`` is the first chunk's mean KLD against the base
(``perplexity`` gives it): ``recovered`` = KLD(quant) - KLD(quant with this tensor
from the base), in nats (positive: replacing it helps).  Only the transformer decoders' weights are swapped
(one chunk pass each: the cost is the number of weight matrices times one chunk);
matrices whose shapes differ between the files are skipped.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = ["TensorGain", "rank_tensors", "LAYER_TENSORS"]

# Layer field -> GGUF tensor name (blk.{i}.<name>.weight).
LAYER_TENSORS = {"wq": "attn_q", "wk": "attn_k", "wv": "attn_v", "wqkv": "attn_qkv",
                 "wo": "attn_output", "wq_a": "attn_q_a", "wq_b": "attn_q_b",
                 "wkv_a": "attn_kv_a_mqa", "wkv_b": "attn_kv_b", "gate": "ffn_gate",
                 "up": "ffn_up", "down": "ffn_down", "gate_exps": "ffn_gate_exps",
                 "up_exps": "ffn_up_exps", "down_exps": "ffn_down_exps",
                 "gate_shexp": "ffn_gate_shexp", "up_shexp": "ffn_up_shexp",
                 "down_shexp": "ffn_down_shexp"}


@dataclass(frozen=True)
class TensorGain:
    name: str
    kld: float                      # mean KLD of the first chunk with this tensor from the base
    recovered: float                # KLD(quant) - kld


def _swaps(w_quant, w_base):
    """(name, weights with that one tensor from the base) for every swappable tensor."""
    for il, (Lq, Lb) in enumerate(zip(w_quant.layers, w_base.layers)):
        for field, gguf in LAYER_TENSORS.items():
            a, b = getattr(Lq, field, None), getattr(Lb, field, None)
            if a is None or b is None or a.shape != b.shape:
                continue
            layers = list(w_quant.layers)
            layers[il] = replace(Lq, **{field: b})
            yield f"blk.{il}.{gguf}.weight", replace(w_quant, layers=tuple(layers))
    tied = w_quant.output is w_quant.embed
    if w_quant.embed.shape == w_base.embed.shape:
        swap = {"embed": w_base.embed}
        if tied and w_base.output is w_base.embed:
            swap["output"] = w_base.embed
        yield "token_embd.weight", replace(w_quant, **swap)
    if not tied and w_quant.output.shape == w_base.output.shape:
        yield "output.weight", replace(w_quant, output=w_base.output)


def rank_tensors(w_quant, w_base, kld: Callable[[object], float],
                 progress: Callable[[int, int], None] | None = None) -> tuple[TensorGain, ...]:
    """Every swappable tensor ranked by ``kld(w_quant) - kld(w_quant with it from the base)``."""
    swaps = list(_swaps(w_quant, w_base))
    start = kld(w_quant)
    out = []
    for n, (name, weights) in enumerate(swaps):
        if progress is not None:
            progress(n, len(swaps))
        k = kld(weights)
        out.append(TensorGain(name, k, start - k))
    return tuple(sorted(out, key=lambda g: -g.recovered))
