"""Reference forward passes: which architectures ggscope can run, and how weights load.

Why: ``ggscope run`` sanity-checks what a file *computes*, not only how it is laid
out.  Every transformer decoder (llama, qwen2/3, gemma/2/3, phi3, starcoder2, deepseek2,
gpt2, granite, olmo2, qwen2moe, ...) runs through one engine, ``decoder.py``, whose per-architecture differences
are a table of traits; so do the RWKV versions (``rwkv.py``, each ``rwkvN.py`` holding
its version's attention), and Mamba has ``mamba.py``.  Every module has the same two
functions::

    load(model: ModelFile, exact=False) -> Weights   # name + shape checked, float32;
                                               # exact: no llama.cpp activation rounding
    forward(weights, tokens, state=None) -> (logits_last[n_vocab] float32, state)

This package keeps the one table of those modules (``ARCHITECTURES``), tells which
architecture a parsed file has (``architecture``), and gives the modules one way of
mapping tensor names to float32 arrays (``WeightMapper``, which decodes through
``loading``: the compiled decoders, no page of the file's map kept).  A file whose architecture
has no module raises ``UnsupportedArchitecture`` naming the supported ones; a file
missing a weight, or carrying one of the wrong shape, raises ``WeightError``.  Both are
``GGScopeError``s with one-line messages, never tracebacks from deep in numpy.

Modules are imported only when used, so importing this package costs nothing.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ggscope.core.errors import FileChanged, GGScopeError
from ggscope.facts.legacy_tensors import LEGACY_FORMATS, LEGACY_NAMES
from ggscope.facts.rwkv_arch import arch_version, head_geometry
from ggscope.forward.matmul import typed as _typed      # imports nothing of this package's __init__

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = [
    "ARCHITECTURES", "Architecture", "UnsupportedArchitecture", "WeightError",
    "TokenError", "WeightMapper", "check_tokens", "architecture", "supported", "module_for", "run",
    "load_weights",
]


@dataclass(frozen=True)
class Architecture:
    name: str                    # what ``architecture(model)`` returns
    module: str                  # module under ggscope.forward implementing it
    formats: tuple[str, ...]     # ModelFile.format values whose tensor names it reads
    summary: str


# The one table of forward passes.  Order is the order ``supported()`` lists them in.
ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture("rwkv4", "rwkv4", ("rwkv.cpp",), "RWKV v4 (rwkv.cpp file)"),
    Architecture("rwkv5.1", "rwkv5", ("rwkv.cpp",), "RWKV v5.1 (rwkv.cpp file)"),
    Architecture("rwkv5.2", "rwkv5", ("rwkv.cpp",), "RWKV v5.2 (rwkv.cpp file)"),
    Architecture("rwkv6", "rwkv6", ("rwkv.cpp", "gguf"), "RWKV v6 'Finch' (rwkv.cpp or GGUF file)"),
    Architecture("rwkv7", "rwkv7", ("rwkv.cpp", "gguf"), "RWKV v7 'Goose' (rwkv.cpp or GGUF file)"),
    Architecture("mamba", "mamba", ("gguf",), "Mamba: selective state-space scan (GGUF)"),
    Architecture("llama", "decoder", ("gguf", "ggml", "ggmf", "ggjt"),
                 "LLaMA-family: GQA, RMSNorm, rotary, SwiGLU, Mixtral-style experts (GGUF; early llama.cpp files)"),
    Architecture("qwen2", "decoder", ("gguf",), "Qwen2: llama with q/k/v biases, NeoX rotary"),
    Architecture("qwen3", "decoder", ("gguf",), "Qwen3: per-head q/k RMSNorm, NeoX rotary"),
    Architecture("qwen3moe", "decoder", ("gguf",), "Qwen3-MoE: qwen3 with softmax top-k experts"),
    Architecture("gemma2", "decoder", ("gguf",),
                 "Gemma 2: sandwich norms, soft-capping, alternating sliding window, GELU"),
    Architecture("gemma3", "decoder", ("gguf",),
                 "Gemma 3: q/k norms, 5:1 sliding window with its own rotary base"),
    Architecture("phi3", "decoder", ("gguf",), "Phi-3: fused QKV and gate/up, NeoX rotary"),
    Architecture("starcoder2", "decoder", ("gguf",), "StarCoder2: LayerNorm, biases, GELU MLP"),
    Architecture("deepseek2", "decoder", ("gguf",),
                 "DeepSeek-V2/V3: latent attention, sigmoid/softmax routing, shared experts"),
    Architecture("gpt2", "decoder", ("gguf", "ggml"), "GPT-2 (GGUF; ggml gpt-2 example files)"),
    Architecture("gemma", "decoder", ("gguf",), "Gemma 1: scaled embeddings, pre-scaled q, GELU, tied output"),
    Architecture("granite", "decoder", ("gguf",),
                 "Granite 3: embedding, residual, attention and logit multipliers"),
    Architecture("granitemoe", "decoder", ("gguf",),
                 "Granite 3 MoE: granite's multipliers, softmax top-k experts, shared expert"),
    Architecture("olmo2", "decoder", ("gguf",), "OLMo 2: post-norms only, full-width q/k RMSNorm"),
    Architecture("qwen2moe", "decoder", ("gguf",),
                 "Qwen2-MoE / Qwen1.5-MoE: softmax top-k experts, sigmoid-gated shared expert"),
    Architecture("mistral3", "decoder", ("gguf",),
                 "Mistral 3 / Ministral 3 (text): llama with attention temperature, YaRN"),
    Architecture("smollm3", "decoder", ("gguf",), "SmolLM3: llama with every 4th layer without rope"),
    Architecture("exaone", "decoder", ("gguf",), "EXAONE 3: llama with NeoX rotary"),
    Architecture("phi2", "decoder", ("gguf",),
                 "Phi-2: LayerNorm, parallel attention and GELU MLP, partial NeoX rotary"),
    Architecture("stablelm", "decoder", ("gguf",),
                 "StableLM 2: LayerNorm, partial rotary; parallel residual and per-head q/k norms (12B)"),
    Architecture("falcon", "decoder", ("gguf",),
                 "Falcon: multi-query attention beside a GELU MLP (parallel residual), LayerNorm"),
    Architecture("qwen2vl", "decoder", ("gguf",), "Qwen2-VL / Qwen2.5-VL text decoder: qwen2 with M-RoPE"),
    Architecture("qwen3vl", "decoder", ("gguf",), "Qwen3-VL text decoder: qwen3 with interleaved M-RoPE"),
    Architecture("qwen3vlmoe", "decoder", ("gguf",),
                 "Qwen3-VL-MoE text decoder: qwen3moe with interleaved M-RoPE"),
    Architecture("starcoder", "decoder", ("gguf",), "StarCoder: gpt2's graph with multi-query attention"),
    Architecture("internlm2", "decoder", ("gguf",), "InternLM2: llama's graph"),
    Architecture("xverse", "decoder", ("gguf",), "XVERSE: llama's graph"),
    Architecture("orion", "decoder", ("gguf",), "Orion: llama with LayerNorms and NeoX rotary"),
    Architecture("seed_oss", "decoder", ("gguf",), "Seed-OSS: q/k/v biases, NeoX rotary"),
    Architecture("arcee", "decoder", ("gguf",), "Arcee AFM: llama with an ungated relu² FFN"),
    Architecture("olmoe", "decoder", ("gguf",), "OLMoE: full-width q/k norms, softmax top-k experts"),
    Architecture("gpt-oss", "decoder", ("gguf",),
                 "gpt-oss: attention sinks, alternating sliding window, biased softmax-weighted experts"),
    Architecture("gptneox", "decoder", ("gguf",),
                 "GPT-NeoX / Pythia: LayerNorm, partial NeoX rotary, parallel residual when the file says"),
    Architecture("glm4", "decoder", ("gguf",), "GLM-4: sandwich norms, fused gate/up, partial rotary"),
    Architecture("exaone4", "decoder", ("gguf",),
                 "EXAONE 4: post-norms only, q/k norms; the 32B's sliding windows, rope on those layers"),
    Architecture("minicpm", "decoder", ("gguf",), "MiniCPM: granite's multipliers, with defaults of its own"),
    Architecture("hunyuan-dense", "decoder", ("gguf",), "Hunyuan dense: q/k norms after NeoX rotary"),
    Architecture("ernie4_5", "decoder", ("gguf",), "ERNIE 4.5 (dense): llama's graph"),
    Architecture("phimoe", "decoder", ("gguf",), "Phi-3.5-MoE: phi3's graph with biased norms and experts"),
    Architecture("nemotron", "decoder", ("gguf",), "Nemotron: LayerNorm, partial NeoX rotary, relu² FFN"),
    Architecture("command-r", "decoder", ("gguf",),
                 "Command R / Aya: parallel residual, LayerNorm without bias, scaled logits"),
    Architecture("cohere2", "decoder", ("gguf",),
                 "Command R7B / Command A: command-r with sliding windows, rope on those layers only"),
    Architecture("glm4moe", "decoder", ("gguf",),
                 "GLM-4.5 / 4.6 / 4.7: sigmoid-routed experts with selection bias, shared expert, "
                 "dense lead layers (next-token-prediction layers skipped)"),
    Architecture("baichuan", "decoder", ("gguf",),
                 "Baichuan / Baichuan 2: rotary for the 7B, ALiBi for the 13B"),
    Architecture("llama4", "decoder", ("gguf",),
                 "Llama 4 (text): chunked attention, every 4th layer without rope, "
                 "sigmoid-weighted inputs to interleaved experts, shared expert"),
    Architecture("ernie4_5-moe", "decoder", ("gguf",),
                 "ERNIE 4.5 MoE: dense lead layers, softmax top-k with selection bias, shared expert"),
    Architecture("hunyuan-moe", "decoder", ("gguf",),
                 "Hunyuan-A13B: q/k norms after NeoX rotary, softmax top-k experts, shared expert"),
    Architecture("dots1", "decoder", ("gguf",),
                 "dots.llm1: q/k norms, dense lead layers, sigmoid routing with selection bias, shared expert"),
    Architecture("bailingmoe", "decoder", ("gguf",),
                 "Ling (Bailing MoE): softmax top-k experts in every layer, shared expert"),
    Architecture("plamo", "decoder", ("gguf",), "PLaMo: SwiGLU FFN beside the attention (parallel residual)"),
    Architecture("apertus", "decoder", ("gguf",), "Apertus: q/k norms, ungated xIELU FFN with per-layer parameters"),
    Architecture("deci", "decoder", ("gguf",),
                 "DeciLM / Llama-3.1-Nemotron 51B, Ultra: per-layer heads and FFN widths, "
                 "layers without attention or FFN"),
)
_BY_NAME = {a.name: a for a in ARCHITECTURES}

class UnsupportedArchitecture(GGScopeError):
    """The file's architecture has no reference forward pass in ggscope."""

    def __init__(self, path: str, arch: str, fmt: str) -> None:
        self.path = path
        self.arch = arch
        self.format = fmt
        listed = ", ".join(f"{a.name} ({'/'.join(a.formats)})" for a in ARCHITECTURES)
        super().__init__(
            f"{path}: no reference forward pass for architecture {arch!r} in a {fmt} file; "
            f"supported: {listed}")

    @classmethod
    def exact(cls, path: str, arch: str) -> "GGScopeError":
        return GGScopeError(f"{path}: --exact: the {arch} forward pass computes only llama.cpp's "
                            "arithmetic; the exact mode is there for the transformer decoders "
                            "(llama, qwen2/3, gemma2/3, phi3, ...)")


class WeightError(GGScopeError):
    """A weight the forward pass needs is missing, misshapen or cannot be decoded."""


class TokenError(GGScopeError):
    """A token id outside the vocabulary, or an empty prompt."""


def check_tokens(tokens: list[int], n_vocab: int) -> list[int]:
    """``tokens`` as plain ints after checking each is a valid id; ``TokenError`` if not."""
    try:
        ids = [int(t) for t in tokens]
    except (TypeError, ValueError) as exc:
        raise TokenError(f"token ids must be integers: {exc}") from None
    if not ids:
        raise TokenError("no tokens to run: the prompt is empty")
    bad = [t for t in ids if not 0 <= t < n_vocab]
    if bad:
        raise TokenError(f"token id {bad[0]} is outside the vocabulary (0..{n_vocab - 1})")
    return ids


def supported() -> list[str]:
    """Names of the architectures that have a forward pass, in table order."""
    return [a.name for a in ARCHITECTURES]


def _rwkv_cpp_arch(model: "ModelFile") -> str:
    """"rwkv" + the version: the parser's metadata, else rwkv.cpp's own rule."""
    version = model.metadata.get("rwkv_cpp.arch_version")
    if isinstance(version, (tuple, list)):
        version = ".".join(str(v) for v in version)
    if version is None:
        version = arch_version((t.name, t.shape) for t in model.tensors)
    text = str(version).lower().removeprefix("rwkv").removeprefix("v").strip()
    major, _, minor = text.partition(".")
    if major in ("4", "6", "7") and minor in ("", "0"):
        return f"rwkv{major}"
    return f"rwkv{text}"


# Early files name no architecture; their first tensor names tell (ggml's examples).
_LEGACY_TENSOR_ARCH = {names["token_embd.weight"]: arch for arch, names in LEGACY_NAMES.items()}


def architecture(model: "ModelFile") -> str:
    """The architecture name of a parsed file, as ``ARCHITECTURES`` spells it."""
    if model.format == "rwkv.cpp":
        return _rwkv_cpp_arch(model)
    for key in ("general.architecture", f"{model.format}.architecture"):
        value = model.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    if model.format in LEGACY_FORMATS:
        names = {t.name for t in model.tensors}
        for tensor, arch in _LEGACY_TENSOR_ARCH.items():
            if tensor in names:
                return arch
    return "unknown"


def module_for(model: "ModelFile") -> ModuleType:
    """The forward module for ``model``; ``UnsupportedArchitecture`` when there is none."""
    arch = architecture(model)
    entry = _BY_NAME.get(arch)
    if entry is None or model.format not in entry.formats:
        raise UnsupportedArchitecture(model.path, arch, model.format)
    return importlib.import_module(f"{__name__}.{entry.module}")


def load_weights(model: "ModelFile", exact: bool = False) -> tuple[ModuleType, Any]:
    """``(module, weights)`` for ``model``; ``exact`` asks for the dequantized model without
    llama.cpp's rounding (the transformer decoders have it; another module is refused)."""
    module = module_for(model)
    if not exact:
        return module, module.load(model)
    if "exact" not in inspect.signature(module.load).parameters:
        raise UnsupportedArchitecture.exact(model.path, architecture(model))
    return module, module.load(model, exact=True)


def run(model: "ModelFile", tokens: list[int], state: Any = None) -> tuple[np.ndarray, Any]:
    """Load ``model``'s weights and feed ``tokens``; the logits after the last token."""
    module = module_for(model)
    return module.forward(module.load(model), tokens, state)


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _byteorder(info) -> str:
    return getattr(info.file, "endian", "little") or "little"


class WeightMapper:
    """Maps tensor names of one file to float32 arrays, checking names and shapes.

    ``take(name, shape)`` wants ``shape`` in numpy order (ggml's ``ne`` reversed) and
    accepts a stored tensor whose dimensions equal it once size-1 axes are dropped
    (converters disagree on those: rwkv.cpp writes v7 ``w0`` as ne [C, 1, 1]).  The
    array comes back as the one float32 array the compiled decoders filled
    (``loading.decode``: it outlives the file; no second copy is made) reshaped to
    exactly ``shape``.  ``packed(name, shape)`` checks the same and keeps the tensor in
    its encoding instead (``matmul.Packed``), for the matrices a load does not expand.
    """

    # True: matrices come back tagged with the activation rounding ggml-cpu applies
    # before multiplying by them (``matmul.typed``), so ``ops.linear`` computes what
    # llama.cpp computes; False (the --exact model): plain float32.
    typed = False

    def __init__(self, model: "ModelFile", arch: str, typed: bool = False) -> None:
        self.model = model
        self.arch = arch
        self.typed = typed

    def has(self, name: str) -> bool:
        try:
            self.model.tensor(name)
        except KeyError:
            return False
        return True

    def ne(self, name: str) -> tuple[int, ...]:
        """The stored ggml shape of ``name`` (used to read head counts and widths)."""
        return tuple(self._info(name).shape)

    def heads(self) -> tuple[int, int]:
        """``(n_head, head_size)`` of an RWKV v5+ file, by rwkv.cpp's rule (rwkv_arch)."""
        version = self.arch.removeprefix("rwkv")
        geometry = head_geometry(((t.name, t.shape) for t in self.model.tensors), version)
        if geometry is None:
            raise WeightError(
                f"{self.model.path}: cannot work out the {self.arch} head count and size "
                f"(rwkv.cpp reads them from blocks.0.att.time_decay or blocks.0.att.r_k "
                f"and blocks.0.ln1.weight)")
        return geometry

    def stored_name(self, name: str) -> str:
        """``name`` as the file spells it (the GGUF RWKV mapper renames)."""
        return name

    def blocks(self, claimed: int, first: Callable[[int], str], key: str) -> int:
        """``claimed`` -- a block count the metadata states -- once the file can back it:
        at least one tensor per block, and the last block's ``first(claimed - 1)``
        present (a gap before it stops the module's own loop at the missing tensor).
        Else ``WeightError`` naming the first block without its tensor, as the real
        loaders do ("missing tensor"), raised before anything is sized by the count.
        The work is bounded by the number of tensors in the file, never by the claim."""
        n_tensors = len(self.model.tensors)
        if 0 <= claimed <= n_tensors and (claimed == 0 or self.has(first(claimed - 1))):
            return claimed
        present = 0
        while present < min(claimed, n_tensors) and self.has(first(present)):
            present += 1
        raise WeightError(
            f"{self.model.path}: {key} is {claimed}, but the file holds the tensors of "
            f"{present} blocks: {self.arch} needs tensor {self.stored_name(first(present))!r}, "
            f"which the file does not have (the real loaders refuse it: 'missing tensor')")

    def _info(self, name: str):
        try:
            return self.model.tensor(name)
        except KeyError:
            damage = self.model.damage
            why = "" if damage is None else (
                f" (the file is damaged at offset {damage.start} in {damage.path}: "
                f"{damage.error}; nothing after that was read)")
            raise WeightError(
                f"{self.model.path}: {self.arch} needs tensor {name!r}, which the file "
                f"does not have{why}") from None

    def _shaped(self, name: str, shape: tuple[int, ...]):
        info = self._info(name)
        stored = tuple(reversed(tuple(info.shape)))
        if _squeezed(stored) != _squeezed(shape):
            raise WeightError(
                f"{self.model.path}: tensor {name!r} has numpy shape {stored} "
                f"(ggml ne {list(info.shape)}), {self.arch} expects {shape}")
        return info

    def _decoding(self, name: str, info, how: Callable[[Any], Any]) -> Any:
        """``how(info)`` with its failures as one-line ``WeightError``s naming the tensor."""
        try:
            return how(info)
        except FileChanged:                 # the file on disk, not this tensor: one line, exit 2
            raise
        except (GGScopeError, ValueError, KeyError, NotImplementedError, OSError) as exc:
            raise WeightError(
                f"{self.model.path}: tensor {name!r} ({info.type}) could not be "
                f"decoded: {exc}") from None

    def packed(self, name: str, shape: tuple[int, ...], rounded: bool = True,
               slot: np.ndarray | None = None):
        """``name`` checked as ``take`` checks it but left in the file's encoding
        (``matmul.Packed``: its blocks read into memory, multiplied from them where ggml's
        kernels can, else decoded on each use -- or once, into ``slot``, when given)."""
        from ggscope.forward.loading import read_blocks  # lazy: the loading engine only when used
        from ggscope.forward.matmul import Packed  # lazy: the loading engine only when used
        info = self._shaped(name, shape)
        blocks = self._decoding(name, info, read_blocks)
        return Packed(blocks, info.layout, info.type, shape, _byteorder(info), rounded, slot)

    def take(self, name: str, shape: tuple[int, ...], out: np.ndarray | None = None) -> np.ndarray:
        from ggscope.forward import loading  # lazy: the loading engine only when used
        info = self._shaped(name, shape)
        data = self._decoding(name, info, lambda i: loading.decode(i, out) if out is not None
                              else loading.decode(i))
        # decode() fills one fresh float32 array through the compiled decoders, never a
        # view of the file's memory map, so it outlives the file without a second copy.
        if data.size != int(np.prod(shape, dtype=np.int64)):
            raise WeightError(
                f"{self.model.path}: tensor {name!r} decoded to {data.size} values, "
                f"expected {int(np.prod(shape))}")
        data = data.reshape(shape)
        if not self.typed or data.ndim < 2:
            return data
        raw = info.raw() if info.type in ("Q4_1", "Q5_1") and data.ndim == 2 else None
        try:
            return _typed(data, info.type, raw)
        except ValueError as exc:
            raise WeightError(f"{self.model.path}: tensor {name!r} ({info.type}): its blocks do not "
                              f"fit its shape: {exc}") from None
